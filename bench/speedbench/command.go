// Package speedbench is `plan bench speed`: the project's speed ratios measured in one
// process on the machine at hand, printed as one table so anyone can see where the project
// stands — the simulator's scaling per policy (events per CPU-second at 16× the GPUs against
// 1×, the cases of every data-plane package's BenchmarkSimScale, sim/simscale), the solver's
// native engine against native HiGHS per simplex iteration and its time to a 0.1% MIP gap on
// hc2-g1 (bench/solverbench), and `plan serve` against the bare net/http floor
// (serve/load.FloorHandler: its max in-SLO rate and CPU per request). A ratio whose reference
// is missing on this machine is reported as such (met false), never invented. Like every
// bench it is not one system's evaluation, so the CLI lists it beside the systems' benches.
package speedbench

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/bench"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
)

// Command is `plan bench speed`.
type Command struct {
	quick    bool
	report   string
	measures []string
	// Hidden knobs for the in-process test (tiny runs): the simulator's scale factor and
	// the serve rates and window.
	scale       int
	serveRates  []int
	serveWindow time.Duration
}

// Help implements benchapi.Bench.
func (o *Command) Help() benchapi.Help {
	return benchapi.Help{
		Name:  "speed",
		Short: "The project's speed ratios on this machine, in one table: simulator scaling, solver, serve",
		Long: `Measures the project's speed ratios in one process on the machine at hand and prints one
table: measure, ours, the floor or peer it is compared with, the ratio, the target and
whether the target is met.

  sim-POLICY   simulator scaling: events per CPU-second at 16× the GPUs (workers,
               instances) against 1×, on the cases of each data-plane package's
               BenchmarkSimScale (PPipe, PARD, QLM, CascadeServe, cocktail+, DyOrc),
               in rounds of one 16× run between 1× runs of about its CPU time,
               each run timed with the garbage collector held off (the note gives
               each side's bytes allocated per event, which the collector's share
               follows); target >= 0.9 (the simulator's cost grows linearly with N).
               The 16× side's state outgrows a small per-core L2 first, so the
               header names the caches: compare machines only where they agree.
  solver-lp-*  the native engine's time per simplex iteration against native HiGHS on
               the bundled LP relaxations (bench solver's models, presolve off, one
               thread), each side's fastest of 15 solves (7 --quick), the two
               alternated; target <= 1.10. Native HiGHS is the lpbench binary that
               scripts/highs-reference.sh builds (or $PLAN_HIGHS_REFERENCE); without it
               the row says "reference not available" and is not met.
  solver-milp-hc2-g1
               CPU-seconds of the native engine to solve the hc2-g1 MILP to a 0.1% gap
               on one thread; target <= 8 (an absolute budget: no reference). The model
               is the planner's cut-off phase (objective >= incumbent x 1.001), run as
               the planner runs it (primal heuristics off) plus the cut-off as HiGHS's
               objective_bound: infeasible is the proof.
  serve-rate   the highest offered rate (of a fixed ladder) that plan serve answers with
               >= 99% attainment on testdata/serve/wide.json (32 emulated L4s, 2 ms, SLO
               50 ms: the GPUs never bind) against the net/http floor; target >= 1.0.
  serve-cpu    CPU per request at the highest rate both sustain, against the floor;
               target <= 1.1. Both servers run in this process on 127.0.0.1, so CPU is
               the process's (server and load generator): the generator's share is the
               same on both sides and dilutes the ratio toward 1 (serve/load/bench-serve.sh
               measures the server alone, out of process).

Ratios are timings: run it on an otherwise idle machine; the CPU-time ratios hold up
better than wall-clock ones on a shared one. --quick shortens every run (about 1-2 minutes on
2 cores); --measure runs some rows only (names or the groups sim, solver, serve).`,
		Example: `  plan bench speed --quick
  plan bench speed --measure sim
  plan bench speed --measure sim-ppipe,serve-rate -O json
  plan bench speed --quick --report speed-report`,
	}
}

