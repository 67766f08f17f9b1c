package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/bench"
	"github.com/plan-dev/plan/bench/solverbench"
	"github.com/plan-dev/plan/bench/speedbench"
	"github.com/plan-dev/plan/bench/vllmruns"
	"github.com/plan-dev/plan/formats"
	progressline "github.com/plan-dev/plan/internal/base/progress"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/run/replay"
	"github.com/plan-dev/plan/sim"
)

// newBenchCmd builds `plan bench` with one subcommand per bench of every registered system.
func newBenchCmd(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Reproduce a paper's evaluation side by side in the simulator",
		Long: `bench runs one system's paper evaluation on stand-in inputs in the simulator and prints
the paper's table next to ours; bench solver times the in-process HiGHS on each solver engine;
bench speed prints the project's speed ratios (simulator scaling, solver, serve) in one table.
Every benchmark has --quick (a reduced run that finishes in under two minutes) and --report DIR.`,
		Example: `  plan bench ppipe --quick
  plan bench pard --quick
  plan bench solver --quick
  plan bench speed --quick
  plan bench ppipe --report ppipe-report`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run.UsageErrorf("plan bench needs a benchmark: %s", strings.Join(benchNames(cmd), ", "))
		},
	}
	for _, s := range app.Systems.Systems() {
		if b, ok := s.(system.Benching); ok {
			for _, nb := range b.Benches() {
				cmd.AddCommand(newBenchSubcommand(app, nb))
			}
		}
	}
	for _, nb := range toolBenches {
		cmd.AddCommand(newBenchSubcommand(app, withReplay(app, nb)))
	}
	cmd.AddCommand(newBenchCorpusCmd(app))
	return cmd
}

// withReplay hands the real-runs check the one-engine replay of `plan simulate --llm`,
// which sits above the benches.
func withReplay(app *App, nb func() benchapi.Bench) func() benchapi.Bench {
	return func() benchapi.Bench {
		b := nb()
		if v, ok := b.(*vllmruns.Command); ok {
			v.Replay = func(_ context.Context, prof formats.LLMProfile, name string, t *formats.Trace) ([]sim.RequestRecord, error) {
				return replay.Records(app.Systems, prof, name, t)
			}
		}
		return b
	}
}

// toolBenches are the benches of plan's own machinery rather than of one system.
var toolBenches = []func() benchapi.Bench{
	func() benchapi.Bench { return &vllmruns.Command{} },
	func() benchapi.Bench { return &solverbench.Command{} },
	func() benchapi.Bench { return &speedbench.Command{} },
}

func newBenchSubcommand(app *App, nb func() benchapi.Bench) *cobra.Command {
	b := nb()
	h := b.Help()
	cmd := &cobra.Command{
		Use:     h.Name,
		Short:   h.Short,
		Long:    h.Long,
		Example: h.Example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// On a terminal the bench's status line shows at once and follows its progress;
			// piped, one summary line when it ends; --quiet, nothing (internal/base/progress).
			task := progressline.NewStatus(app.Err, app.Quiet, "bench "+h.Name)
			progress := func(format string, a ...any) { task.Note(fmt.Sprintf(format, a...)) }
			infof := app.Infof
			if task != nil {
				// Info lines go above the status line on a terminal, as they are when piped.
				infof = func(format string, a ...any) { task.Println(fmt.Sprintf(format, a...)) }
			}
			// Tables and lines on stdout go above the status line, never onto its row.
			out := task.Above(app.Out)
			table := func(h []string, rows [][]string) { run.WriteTable(out, h, rows) }
			writeJSON := func(v any) error { io := app.IO; io.Out = out; return io.WriteJSON(v) }
			env := benchapi.Env{Out: out, Err: app.Err, JSON: app.JSONOutput(), Infof: infof, Table: table, WriteJSON: writeJSON, Progress: progress,
				Sections: app.Systems.Sections()}
			err := b.Run(cmd.Context(), env)
			if err != nil {
				task.Clear()
			} else {
				task.Finish("done")
			}
			if errors.Is(err, bench.ErrUsage) {
				return run.UsageError(err)
			}
			return err
		},
	}
	b.Flags(cmd.Flags())
	return cmd
}

func benchNames(cmd *cobra.Command) []string {
	var n []string
	for _, c := range cmd.Commands() {
		if c.Name() != "help" && c.Name() != "completion" {
			n = append(n, c.Name())
		}
	}
	return n
}
