// Package solverbench is `plan bench solver`: the in-process HiGHS on model files, on each
// solver engine, for the speed targets of the solver (time per simplex iteration against
// native HiGHS, time to a MIP gap). It is not one system's evaluation, so the CLI lists it
// beside the systems' benches rather than in the system registry.
package solverbench

import (
	"bytes"
	"compress/gzip"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/bench"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/base/quantile"
	"github.com/plan-dev/plan/internal/base/tables"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
	"github.com/plan-dev/plan/solver"
)

// models are the MILPs the PPipe planner solves last (its full MILP), as PLAN_WRITE_LP wrote
// them: demo is `plan solve` on the embedded demo; hc2-g1 is the hard instance "3 models,
// L4+T4, P≤3" (planner/ppipe/testdata/hc2-g1, --max-partitions 3), written by the cut-off
// phase (a "cutoff" row: objective ≥ incumbent·1.001), so it ends infeasible.
//
//go:embed models/*.lp.gz
var models embed.FS

// engines are the solver engines in the order the table lists them.
var engines = []string{"native", "wazero"}

// Command is `plan bench solver`.
type Command struct {
	quick     bool
	report    string
	files     []string
	engines   []string
	milp      bool
	presolve  string
	reps      int
	timeLimit time.Duration
	gap       float64
	noHeur    bool
	highsOpts []string
	highsLog  bool
}

// Help implements benchapi.Bench.
func (o *Command) Help() benchapi.Help {
	return benchapi.Help{
		Name:  "solver",
		Short: "HiGHS on model files per solver engine: time per simplex iteration, time to a MIP gap",
		Long: `Solves model files (LP or MPS) with the in-process HiGHS on each solver engine (native:
the wasm translated to C; wazero: the wasm in Go), one thread, and prints the status,
objective, simplex iterations, nodes, gap, run time (median of --reps runs) and time per
simplex iteration, with each engine's time as a multiple of the native engine's.

By default it solves the LP relaxation with presolve off: the simplex then does the same
iterations on every engine, and on native HiGHS given the same file and options
(scripts/highs-reference.sh builds one from Debian's source), so time per iteration compares
engines per unit of work. --milp solves the MILP to --gap within --time-limit instead;
--no-heuristics turns HiGHS's primal heuristics off, as the PPipe planner does in the phase
hc2-g1 comes from (the full MILP cut off at its incumbent plus the gap: infeasible is the
proof that the incumbent is within the gap).

Without --lp it runs two embedded models, the PPipe planner's full MILP for the embedded demo
and for the 3-model L4+T4 instance hc2-g1. Write your own with PLAN_WRITE_LP=DIR plan solve ...

--highs-option name=value (repeatable) sets any further HiGHS option, after the ones above,
for trying settings on a model (HiGHS parses the value by the option's type and refuses an
unknown name: exit 2); --highs-log prints HiGHS's own log of every run on stderr.

--quick: one run per engine.`,
		Example: `  plan bench solver --quick
  PLAN_WRITE_LP=lps plan solve --slo 200ms && plan bench solver --lp "$(echo lps/ppipe-*.lp | tr ' ' ,)"
  plan bench solver --milp --gap 0.001 --time-limit 60s --engine native
  plan bench solver --milp --no-heuristics --engine native  # hc2-g1 as the planner runs it
  # the same search under another random seed, with HiGHS's log
  plan bench solver --milp --no-heuristics --engine native --quick --highs-option random_seed=3 --highs-log`,
	}
}

// Flags implements benchapi.Bench.
func (o *Command) Flags(f *pflag.FlagSet) {
	f.BoolVar(&o.quick, "quick", false, "one run per engine and model")
	f.StringVar(&o.report, "report", "", "directory for bench.json")
	f.StringSliceVar(&o.files, "lp", nil, "model files, .lp or .mps (default: the embedded demo and hc2-g1 MILPs)")
	f.StringSliceVar(&o.engines, "engine", nil, "engines: native, wazero (default: every engine this binary has)")
	f.BoolVar(&o.milp, "milp", false, "solve the MILP to --gap within --time-limit instead of the LP relaxation")
	f.StringVar(&o.presolve, "presolve", "", "HiGHS presolve: on, off or choose (default off for the relaxation, HiGHS's own for --milp)")
	f.IntVar(&o.reps, "reps", 0, "runs per engine and model; the table shows the median (default 3, quick 1)")
	f.DurationVar(&o.timeLimit, "time-limit", 60*time.Second, "time limit of a --milp run")
	f.Float64Var(&o.gap, "gap", 0.001, "relative MIP gap of a --milp run")
	f.BoolVar(&o.noHeur, "no-heuristics", false, "HiGHS's primal heuristics off, as the PPipe planner runs its cut-off phase")
	f.StringArrayVar(&o.highsOpts, "highs-option", nil, "a further HiGHS option as name=value, set last (repeatable)")
	f.BoolVar(&o.highsLog, "highs-log", false, "print HiGHS's log of every run on stderr")
}

