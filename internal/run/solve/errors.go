package solve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/plan-dev/plan/formats"
	progressline "github.com/plan-dev/plan/internal/base/progress"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/run/predict"
	"github.com/plan-dev/plan/internal/run/solve/explain"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/sim"
	"github.com/plan-dev/plan/solver"
)

// solveError maps planner errors onto the exit-code contract: bad input or an infeasible
// SLO exit 2, anything else (no solution in time, solver failure) exits 1.
func solveError(err error) error {
	if e, ok := MissingSolver(fmt.Errorf("%w (nothing written)", err)); ok {
		return e
	}
	switch {
	case errors.Is(err, planner.ErrInput), errors.Is(err, planner.ErrInfeasible):
		return run.UsageError(err)
	case errors.Is(err, planner.ErrNoSolution) && !strings.Contains(err.Error(), "--time-limit"):
		// No plan within the limit is no failed check of the user's inputs either: say the
		// one thing that changes it.
		return run.CheckFailed(fmt.Errorf("%w: raise --time-limit (nothing written)", err))
	case errors.Is(err, sim.ErrPredictionDeadline), errors.Is(err, sim.ErrHeadroomDeadline):
		// A plan was found, but what checks it did not finish within the limit: unchecked,
		// it is not written, and the limit is the one thing to change.
		return run.CheckFailed(fmt.Errorf("%w: a plan was found but not checked in time: raise --time-limit (nothing written)", err))
	case errors.Is(err, solver.ErrCanceled):
		return run.CheckFailed(fmt.Errorf("interrupted: %w (nothing written)", err))
	default:
		return run.CheckFailed(fmt.Errorf("%w (nothing written)", err))
	}
}

// withFileNames replaces the planner's "cluster:", "workload:" and "profile:" prefixes with
// the files the user gave, so messages read `cluster.yaml: gpus: ...: rule`.
func withFileNames(err error, o Inputs, sys system.Planning) error {
	var ie *planner.InputError
	if !errors.As(err, &ie) {
		return systemFileNames(err, o, sys)
	}
	names := map[string]string{"cluster": "demo cluster", "workload": "workload", "profile": "demo profile"}
	if o.Cluster != "" {
		names["cluster"] = o.Cluster
	}
	if o.Workload != "" {
		names["workload"] = o.Workload
	}
	if len(o.Profiles) == 1 {
		names["profile"] = o.Profiles[0]
	} else if len(o.Profiles) > 1 {
		names["profile"] = "profiles"
	}
	for i, f := range o.Profiles {
		names[fmt.Sprintf("profile[%d]", i)] = fmt.Sprintf("%s (--profile #%d)", f, i+1)
	}
	out := &planner.InputError{}
	for _, p := range ie.Problems {
		for k, v := range names {
			if rest, ok := strings.CutPrefix(p, k+": "); ok {
				p = v + ": " + rest
				break
			}
		}
		out.Problems = append(out.Problems, p)
	}
	return out
}

// systemFileNames lets the chosen system put the file that holds each problem of a failed
// solve in front of it (system.Sections.SolveErrors): the command knows which files were given,
// the system knows which paths live in which file.
func systemFileNames(err error, o Inputs, sys system.Planning) error {
	if sys.Sections().SolveErrors == nil {
		return err
	}
	names := map[string]string{"cluster": "demo cluster", "workload": o.Workload}
	if o.Cluster != "" {
		names["cluster"] = o.Cluster
	}
	return sys.Sections().SolveErrors(err, names)
}

// solverFix is what a user does about a binary without the HiGHS solver: the fix the
// "missing solver" error ends with.
const solverFix = "this plan has no solver: build it with `make install` (it embeds HiGHS; a `go install`ed binary has none, see testdata/golden/README.md), or run `make assets` in a checkout, or set " +
	"PLAN_HIGHS_WASM to the path of the pinned highs.wasm"

// MissingSolver turns a solver that is not there (solver.ErrBackendUnavailable: highs.wasm
// missing or not the pinned build) into a set-up error, exit 2 with the fix in the message,
// and reports whether it did. A missing solver is not a regression: exit 1 would tell a CI
// job that the plan got worse.
func MissingSolver(err error) (error, bool) {
	if !errors.Is(err, solver.ErrBackendUnavailable) {
		return err, false
	}
	return run.UsageError(fmt.Errorf("%w; %s", err, solverFix)), true
}

