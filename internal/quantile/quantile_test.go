package quantile

import (
	"math"
	"testing"
)

// TestPercentile checks the definition against values numpy.percentile gives (computed by
// hand from its documented linear rule: rank (n−1)·q/100, interpolated).
func TestPercentile(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		q    float64
		want float64
	}{
		{"empty", nil, 50, 0},
		{"one", []float64{7}, 99, 7},
		{"median odd", []float64{10, 2, 4, 1, 3}, 50, 3},
		{"median even", []float64{4, 1, 3, 2}, 50, 2.5},
		{"p90", []float64{1, 2, 3, 4, 10}, 90, 7.6},
		{"p99", []float64{1, 2, 3, 4, 10}, 99, 9.76},
		{"p0 is min", []float64{5, 3, 9}, 0, 3},
		{"p100 is max", []float64{5, 3, 9}, 100, 9},
		{"clamped above", []float64{5, 3, 9}, 150, 9},
		{"clamped below", []float64{5, 3, 9}, -1, 3},
		{"two p99", []float64{40, 60}, 99, 59.8},
		{"p99.9", []float64{0, 1000}, 99.9, 999},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Of(tc.xs, tc.q); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("Of(%v, %g) = %g, want %g", tc.xs, tc.q, got, tc.want)
			}
		})
	}
	if !math.IsNaN(Percentile([]float64{1}, math.NaN())) {
		t.Error("NaN percentile is not NaN")
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

// TestNearestRank checks the nearest-rank definition against numpy.percentile's
// method="inverted_cdf" (worked by hand from its rule: the smallest sample with at least q%
// of the samples at or below it).
func TestNearestRank(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		q    float64
		want float64
	}{
		{"empty", nil, 50, 0},
		{"one", []float64{7}, 99, 7},
		{"median odd", []float64{1, 2, 3, 4, 10}, 50, 3},
		{"median even: the lower middle", []float64{1, 2, 3, 4}, 50, 2},
		{"p90 of five: the maximum", []float64{1, 2, 3, 4, 10}, 90, 10},
		{"p90 of ten: the ninth", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 90, 9},
		{"p91 of ten: the tenth", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 91, 10},
		{"p0 is min", []float64{3, 5, 9}, 0, 3},
		{"p100 is max", []float64{3, 5, 9}, 100, 9},
		{"clamped", []float64{3, 5, 9}, 150, 9},
	} {
		if got := NearestRank(tc.xs, tc.q); got != tc.want {
			t.Errorf("%s: NearestRank(%v, %g) = %g, want %g", tc.name, tc.xs, tc.q, got, tc.want)
		}
	}
	if !math.IsNaN(NearestRank([]float64{1}, math.NaN())) {
		t.Error("NaN percentile is not NaN")
	}
}