// Model is one model file of the bench.
type Model struct {
	Name string `json:"name"`
	data []byte
}

// Row is one model on one engine.
type Row struct {
	Model      string    `json:"model"`
	Engine     string    `json:"engine"`
	Source     string    `json:"source"`
	Status     string    `json:"status"`
	Objective  float64   `json:"objective"`
	Gap        float64   `json:"gap"`
	Iterations int64     `json:"iterations"`
	Nodes      int64     `json:"nodes"`
	RunMs      []float64 `json:"run_ms"`
	// MedianMs is the median of RunMs; PerIterUs is MedianMs per simplex iteration, in µs.
	MedianMs  float64 `json:"median_ms"`
	PerIterUs float64 `json:"per_iteration_us"`
	// VsNative is MedianMs over the native engine's on the same model (0 without one).
	VsNative float64 `json:"vs_native,omitempty"`
}

// Result is the bench's output.
type Result struct {
	Relaxation bool    `json:"relaxation"`
	Presolve   string  `json:"presolve"`
	TimeLimitS float64 `json:"time_limit_s,omitempty"`
	Gap        float64 `json:"gap,omitempty"`
	Reps       int     `json:"reps"`
	// HighsOptions are --highs-option's settings, so a report says what it ran with.
	HighsOptions []string `json:"highs_options,omitempty"`
	Rows         []Row    `json:"rows"`
}

// Run implements benchapi.Bench.
func (o *Command) Run(ctx context.Context, env benchapi.Env) error {
	if err := bench.PrepareReport(o.report); err != nil {
		return err
	}
	reps := o.reps
	switch {
	case reps < 0:
		return bench.Usagef("--reps %d: must be >= 0", reps)
	case reps == 0 && o.quick:
		reps = 1
	case reps == 0:
		reps = 3
	}
	if o.milp && (o.timeLimit <= 0 || o.gap < 0) {
		return bench.Usagef("--time-limit %v and --gap %v: want a positive time limit and a gap >= 0", o.timeLimit, o.gap)
	}
	presolve := o.presolve
	if presolve == "" && !o.milp {
		presolve = "off"
	}
	if !slices.Contains([]string{"", "on", "off", "choose"}, presolve) {
		return bench.Usagef("--presolve %q: must be on, off or choose", presolve)
	}
	for _, kv := range o.highsOpts {
		if _, _, err := solver.ParseHighsOption(kv); err != nil {
			return bench.Usagef("--highs-option %q: want name=value", kv)
		}
	}
	kinds, err := pickEngines(o.engines)
	if err != nil {
		return err
	}
	ms, err := loadModels(o.files)
	if err != nil {
		return err
	}
	opts := solver.FileOptions{Relax: !o.milp, Presolve: presolve, NoHeuristics: o.noHeur, HighsOptions: o.highsOpts}
	if o.highsLog {
		opts.Log = env.Err
	}
	res := &Result{Relaxation: !o.milp, Presolve: presolve, Reps: reps, HighsOptions: o.highsOpts}
	if o.milp {
		opts.TimeLimit, opts.RelGap = o.timeLimit, o.gap
		res.TimeLimitS, res.Gap = o.timeLimit.Seconds(), o.gap
	}
	for _, m := range ms {
		var native float64
		for _, kind := range kinds {
			opts.Engine = kind
			row, err := runModel(ctx, m, opts, reps)
			if errors.Is(err, solver.ErrBackendUnavailable) && len(o.engines) == 0 {
				env.Infof("bench solver: %s engine not in this binary: %v", kind, err)
				continue
			}
			if errors.Is(err, solver.ErrInvalidOption) {
				return bench.Usage(fmt.Errorf("--highs-option: %w", err))
			}
			if errors.Is(err, solver.ErrInvalidModel) {
				return bench.Usage(err)
			}
			if err != nil {
				return fmt.Errorf("%s on the %s engine: %w", m.Name, kind, err)
			}
			if kind == "native" {
				native = row.MedianMs
			}
			if native > 0 {
				row.VsNative = row.MedianMs / native
			}
			env.Infof("bench solver: %s on %s: %s, %.1f ms", m.Name, kind, row.Status, row.MedianMs)
			res.Rows = append(res.Rows, row)
		}
	}
	if len(res.Rows) == 0 {
		return fmt.Errorf("bench solver: no solver engine in this binary: %w", solver.ErrBackendUnavailable)
	}
	return bench.Finish(env, o.report, bench.Report[Result]{Kind: reportKind, Result: res}, res, func() { printResult(env, res) })
}