// refusedTarget reports whether a failed solve is one the explanation may answer: the
// planner refused the inputs (planner.ErrInput, planner.ErrInfeasible), where a target that
// cannot be met is reported, and the command was not interrupted. A missing solver is no
// such refusal.
func refusedTarget(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, solver.ErrBackendUnavailable) {
		return false
	}
	return errors.Is(err, planner.ErrInput) || errors.Is(err, planner.ErrInfeasible)
}

// FailureReport is what `plan solve -O json` prints on stdout when it exits 2 because a
// target cannot be met: the error and the explanation (internal/run/solve/explain). Nothing
// is written to --out.
type FailureReport struct {
	OK          bool                 `json:"ok"`
	Error       string               `json:"error"`
	Explanation *explain.Explanation `json:"explanation"`
}

// explainFailure is solve's exit 2 for a target that cannot be met (err: the planner's
// refusal, or the miss of missed, the plan solved): the explanation's search runs on the
// failure path only, within --time-limit, and its lines follow the error (on stderr); with
// -O json the error and the explanation are a FailureReport on stdout. Where the search
// finds that no knob explains the failure (bad input), the error is reported as it was.
func explainFailure(ctx context.Context, a Args, io *run.IO, sys system.Planning, in planner.Inputs, settings planner.Settings, err error, missed *formats.Plan) error {
	settings.Progress, settings.Status = nil, nil
	// The explanation runs in what is left of the command's deadline (--time-limit bounds
	// the failed solve and its explanation together), and ends before it by the time the
	// writing of a solve's output takes; its probes are solves of their own, each given up
	// at that end (explain's searcher), not bounded by the deadline themselves.
	deadline := predict.SearchDeadline(settings.Deadline)
	settings.Deadline = time.Time{}
	task := progressline.NewStatus(io.Err, io.Quiet, "explain "+sys.Name())
	solves := 0
	probe := func(ctx context.Context, in planner.Inputs, s planner.Settings) (explain.Outcome, error) {
		solves++
		task.Note(fmt.Sprintf("searching what would make it feasible: solve %d", solves))
		return probeSolve(ctx, a, sys, in, s)
	}
	fail := explain.Outcome{Plan: missed}
	if missed == nil {
		fail.Refusal = err
	}
	ex, xerr := explain.Explain(ctx, explain.Request{In: in, Settings: settings, Secs: a.Systems.Sections(), Probe: probe, Failure: fail, Limit: a.TimeLimit, Deadline: deadline,
		Trace: func(s string) { io.Logger().Debug("explain: " + s) }})
	task.Clear()
	if xerr != nil {
		// The explanation is extra: the solve's own error stands, with why none is given.
		io.Logger().Debug("no explanation", "err", xerr)
		if errors.Is(xerr, solver.ErrCanceled) || ctx.Err() != nil {
			return run.UsageError(err)
		}
		return run.UsageError(fmt.Errorf("%w\n(no explanation: %v)", err, xerr))
	}
	if ex == nil {
		return run.UsageError(err)
	}
	if io.JSONOutput() {
		if werr := io.WriteJSON(FailureReport{Error: err.Error(), Explanation: ex}); werr != nil {
			return werr
		}
		return run.UsageError(fmt.Errorf("%w\n(the explanation is on stdout, -O json)", err))
	}
	return run.UsageError(fmt.Errorf("%w\n%s", err, strings.Join(ex.Lines(), "\n")))
}

// probeSolve is one solve of the explanation's search: a fresh planner of sys with the
// command's planner flags, then the prediction at the workload's rates (predict.Attempt,
// without the headroom search), judged as Run judges a plan. Any failure of the solve is a
// verdict (infeasible) but an interruption or a missing solver, which end the search.
func probeSolve(ctx context.Context, a Args, sys system.Planning, in planner.Inputs, s planner.Settings) (explain.Outcome, error) {
	pl, opts := NewPlanner(sys)
	for _, f := range a.PlannerFlags {
		if err := opts.Set(f.Name, f.Value); err != nil {
			return explain.Outcome{}, err
		}
	}
	plan, started, err := predict.Attempt(ctx, a.Systems, pl, in, s, a.Arrivals, func(string) {})
	switch {
	case err == nil:
	case ctx.Err() != nil, errors.Is(err, solver.ErrBackendUnavailable), errors.Is(err, solver.ErrCanceled):
		return explain.Outcome{}, err
	default:
		// A refusal, no plan in time, or a plan its own prediction rejects: `plan solve`
		// would fail here too, so the point is infeasible.
		return explain.Outcome{Refusal: err}, nil
	}
	pr := started.Rates()
	plan.Prediction = pr
	return explain.Outcome{Feasible: pr.Meets || pr.Basis != formats.PredictionBasisRates, Plan: plan}, nil
}
