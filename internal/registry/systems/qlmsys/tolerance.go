package qlmsys

// Float tolerances of this package, each named for what it absorbs and why it has its size;
// comparisons of computed float64 values use these rather than bare numbers.
const (
	// absTol is the absolute slack between float64 values that are equal in exact arithmetic
	// but computed along different paths, on quantities whose smallest meaningful step (1 µs,
	// 1e-3 req/s, one GPU) is at least 10^5 times larger. Subtracted before math.Ceil (added
	// before math.Floor), it makes a quotient that is an integer up to rounding
	// (3.0000000000000004) count as that integer rather than the next.
	absTol = 1e-9
)
