// Package quantile is the project's one definition of a sample percentile, so that every
// report of the same samples gives the same number.
//
// Definition: numpy's default percentile (np.percentile with method "linear", Hyndman and
// Fan's definition 7), which `vllm bench serve` uses for its p50/p99 of TTFT, TPOT, ITL and
// E2E. For n sorted samples x[0] ≤ … ≤ x[n-1] and a percentile q in [0, 100], the rank is
// h = (n−1)·q/100 and the percentile is x[⌊h⌋] + (h−⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋]): linear
// interpolation between the two nearest order statistics. So p0 is the minimum, p100 the
// maximum, p50 the median (the mean of the middle two for even n), and for [1 2 3 4 10]
// p90 = 7.6 and p99 = 9.76, as numpy.percentile gives.
//
// One other definition is offered, by name, for the one report that wants a value that was
// observed: NearestRank (numpy's "inverted_cdf", Hyndman and Fan's definition 1).
package quantile

import (
	"math"
	"slices"
)

// Sorted returns a sorted copy of xs (xs is left as it was).
func Sorted(xs []float64) []float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s
}

// Percentile is the q-th percentile (q in [0, 100], clamped) of sorted, by the package's
// definition. sorted must be in non-decreasing order, or at least hold the order statistics
// AppendRanks names for q where a sort would put them (Select): Percentile reads nothing
// else, so it gives the same bits on either. An empty slice gives 0 (the value vllm bench
// reports for a metric without samples). A NaN q gives NaN.
func Percentile(sorted []float64, q float64) float64 {
	if v, ok := degenerate(len(sorted), q); ok {
		return v
	}
	return PercentileAt(len(sorted), q, func(i int) float64 { return sorted[i] })
}

// degenerate is the answer of both definitions where there is nothing to rank: 0 for no
// samples (the value vllm bench reports for a metric without any), NaN for a NaN q.
func degenerate(n int, q float64) (float64, bool) {
	switch {
	case n == 0:
		return 0, true
	case math.IsNaN(q):
		return math.NaN(), true
	}
	return 0, false
}

// PercentileAt is Percentile of n > 0 samples whose i-th order statistic (0-based) at(i)
// gives, for the ranks AppendRanks names (integer samples kept as integers read as float64).
// A NaN q gives NaN.
func PercentileAt(n int, q float64, at func(int) float64) float64 {
	if math.IsNaN(q) {
		return math.NaN()
	}
	h, lo := rank(n, q)
	if lo >= n-1 {
		return at(n - 1)
	}
	x := at(lo)
	return x + (h-float64(lo))*(at(lo+1)-x)
}

// rank is the rank h = (n−1)·q/100 of q (clamped to [0, 100]) among n > 0 samples and ⌊h⌋.
func rank(n int, q float64) (h float64, lo int) {
	q = min(max(q, 0), 100)
	h = float64(n-1) * q / 100
	return h, int(math.Floor(h))
}

// AppendRanks appends to ks the 0-based ranks of the order statistics Percentile reads for
// q among n samples (one or two; none for n = 0 or a NaN q).
func AppendRanks(ks []int, n int, q float64) []int {
	if n == 0 || math.IsNaN(q) {
		return ks
	}
	if _, lo := rank(n, q); lo < n-1 {
		return append(ks, lo, lo+1)
	}
	return append(ks, n-1)
}

// Of is the q-th percentile of xs in any order (a sorted copy's Percentile).
func Of(xs []float64, q float64) float64 { return Percentile(Sorted(xs), q) }

// Median is the 50th percentile of xs in any order, by the package's definition: the
// middle sample for an odd count, the mean of the middle two for an even one (0 for none).
// xs is left as it was.
func Median(xs []float64) float64 { return Of(xs, 50) }

// NearestRank is the q-th percentile (q in [0, 100], clamped) of sorted by the nearest-rank
// definition (numpy's method "inverted_cdf", Hyndman and Fan's definition 1): the smallest
// sample with at least q% of the samples at or below it, x[⌈n·q/100⌉−1] (x[0] for q = 0).
// Unlike Percentile it never interpolates: the answer is always one of the samples, and for
// [1 2 3 4 10] p90 is 10, p50 is 3. An empty slice gives 0, a NaN q NaN.
func NearestRank(sorted []float64, q float64) float64 {
	n := len(sorted)
	if v, ok := degenerate(n, q); ok {
		return v
	}
	return sorted[NearestRankIndex(n, q)]
}

// NearestRankIndex is the 0-based rank NearestRank reads among n > 0 sorted samples of any
// ordered kind (⌈n·q/100⌉−1, q clamped to [0, 100]).
func NearestRankIndex(n int, q float64) int {
	q = min(max(q, 0), 100)
	i := int(math.Ceil(float64(n)*q/100)) - 1
	return min(max(i, 0), n-1)
}

// Mean is the arithmetic mean of xs (0 for none).
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Std is the population standard deviation of xs (numpy's np.std default, ddof = 0, as
// vllm bench reports std_*_ms); 0 for none.
func Std(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	m := Mean(xs)
	var s float64
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(xs)))
}
