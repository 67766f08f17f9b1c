package dyorc

import "github.com/plan-dev/plan/planner/internal/tol"

// Float tolerances of this package, each named for what it absorbs and why it has its size;
// comparisons of computed float64 values use these rather than bare numbers. The ones every
// planner shares are package tol's, documented there.
const (
	absTol = tol.Abs
)