// pickEngines validates --engine (every engine when empty).
func pickEngines(want []string) ([]string, error) {
	if len(want) == 0 {
		return engines, nil
	}
	return bench.PickNamed(engines, func(s string) string { return s }, want, "engine")
}

// MaxModelBytes bounds an --lp model file, and its expansion when gzipped.
const MaxModelBytes = formats.MaxFileBytes

// loadModels reads the --lp files, or the embedded models.
func loadModels(files []string) ([]Model, error) {
	var ms []Model
	if len(files) == 0 {
		names, err := models.ReadDir("models")
		if err != nil {
			return nil, err
		}
		for _, e := range names {
			zr, err := models.Open(path.Join("models", e.Name()))
			if err != nil {
				return nil, err
			}
			data, err := gunzip(zr)
			if err != nil {
				return nil, fmt.Errorf("embedded model %s: %w", e.Name(), err)
			}
			ms = append(ms, Model{Name: strings.TrimSuffix(e.Name(), ".gz"), data: data})
		}
		return ms, nil
	}
	for _, f := range files {
		// The guarded reader of every file-taking flag: a FIFO blocked
		// forever, /dev/zero grew without bound.
		data, err := formats.ReadBytesLimit(f, MaxModelBytes)
		if err != nil {
			return nil, bench.Usagef("--lp %v", err)
		}
		if strings.HasSuffix(f, ".gz") {
			if data, err = gunzip(bytes.NewReader(data)); err != nil {
				return nil, bench.Usagef("--lp %s: %v", f, err)
			}
			f = strings.TrimSuffix(f, ".gz")
		}
		ms = append(ms, Model{Name: f, data: data})
	}
	return ms, nil
}

func gunzip(r io.Reader) ([]byte, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return formats.ReadAllLimit(zr, MaxModelBytes)
}

// runModel solves m reps times on one engine; the runs must agree on what they found.
func runModel(ctx context.Context, m Model, opts solver.FileOptions, reps int) (Row, error) {
	var row Row
	for i := 0; i < reps; i++ {
		r, err := solver.SolveFile(ctx, m.Name, m.data, opts)
		if err != nil {
			return row, err
		}
		if i == 0 {
			row = Row{Model: filepath.Base(m.Name), Engine: r.Engine, Source: r.Source, Status: r.Status,
				Objective: r.Objective, Gap: r.Gap, Iterations: r.Iterations, Nodes: r.Nodes}
		}
		row.RunMs = append(row.RunMs, float64(r.Run.Microseconds())/1e3)
	}
	row.MedianMs = quantile.Of(row.RunMs, 50)
	if row.Iterations > 0 {
		row.PerIterUs = 1e3 * row.MedianMs / float64(row.Iterations)
	}
	return row, nil
}

func printResult(env benchapi.Env, res *Result) {
	what := "LP relaxation, presolve " + res.Presolve
	if !res.Relaxation {
		what = fmt.Sprintf("MILP to gap %g within %gs", res.Gap, res.TimeLimitS)
		if res.Presolve != "" {
			what += ", presolve " + res.Presolve
		}
	}
	fmt.Fprintf(env.Out, "HiGHS on each engine (%s; one thread; run time: median of %d):\n", what, res.Reps)
	var rows [][]string
	for _, r := range res.Rows {
		vs := "-"
		if r.VsNative > 0 {
			vs = fmt.Sprintf("%.2f×", r.VsNative)
		}
		rows = append(rows, []string{r.Model, r.Engine, r.Status, fmt.Sprintf("%.10g", r.Objective),
			fmt.Sprint(r.Iterations), fmt.Sprint(r.Nodes), bench.Pct(r.Gap), fmt.Sprintf("%.1f", r.MedianMs),
			fmt.Sprintf("%.2f", r.PerIterUs), vs})
	}
	header := []string{"model", "engine", "status", "objective", "iterations", "nodes", "gap", "run ms", "µs/iter", "vs native"}
	env.Table(header, rows)
	tables.DashNote(env.Out, header, rows, map[string]string{"vs native": "no native run of the model to compare with (a build without the native engine)"})
}

const reportKind = "SolverBench"

// ReportKind implements benchapi.ReportReader.
func (o *Command) ReportKind() string { return reportKind }

// ReadReport implements benchapi.ReportReader.
func (o *Command) ReadReport(name string, data []byte) ([]byte, error) {
	return bench.RereadResult[Result](name, data, reportKind)
}

// EmbeddedModels are the bench's embedded models (demo and hc2-g1), for `plan bench speed`.
func EmbeddedModels() ([]Model, error) { return loadModels(nil) }

// Data is the model file's contents (LP format).
func (m Model) Data() []byte { return m.data }

// Measure solves m reps times with opts and reports the median run, as the bench's rows do.
func Measure(ctx context.Context, m Model, opts solver.FileOptions, reps int) (Row, error) {
	return runModel(ctx, m, opts, reps)
}
