package cli

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/internal/run"
	runsched "github.com/plan-dev/plan/internal/run/schedule"
)

// defaultSwitchDelay is --switch-delay's default (internal/run/schedule.DefaultSwitchDelay
// says why 60 s).
const defaultSwitchDelay = runsched.DefaultSwitchDelay

// runSimulateSchedule is `plan simulate SCHEDULE --trace day.csv` (internal/run/schedule);
// data are the schedule file's bytes, read once by pickSimulateMode.
func runSimulateSchedule(cmd *cobra.Command, app *App, o *simulateOptions, path string, data []byte) error {
	return runsched.Run(cmdContext(cmd), runsched.Args{Systems: app.Systems, Path: path, Data: data, Trace: o.trace,
		Seed: o.seed, Jitter: o.jitter, Policy: o.policy, Params: o.params, Parallel: o.parallel,
		Report: o.report, ReportSet: cmd.Flags().Changed("report"), SwitchDelay: o.switchDelay, SwitchAhead: o.switchAhead, Windows: o.windows}, &app.IO)
}

// scheduleOnly are simulate's flags for a schedule alone; scheduleToo those that apply to a
// schedule as to a plan (the rest sweep load factors of one plan).
var (
	scheduleOnly = []string{"switch-delay", "switch-ahead", "windows"}
	scheduleToo  = []string{"trace", "seed", "policy", "param", "jitter", "parallel", "report"}
)

// scheduleFlags rejects a flag given that does not apply to the argument: a load sweep's
// flag with a schedule, a schedule's with a plan.
func scheduleFlags(cmd *cobra.Command, path string, isSchedule bool) error {
	var err error
	fl, inherited := cmd.Flags(), cmd.InheritedFlags()
	fl.Visit(func(f *pflag.Flag) {
		only := slices.Contains(scheduleOnly, f.Name)
		switch {
		case err != nil:
		case isSchedule && !only && !slices.Contains(scheduleToo, f.Name) && inherited.Lookup(f.Name) == nil:
			err = run.UsageErrorf("--%s: does not apply to the schedule %s (it takes --%s)", f.Name, path, strings.Join(append(slices.Clone(scheduleToo), scheduleOnly...), ", --"))
		case !isSchedule && only:
			err = run.UsageErrorf("--%s: applies to a schedule (plan solve --trace --window), not to the plan %s", f.Name, path)
		}
	})
	return err
}
