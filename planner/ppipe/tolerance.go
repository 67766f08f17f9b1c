package ppipe

import "github.com/plan-dev/plan/planner/internal/tol"

// Float tolerances of this package, each named for what it absorbs and why it has its size;
// comparisons of computed float64 values use these rather than bare numbers. The ones every
// planner shares are package tol's, documented there.
const (
	relTol = tol.Rel
	absTol = tol.Abs
	tieTol = tol.Tie
	// lpTol is HiGHS's default primal and dual feasibility tolerance: an LP value below it is
	// zero, and a cut-off derived from an LP objective gets that much slack so that rounding
	// in HiGHS's duals never cuts off the solution at the cut-off.
	lpTol = 1e-7
	// boundRound, ten times lpTol, is how far a bound moved by reduced-cost fixing may sit
	// from an integer and still be that integer: 2.9999996 and 3.0000004 both become 3, not
	// 2 or 4, since the LP that moved them is only exact to lpTol.
	boundRound = 1e-6
	recordTol  = tol.Record
)
