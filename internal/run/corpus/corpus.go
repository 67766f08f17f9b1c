// Package corpus is `plan bench ppipe-corpus`: generated real-shaped PPipe cases
// (planner/ppipe/corpus) each solved as `plan solve` solves them and, where a plan is
// written, checked as `plan check` checks it. It holds the property every solve must have on
// inputs nobody wrote by hand: the plan the solver finds is written (exit 0) or refused with
// a reason (exit 2) — never a panic, never exit 1 — and every written plan deploys,
// simulates and passes check. A case that breaks it is reported with the command that
// reproduces it.
package corpus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	gen "github.com/plan-dev/plan/planner/ppipe/corpus"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/run/check"
	"github.com/plan-dev/plan/internal/run/solve"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/sim"
)

// Options are the run's settings.
type Options struct {
	// Systems is the system registry.
	Systems *systems.Registry
	// Seed and First, Cases pick the cases: gen.Generate(Seed, First) onwards.
	Seed  uint64
	First int
	Cases int
	// Authors runs the corpus of the authors' own set-up (gen.Authors: three-model groups
	// on 25 + 75 GPUs, SLO 5× the L4 latency, their flags) instead of the general one.
	// The regression cases (gen.Regressions) run after either.
	Authors bool
	// TimeLimit is each solve's --time-limit.
	TimeLimit time.Duration
	// Dir is where each case's files and plan are written (a folder per case).
	Dir string
	// Parallel is how many cases run at once (0: one per CPU).
	Parallel int
	// Optimum, when set, solves every case that wrote a plan again at a gap of OptimumGap
	// within this time limit: where that long run proves its optimum, the case's plan is
	// compared with it (Outcome.Optimum).
	Optimum time.Duration
	// Progress, when set, is told of each finished case.
	Progress func(done, total int, o *Outcome)
}

// OptimumGap is the gap the long-run solve of Options.Optimum is asked to prove; Short is
// how far below a better plan a case's objective may sit before it counts as short: the
// PPipe authors' Gurobi default MIPGap, which their reference plans were solved to.
const (
	OptimumGap = 1e-6
	Short      = 1e-4
)

// Optimum is the long-run solve of a case that wrote a plan.
type Optimum struct {
	// Objective is the long run's provenance.objective; Proven says its status is
	// optimal within OptimumGap, so Objective is the case's optimum.
	Objective float64 `json:"objective"`
	Proven    bool    `json:"proven"`
	// Share is the case's objective over the better of the two: 1 when the case's plan
	// is at least as good.
	Share   float64 `json:"share"`
	Seconds float64 `json:"seconds"`
	// Err is why the long run wrote no plan.
	Err string `json:"error,omitempty"`
}

// Outcome is one case's result.
type Outcome struct {
	Case     string `json:"case"`
	Describe string `json:"describe"`
	// SolveExit is plan solve's exit status (0 written, 1, 2 refused; -1 a panic).
	SolveExit int    `json:"solve_exit"`
	SolveErr  string `json:"solve_error,omitempty"`
	// CheckExit is plan check's on the written plan (-1 a panic; absent when none was
	// written).
	CheckExit *int   `json:"check_exit,omitempty"`
	CheckErr  string `json:"check_error,omitempty"`
	// Failed lists check's failing lines.
	Failed []string `json:"failed,omitempty"`
	// NoPlanInTime: the solver found no plan within the time limit (exit 1 by the CLI's
	// contract, planner.ErrNoSolution), or found one the limit left no time to check
	// (sim.ErrPredictionDeadline): no plan is written, so the property does not apply.
	NoPlanInTime bool `json:"no_plan_in_time,omitempty"`
	// Sustained is each model's sustained_rps over its planned rate in the written plan's
	// prediction: how far the planner's capacity model is from the simulation that judges it.
	Sustained []float64 `json:"sustained_share,omitempty"`
	// SolveSeconds is the solve command's wall time (inputs to written plan, prediction
	// included), which its --time-limit bounds.
	SolveSeconds float64 `json:"solve_seconds"`
	// Objective is the written plan's provenance.objective (the formulation's value).
	Objective float64 `json:"objective,omitempty"`
	// Optimum is the long-run comparison (Options.Optimum).
	Optimum *Optimum `json:"optimum,omitempty"`
	// Panic is a recovered panic's value and stack.
	Panic   string  `json:"panic,omitempty"`
	Seconds float64 `json:"seconds"`
	// Command reproduces the solve from the case's folder.
	Command string `json:"command"`
}

