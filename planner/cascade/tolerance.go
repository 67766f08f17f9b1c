package cascade

import "github.com/plan-dev/plan/planner/internal/tol"

// Float tolerances of this package, each named for what it absorbs and why it has its size;
// comparisons of computed float64 values use these rather than bare numbers. The ones every
// planner shares are package tol's, documented there.
const (
	relTol    = tol.Rel
	absTol    = tol.Abs
	tieTol    = tol.Tie
	recordTol = tol.Record
	// accTol is how far a gear's recorded expected_accuracy may sit from replaying the
	// validation records: the plan writes it rounded to 1e-6, and a change of one record's
	// outcome in a 10,000-record set moves it by 1e-4, which must be caught.
	accTol = 1e-4
)
