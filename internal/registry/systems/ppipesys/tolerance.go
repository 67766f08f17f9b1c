package ppipesys

// Float tolerances of this package, each named for what it absorbs and why it has its size;
// comparisons of computed float64 values use these rather than bare numbers.
const (
	// relTol is the relative difference below which two float64 values that are equal in
	// exact arithmetic but computed along different paths (a sum in another order, a quotient
	// and its product) count as equal: rounding leaves about 1e-16 per operation, so 1e-9
	// covers any chain of them here and stays far below a difference that matters (one
	// request per second in 10^9).
	relTol = 1e-9
)
