package schedule

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
	// stepTol is the relative difference allowed between intervals of a rate trace: times
	// are decimal seconds read from CSV (0.1 is not exact in binary), so rows 60 s apart may
	// differ by float64 rounding, while a real gap or overlap differs by far more than 1e-6.
	stepTol = 1e-6
)