// Flags implements benchapi.Bench.
func (o *Command) Flags(f *pflag.FlagSet) {
	f.BoolVar(&o.quick, "quick", false, "shorter runs (about 1-2 minutes on 2 cores)")
	f.StringVar(&o.report, "report", "", "directory for bench.json")
	f.StringSliceVar(&o.measures, "measure", nil, "rows to run: "+strings.Join(measureNames(), ", ")+", or a group sim, solver, serve (default: all)")
	f.IntVar(&o.scale, "scale", 16, "the simulator's scale factor against 1×")
	f.IntSliceVar(&o.serveRates, "serve-rates", nil, "the serve rows' rate ladder, req/s")
	f.DurationVar(&o.serveWindow, "serve-window", 0, "the serve rows' window per rate")
	for _, h := range []string{"scale", "serve-rates", "serve-window"} {
		_ = f.MarkHidden(h)
	}
}

// Row is one measure: ours against its reference (the floor or peer), their ratio and the
// target the ratio must meet. Reference and Ratio are null where the reference is not
// available on this machine; Ours is null where our side cannot run here.
type Row struct {
	Measure   string   `json:"measure"`
	Unit      string   `json:"unit"`
	Ours      *float64 `json:"ours"`
	Reference *float64 `json:"reference"`
	Ratio     *float64 `json:"ratio"`
	// Target is the ratio's bound, ">= 0.9" or "<= 1.1".
	Target string `json:"target"`
	Met    bool   `json:"met"`
	// RefName names the reference (e.g. "1× (16 GPUs)", "net/http floor"); Note says how
	// the row was measured or why a side is missing.
	RefName string `json:"reference_name"`
	Note    string `json:"note,omitempty"`
}

// Result is the bench's output.
type Result struct {
	Quick bool `json:"quick"`
	CPUs  int  `json:"cpus"`
	// CPU and Caches name the processor and its data caches ("L1d 32K, L2 512K, L3
	// 32768K"): the sim rows' 16× side outgrows a small per-core L2 first, so the same code
	// reads 0.85 with a 2 MiB L2 and 0.5-0.6 with 512 KiB (bench/RESULTS.md); compare rows
	// across machines only where these agree.
	CPU     string    `json:"cpu,omitempty"`
	Caches  string    `json:"caches,omitempty"`
	LoadAvg string    `json:"load_average,omitempty"`
	Started time.Time `json:"started"`
	Rows    []Row     `json:"rows"`
}

// target is a bound on a ratio.
type target struct {
	atLeast bool
	bound   float64
}

func (t target) String() string {
	if t.atLeast {
		return fmt.Sprintf(">= %g", t.bound)
	}
	return fmt.Sprintf("<= %g", t.bound)
}

// row fills a Row from ours and ref; ref <= 0 or NaN means no reference.
func row(name, unit, refName string, ours, ref float64, t target, note string) Row {
	r := Row{Measure: name, Unit: unit, Target: t.String(), RefName: refName, Note: note}
	if ok(ours) {
		r.Ours = &ours
	}
	if ok(ref) {
		r.Reference = &ref
	}
	if r.Ours != nil && r.Reference != nil {
		q := ours / ref
		r.Ratio = &q
		r.Met = (t.atLeast && q >= t.bound) || (!t.atLeast && q <= t.bound)
	}
	return r
}

func ok(x float64) bool { return x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }

// measure is one row's runner.
type measure struct {
	name, group string
	run         func(ctx context.Context, o *Command, env benchapi.Env) (Row, error)
}

func measures() []measure {
	var ms []measure
	ms = append(ms, simMeasures()...)
	ms = append(ms, solverMeasures()...)
	return append(ms, serveMeasures()...)
}

func measureNames() []string {
	var n []string
	for _, m := range measures() {
		n = append(n, m.name)
	}
	return n
}