// Broken says whether the case breaks the property: a panic, exit 1 from solve, or a
// written plan that check does not pass.
func (o *Outcome) Broken() bool {
	return o.Panic != "" || (o.SolveExit == run.ExitFailure && !o.NoPlanInTime) || o.SolveExit < 0 || (o.CheckExit != nil && *o.CheckExit != 0)
}

// Report is the whole run.
type Report struct {
	Seed uint64 `json:"seed"`
	// Cases counts every case run: the generated ones, then the Regressions fixed cases
	// that once broke the property (gen.Regressions), last in Outcomes.
	Cases       int `json:"cases"`
	Regressions int `json:"regressions"`
	Written     int `json:"written"`
	Refused     int `json:"refused"`
	Exit1       int `json:"exit1"`
	// NoPlanInTime counts the solves that ended at the time limit without any plan.
	NoPlanInTime int `json:"no_plan_in_time"`
	Panics       int `json:"panics"`
	CheckFail    int `json:"check_failed"`
	// OverLimit counts the solves whose wall time passed their --time-limit by more than
	// 2% (a machine busy with other work stretches them; not a broken case).
	OverLimit int `json:"over_limit"`
	// OptimumKnown counts the written plans whose long-run solve proved its optimum
	// (Options.Optimum); ShortOfOptimum those more than Short below it, and
	// ShortOfBetter those more than Short below a better long-run plan not proven optimal.
	OptimumKnown   int `json:"optimum_known,omitempty"`
	ShortOfOptimum int `json:"short_of_optimum,omitempty"`
	ShortOfBetter  int `json:"short_of_better,omitempty"`
	// Reasons counts the refusals by the start of their message.
	Reasons  map[string]int `json:"refusal_reasons"`
	Outcomes []Outcome      `json:"outcomes"`
}

// SustainedShares are every written plan's models' sustained_rps over their planned rates,
// sorted.
func (r *Report) SustainedShares() []float64 {
	var xs []float64
	for _, o := range r.Outcomes {
		xs = append(xs, o.Sustained...)
	}
	slices.Sort(xs)
	return xs
}

// Broken is how many cases break the property.
func (r *Report) Broken() int { return r.Exit1 + r.Panics + r.CheckFail }

// Run generates and runs the cases.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Cases < 1 {
		return nil, fmt.Errorf("--cases: %d: must be >= 1", o.Cases)
	}
	if o.TimeLimit <= 0 {
		return nil, fmt.Errorf("--time-limit: %s: must be > 0", o.TimeLimit)
	}
	cases, regs := Cases(o)
	outs := make([]Outcome, len(cases))
	done := 0
	_, err := sim.Parallel(ctx, len(cases), o.Parallel, func(i int) error {
		outs[i] = runCase(ctx, o, cases[i])
		return nil
	}, func(i, finished int, _ error) {
		done = finished
		if o.Progress != nil {
			o.Progress(done, len(cases), &outs[i])
		}
	})
	if err != nil {
		return nil, err
	}
	rep := tally(outs, o)
	rep.Seed, rep.Regressions = o.Seed, regs
	return rep, nil
}

