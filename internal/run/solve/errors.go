package solve

import (
	"errors"
	"fmt"
	"strings"

	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/system"
	"github.com/plan-dev/plan/planner"
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
	case errors.Is(err, solver.ErrCanceled):
		return run.CheckFailed(fmt.Errorf("interrupted: %w (nothing written)", err))
	default:
		return run.CheckFailed(fmt.Errorf("%w (nothing written)", err))
	}
}

// withFileNames replaces the planner's "cluster:", "workload:" and "profile:" prefixes with
// the files the user gave, so messages read `cluster.yaml: gpus: ...: rule`.
func withFileNames(err error, o Inputs, sys system.System) error {
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
func systemFileNames(err error, o Inputs, sys system.System) error {
	if sys.Sections.SolveErrors == nil {
		return err
	}
	names := map[string]string{"cluster": "demo cluster", "workload": o.Workload}
	if o.Cluster != "" {
		names["cluster"] = o.Cluster
	}
	return sys.Sections.SolveErrors(err, names)
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
