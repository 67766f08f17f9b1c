// Package tol holds the float tolerances the planners share, each named for what it absorbs
// and why it has its size, so that every planner compares computed float64 values by the
// same rules. A planner's tolerance.go names the ones it uses and adds its own.
package tol

const (
	// Rel is the relative difference below which two float64 values that are equal in exact
	// arithmetic but computed along different paths (a sum in another order, a quotient and
	// its product) count as equal: rounding leaves about 1e-16 per operation, so 1e-9 covers
	// any chain of them here and stays far below a difference that matters (one request per
	// second in 10^9).
	Rel = 1e-9
	// Abs is the absolute slack between float64 values that are equal in exact arithmetic but
	// computed along different paths, on quantities whose smallest meaningful step (1 µs,
	// 1e-3 req/s, one GPU) is at least 10^5 times larger. Subtracted before math.Ceil (added
	// before math.Floor), it makes a quotient that is an integer up to rounding
	// (3.0000000000000004) count as that integer rather than the next.
	Abs = 1e-9
	// Tie separates ties from differences: values the same arithmetic produced from the same
	// inputs (the same terms summed in another order) differ by a few 1e-16, so within 1e-12
	// they are tied and the next criterion decides, while values that really differ
	// (accuracies by at least one record in a validation set, rates by 1e-3) stay apart.
	Tie = 1e-12
	// Record is the relative difference allowed between a number a plan records and the same
	// number recomputed from its inputs by another path (a profile's latency, a sum of stage
	// latencies, a cost): far above float64 rounding, far below any edit of a field that would
	// change the plan (1 µs in 10^6).
	Record = 1e-6
)