// tally counts the outcomes into a report.
func tally(outs []Outcome, o Options) *Report {
	rep := &Report{Cases: len(outs), Reasons: map[string]int{}, Outcomes: outs}
	for i := range outs {
		x := &outs[i]
		if x.SolveSeconds > 1.02*o.TimeLimit.Seconds() {
			rep.OverLimit++
		}
		switch {
		case x.Panic != "" || x.SolveExit < 0:
			rep.Panics++
		case x.NoPlanInTime:
			rep.NoPlanInTime++
		case x.SolveExit == run.ExitFailure:
			rep.Exit1++
		case x.SolveExit != 0:
			rep.Refused++
			rep.Reasons[reason(x.SolveErr)]++
		default:
			rep.Written++
			if x.CheckExit != nil && *x.CheckExit != 0 {
				rep.CheckFail++
			}
			if op := x.Optimum; op != nil && op.Err == "" {
				short := op.Share < 1-Short
				switch {
				case op.Proven:
					rep.OptimumKnown++
					if short {
						rep.ShortOfOptimum++
					}
				case short:
					rep.ShortOfBetter++
				}
			}
		}
	}
	return rep
}

// Cases are the cases a run solves, in order: o.Cases generated from o.First on (the
// authors' set-up's with o.Authors), then the regression cases, whose inputs once made
// solve write a plan contradicting itself (every run holds every change to them); regs is
// how many of them there are.
func Cases(o Options) (cases []gen.Case, regs int) {
	for i := range o.Cases {
		c := gen.Generate(o.Seed, o.First+i)
		if o.Authors {
			c = gen.Authors(o.Seed, o.First+i)
		}
		cases = append(cases, c)
	}
	r := gen.Regressions()
	return append(cases, r...), len(r)
}

// runCase writes the case's files, solves and checks; a panic anywhere is caught and
// recorded with its stack.
func runCase(ctx context.Context, o Options, c gen.Case) (out Outcome) {
	start := time.Now()
	out = Outcome{Case: c.Name, Describe: c.Describe}
	dir := filepath.Join(o.Dir, c.Name)
	defer func() {
		if p := recover(); p != nil {
			out.Panic = fmt.Sprintf("%v\n%s", p, debug.Stack())
			if out.CheckExit == nil && out.SolveExit == 0 && out.SolveErr == "" {
				out.SolveExit = -1
			} else if out.CheckExit == nil {
				ce := -1
				out.CheckExit = &ce
			}
		}
		out.Seconds = time.Since(start).Seconds()
		// Each case's outcome beside its files, so a long run can be read before it ends.
		if b, err := json.MarshalIndent(&out, "", "  "); err == nil {
			_ = os.WriteFile(filepath.Join(dir, "outcome.json"), append(b, '\n'), 0o644)
		}
	}()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		out.SolveExit, out.SolveErr = run.ExitUsage, err.Error()
		return out
	}
	files := map[string][]byte{"profile.json": c.Profile, "cluster.json": c.Cluster, "workload.json": c.Workload}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			out.SolveExit, out.SolveErr = run.ExitUsage, err.Error()
			return out
		}
	}
	flags := append([]gen.Flag(nil), c.Flags...)
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	var pf []solve.Flag
	cmd := fmt.Sprintf("plan solve --profile profile.json --cluster cluster.json --workload workload.json --deterministic --strategy %s --time-limit %s", c.Strategy, o.TimeLimit)
	for _, f := range flags {
		pf = append(pf, solve.Flag{Name: f.Name, Value: f.Value})
		cmd += fmt.Sprintf(" --%s=%s", f.Name, f.Value)
	}
	out.Command = cmd + " -o plan.json"
	planPath := filepath.Join(dir, "plan.json")
	var serr bytes.Buffer
	solveStart := time.Now()
	err := solveCase(ctx, o, c, dir, pf, solve.Args{TimeLimit: o.TimeLimit, Out: planPath}, &serr)
	out.SolveSeconds = time.Since(solveStart).Seconds()
	out.SolveExit, out.SolveErr = exitCode(err), strings.ReplaceAll(errText(err), dir+string(filepath.Separator), "")
	out.NoPlanInTime = errors.Is(err, planner.ErrNoSolution) || errors.Is(err, sim.ErrPredictionDeadline) || errors.Is(err, sim.ErrHeadroomDeadline)
	if out.SolveExit != 0 {
		return out
	}
	var cout bytes.Buffer
	cio := &run.IO{Streams: run.Streams{Out: &cout, Err: &serr}, Quiet: true}
	err = check.Run(ctx, check.Args{Systems: o.Systems, Plan: planPath, Tolerance: "1%"}, cio)
	ce := exitCode(err)
	out.CheckExit, out.CheckErr = &ce, errText(err)
	if plan, err := formats.ReadInto[*formats.Plan](planPath, o.Systems.Sections()); err == nil {
		out.Objective = plan.Provenance.Objective
		if plan.Prediction != nil {
			for _, a := range plan.Prediction.Apps {
				if a.RateRPS > 0 {
					out.Sustained = append(out.Sustained, math.Round(a.SustainedRPS/a.RateRPS*1e4)/1e4)
				}
			}
		}
	}
	if o.Optimum > 0 {
		out.Optimum = longRun(ctx, o, c, dir, pf, out.Objective)
	}
	for _, l := range strings.Split(cout.String(), "\n") {
		if strings.HasPrefix(l, "FAIL") || strings.HasPrefix(l, "MISS") {
			out.Failed = append(out.Failed, l)
		}
	}
	return out
}

