package quantile

import (
	"math"
	"testing"
)

// TestPercentile checks both definitions against the values numpy.percentile gives
// (worked by hand from its documented rules): linear, its default (rank (n−1)·q/100,
// interpolated), and nearest, method="inverted_cdf" (the smallest sample with at least q%
// of the samples at or below it).
func TestPercentile(t *testing.T) {
	ten := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		name            string
		xs              []float64
		q               float64
		linear, nearest float64
	}{
		{"empty", nil, 50, 0, 0},
		{"one", []float64{7}, 99, 7, 7},
		{"median odd", []float64{10, 2, 4, 1, 3}, 50, 3, 3},
		{"median even", []float64{4, 1, 3, 2}, 50, 2.5, 2},
		{"p90", []float64{1, 2, 3, 4, 10}, 90, 7.6, 10},
		{"p99", []float64{1, 2, 3, 4, 10}, 99, 9.76, 10},
		{"p90 of ten", ten, 90, 9.1, 9},
		{"p91 of ten", ten, 91, 9.19, 10},
		{"p0 is min", []float64{5, 3, 9}, 0, 3, 3},
		{"p100 is max", []float64{5, 3, 9}, 100, 9, 9},
		{"clamped above", []float64{5, 3, 9}, 150, 9, 9},
		{"clamped below", []float64{5, 3, 9}, -1, 3, 3},
		{"two p99", []float64{40, 60}, 99, 59.8, 60},
		{"p99.9", []float64{0, 1000}, 99.9, 999, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Of(tc.xs, tc.q); math.Abs(got-tc.linear) > 1e-9 {
				t.Errorf("Of(%v, %g) = %g, want %g", tc.xs, tc.q, got, tc.linear)
			}
			if got := NearestRank(Sorted(tc.xs), tc.q); got != tc.nearest {
				t.Errorf("NearestRank(%v, %g) = %g, want %g", tc.xs, tc.q, got, tc.nearest)
			}
			if len(tc.xs) > 0 && Sorted(tc.xs)[NearestRankIndex(len(tc.xs), tc.q)] != tc.nearest {
				t.Errorf("NearestRankIndex(%d, %g) = %d", len(tc.xs), tc.q, NearestRankIndex(len(tc.xs), tc.q))
			}
		})
	}
	if !math.IsNaN(Percentile([]float64{1}, math.NaN())) || !math.IsNaN(NearestRank([]float64{1}, math.NaN())) {
		t.Error("NaN percentile is not NaN")
	}
}

// TestMedian: the middle sample, or the mean of the middle two (numpy.median), of samples
// in any order, never the upper or lower middle alone.
func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		want float64
	}{
		{"none", nil, 0},
		{"one", []float64{4}, 4},
		{"odd unsorted", []float64{9, 1, 5}, 5},
		{"even: mean of the middle two", []float64{10, 1, 4, 2}, 3},
		{"even with a tie", []float64{2, 2, 7, 1}, 2},
		{"negative and repeated", []float64{-3, -1, -1, 8, 0}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.xs...)
			if got := Median(in); got != tc.want {
				t.Errorf("Median(%v) = %g, want %g", tc.xs, got, tc.want)
			}
			for i := range in {
				if in[i] != tc.xs[i] {
					t.Fatalf("Median reordered its input: %v", in)
				}
			}
		})
	}
}

func TestMeanStd(t *testing.T) {
	for _, tc := range []struct {
		xs        []float64
		mean, std float64
	}{
		{nil, 0, 0},
		{[]float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, 2},
		{[]float64{3}, 3, 0},
	} {
		if m, s := Mean(tc.xs), Std(tc.xs); math.Abs(m-tc.mean) > 1e-12 || math.Abs(s-tc.std) > 1e-12 {
			t.Errorf("%v: mean %g std %g, want %g %g", tc.xs, m, s, tc.mean, tc.std)
		}
	}
}

func TestSortedLeavesInput(t *testing.T) {
	xs := []float64{3, 1, 2}
	_ = Of(xs, 50)
	if xs[0] != 3 || xs[1] != 1 {
		t.Errorf("Of sorted its input: %v", xs)
	}
}
