package cascadesec

// Float tolerances of this package, each named for what it absorbs and why it has its size;
// comparisons of computed float64 values use these rather than bare numbers.
const (
	// shareSumTol is how far a replica's load shares may sum from 1: each share is written
	// rounded to 1e-9, so a few dozen of them sum within far less than 1e-6 of 1, and a share
	// list that does not cover the load is off by much more.
	shareSumTol = 1e-6
)