// exitCode is the exit status the CLI gives err (run.ExitError's code, else 1).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var e *run.ExitError
	if errors.As(err, &e) {
		return e.Code
	}
	return run.ExitFailure
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// reason is a refusal's kind: its message with every number written N, at most 160
// characters, so that refusals of one cause count together.
func reason(msg string) string {
	msg = numbers.ReplaceAllString(strings.TrimSpace(msg), "N")
	if len(msg) > 160 {
		msg = msg[:160]
	}
	return msg
}

var numbers = regexp.MustCompile(`[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?`)

// longRun solves the case again within o.Optimum at OptimumGap, as plan solve would with
// --gap and --time-limit, and compares objective, the case's plan's, with it.
func longRun(ctx context.Context, o Options, c gen.Case, dir string, pf []solve.Flag, objective float64) *Optimum {
	start := time.Now()
	path := filepath.Join(dir, "plan-optimum.json")
	var serr bytes.Buffer
	err := solveCase(ctx, o, c, dir, pf, solve.Args{TimeLimit: o.Optimum, Gap: OptimumGap, GapSet: true, Out: path}, &serr)
	op := &Optimum{Seconds: time.Since(start).Seconds()}
	if err != nil {
		op.Err = strings.ReplaceAll(errText(err), dir+string(filepath.Separator), "")
		return op
	}
	plan, err := formats.ReadInto[*formats.Plan](path, o.Systems.Sections())
	if err != nil {
		op.Err = err.Error()
		return op
	}
	pv := plan.Provenance
	op.Objective = pv.Objective
	op.Proven = pv.Status == "optimal" && pv.Gap != nil && *pv.Gap <= OptimumGap*(1+1e-9)
	op.Share = 1
	if best := max(op.Objective, objective); best > 0 {
		op.Share = math.Round(objective/best*1e6) / 1e6
	}
	return op
}

// solveCase runs plan solve on the case's files in dir as the corpus does (deterministic,
// the case's strategy and planner flags), with a's time limit, gap and output; its
// diagnostics go to errOut.
func solveCase(ctx context.Context, o Options, c gen.Case, dir string, pf []solve.Flag, a solve.Args, errOut *bytes.Buffer) error {
	a.Systems, a.Strategy, a.Deterministic, a.PlannerFlags, a.ToolVersion = o.Systems, c.Strategy, true, pf, "corpus"
	a.Inputs = solve.Inputs{Profiles: []string{filepath.Join(dir, "profile.json")}, Cluster: filepath.Join(dir, "cluster.json"),
		Workload: filepath.Join(dir, "workload.json")}
	var sout bytes.Buffer
	return solve.Run(ctx, a, &run.IO{Streams: run.Streams{Out: &sout, Err: errOut}, Quiet: true})
}