// pick selects the --measure rows: names or groups, each at most once, in table order.
func pick(want []string) ([]measure, error) {
	all := measures()
	if len(want) == 0 {
		return all, nil
	}
	on := map[string]bool{}
	for _, w := range want {
		w = strings.ToLower(strings.TrimSpace(w))
		found := false
		for _, m := range all {
			if m.name == w || m.group == w {
				on[m.name], found = true, true
			}
		}
		if !found {
			return nil, bench.Usagef("--measure %q: must be one of %s, or a group sim, solver, serve", w, strings.Join(measureNames(), ", "))
		}
	}
	var out []measure
	for _, m := range all {
		if on[m.name] {
			out = append(out, m)
		}
	}
	return out, nil
}

// Run implements benchapi.Bench.
func (o *Command) Run(ctx context.Context, env benchapi.Env) error {
	if err := bench.PrepareReport(o.report); err != nil {
		return err
	}
	if o.scale < 2 {
		return bench.Usagef("--scale %d: must be >= 2", o.scale)
	}
	for _, r := range o.serveRates {
		if r <= 0 {
			return bench.Usagef("--serve-rates %d: rates must be > 0", r)
		}
	}
	if o.serveWindow < 0 {
		return bench.Usagef("--serve-window %v: must be >= 0", o.serveWindow)
	}
	ms, err := pick(o.measures)
	if err != nil {
		return err
	}
	res := &Result{Quick: o.quick, CPUs: runtime.NumCPU(), CPU: cpuModel(), Caches: dataCaches(), LoadAvg: loadAvg(), Started: time.Now().UTC()}
	for _, m := range ms {
		if err := ctx.Err(); err != nil {
			return err
		}
		env.Progressf("bench speed: %s", m.name)
		r, err := m.run(ctx, o, env)
		if err != nil {
			return fmt.Errorf("bench speed: %s: %w", m.name, err)
		}
		env.Infof("bench speed: %s: %s", m.name, ratioText(r))
		res.Rows = append(res.Rows, r)
	}
	return bench.Finish(env, o.report, bench.Report[Result]{Kind: "SpeedBench", Result: res}, res.Rows, func() { printResult(env, res) })
}

// loadAvg is /proc/loadavg's first three fields ("" where there is none).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func num(p *float64) string {
	switch {
	case p == nil:
		return "-"
	case *p >= 1000:
		return fmt.Sprintf("%.0f", *p)
	case *p >= 10:
		return fmt.Sprintf("%.1f", *p)
	}
	return fmt.Sprintf("%.3g", *p)
}

func ratioText(r Row) string {
	if r.Ratio == nil {
		return "no ratio (" + r.Note + ")"
	}
	return fmt.Sprintf("%.3f (target %s)", *r.Ratio, r.Target)
}

func printResult(env benchapi.Env, res *Result) {
	what := "full"
	if res.Quick {
		what = "quick"
	}
	machine := ""
	if m := strings.Trim(strings.Join([]string{res.CPU, res.Caches}, "; "), "; "); m != "" {
		machine = " (" + m + ")"
	}
	fmt.Fprintf(env.Out, "Speed ratios (%s run) on %d CPUs%s, load average %s:\n", what, res.CPUs, machine, res.LoadAvg)
	var rows [][]string
	for _, r := range res.Rows {
		met := "no"
		if r.Met {
			met = "yes"
		}
		ratio := "-"
		if r.Ratio != nil {
			ratio = fmt.Sprintf("%.3f", *r.Ratio)
		}
		rows = append(rows, []string{r.Measure, num(r.Ours) + " " + r.Unit, num(r.Reference) + " " + r.RefName, ratio, r.Target, met})
	}
	env.Table([]string{"measure", "ours", "floor/peer", "ratio", "target", "met"}, rows)
	for _, r := range res.Rows {
		if r.Note != "" {
			fmt.Fprintf(env.Out, "  %s: %s\n", r.Measure, r.Note)
		}
	}
}
