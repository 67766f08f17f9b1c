package fleet

// Float tolerances of this package, each named for what it absorbs and why it has its size;
// comparisons of computed float64 values use these rather than bare numbers.
const (
	// relTol is the relative difference below which two float64 values that are equal in
	// exact arithmetic but computed along different paths (a sum in another order, a quotient
	// and its product) count as equal: rounding leaves about 1e-16 per operation, so 1e-9
	// covers any chain of them here and stays far below a difference that matters (one
	// request per second in 10^9).
	relTol = 1e-9
	// absTol is the absolute slack between float64 values that are equal in exact arithmetic
	// but computed along different paths, on quantities whose smallest meaningful step (1 µs,
	// 1e-3 req/s, one GPU) is at least 10^5 times larger. Subtracted before math.Ceil (added
	// before math.Floor), it makes a quotient that is an integer up to rounding
	// (3.0000000000000004) count as that integer rather than the next.
	absTol = 1e-9
	// recordTol is the relative difference allowed between a number a plan records and the
	// same number recomputed from its inputs by another path (a profile's latency, a sum of
	// stage latencies, a cost): far above float64 rounding, far below any edit of a field
	// that would change the plan (1 µs in 10^6).
	recordTol = 1e-6
)
