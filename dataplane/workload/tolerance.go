package workload

// Float tolerances of this package, each named for what it absorbs and why it has its size;
// comparisons of computed float64 values use these rather than bare numbers.
const (
	// tieTol separates ties from differences: values the same arithmetic produced from the
	// same inputs (the same terms summed in another order) differ by a few 1e-16, so within
	// 1e-12 they are tied and the next criterion decides, while values that really differ
	// (accuracies by at least one record in a validation set, rates by 1e-3) stay apart.
	tieTol = 1e-12
)
