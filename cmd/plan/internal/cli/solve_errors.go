package cli

import (
	"errors"
	"fmt"

	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/system"
	"github.com/plan-dev/plan/solver"
)

// systemFileNames lets the chosen system put the file that holds each problem of a failed
// solve in front of it (system.Sections.SolveErrors): the cli knows which files were given,
// the system knows which paths live in which file.
func systemFileNames(err error, o *solveOptions, sys system.System) error {
	if sys.Sections.SolveErrors == nil {
		return err
	}
	names := map[string]string{"cluster": "demo cluster", "workload": o.workload}
	if o.cluster != "" {
		names["cluster"] = o.cluster
	}
	return sys.Sections.SolveErrors(err, names)
}

// solverFix is what a user does about a binary without the HiGHS solver: the fix the
// "missing solver" error ends with.
const solverFix = "this plan has no solver: build it with `make install` (it embeds HiGHS; a `go install`ed binary has none, see testdata/golden/README.md), or run `make assets` in a checkout, or set " +
	"PLAN_HIGHS_WASM to the path of the pinned highs.wasm"

// missingSolver turns a solver that is not there (solver.ErrBackendUnavailable: highs.wasm
// missing or not the pinned build) into a set-up error, exit 2 with the fix in the message,
// and reports whether it did. A missing solver is not a regression: exit 1 would tell a CI
// job that the plan got worse.
func missingSolver(err error) (error, bool) {
	if !errors.Is(err, solver.ErrBackendUnavailable) {
		return err, false
	}
	return run.UsageError(fmt.Errorf("%w; %s", err, solverFix)), true
}
