package schedule

import "github.com/plan-dev/plan/planner/internal/tol"

// Float tolerances of this package, each named for what it absorbs and why it has its size;
// comparisons of computed float64 values use these rather than bare numbers. The ones every
// planner shares are package tol's, documented there.
const (
	relTol = tol.Rel
	absTol = tol.Abs
	// stepTol is the relative difference allowed between intervals of a rate trace: times
	// are decimal seconds read from CSV (0.1 is not exact in binary), so rows 60 s apart may
	// differ by float64 rounding, while a real gap or overlap differs by far more than 1e-6.
	stepTol = 1e-6
)
