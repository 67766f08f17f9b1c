package quantile

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSelectMatchesSort checks Select against a sort: every rank asked holds the sorted
// value, with nothing greater before it and nothing smaller after it, on seeded samples of
// every shape a report sees (distinct, few distinct values, sorted, reversed, tiny).
func TestSelectMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, tc := range []struct {
		name string
		n    int
		gen  func(i int) int64
	}{
		{"empty", 0, nil},
		{"one", 1, func(int) int64 { return 5 }},
		{"distinct", 5000, func(int) int64 { return rng.Int64N(1 << 40) }},
		{"few values", 5000, func(int) int64 { return rng.Int64N(4) * 1000 }},
		{"all equal", 3000, func(int) int64 { return 42 }},
		{"sorted", 4000, func(i int) int64 { return int64(i) }},
		{"reversed", 4000, func(i int) int64 { return int64(-i) }},
		{"organ pipe", 4001, func(i int) int64 { return int64(min(i, 4000-i)) }},
		{"small", 17, func(int) int64 { return rng.Int64N(10) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xs := make([]int64, tc.n)
			for i := range xs {
				xs[i] = tc.gen(i)
			}
			sorted := slices.Clone(xs)
			slices.Sort(sorted)
			var ks []int
			for _, q := range []float64{0, 50, 90, 99, 99.9, 100} {
				ks = AppendRanks(ks, tc.n, q)
			}
			ks = append(ks, -1, tc.n, tc.n/3) // out of range ones are ignored
			Select(xs, ks)
			for _, k := range ks {
				if k < 0 || k >= tc.n {
					continue
				}
				if xs[k] != sorted[k] {
					t.Fatalf("rank %d: %d, sorted %d", k, xs[k], sorted[k])
				}
				for i := range xs {
					if (i < k && xs[i] > xs[k]) || (i > k && xs[i] < xs[k]) {
						t.Fatalf("rank %d (%d): element %d is %d, on the wrong side", k, xs[k], i, xs[i])
					}
				}
			}
			got := slices.Clone(xs)
			slices.Sort(got)
			if !slices.Equal(got, sorted) {
				t.Fatal("Select changed the multiset of samples")
			}
		})
	}
}

// TestPercentileAfterSelect checks that Percentile gives the same bits on a slice Select
// ordered at AppendRanks' ranks as on the sorted slice, for every percentile reports use
// and odd ones, NaNs included among the samples.
func TestPercentileAfterSelect(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	qs := []float64{0, 1, 25, 50, 90, 95, 99, 99.9, 100, 33.3333, math.NaN(), -5, 120}
	for _, n := range []int{1, 2, 3, 10, 101, 1000, 12345} {
		for _, nan := range []bool{false, true} {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = math.Round(rng.ExpFloat64()*1e5) / 7
				if nan && i%97 == 3 {
					xs[i] = math.NaN()
				}
			}
			sorted := Sorted(xs)
			for _, q := range qs {
				sel := slices.Clone(xs)
				Select(sel, AppendRanks(nil, n, q))
				want, got := Percentile(sorted, q), Percentile(sel, q)
				if math.Float64bits(want) != math.Float64bits(got) && !(math.IsNaN(want) && math.IsNaN(got)) {
					t.Errorf("n=%d nan=%v q=%g: %v after Select, %v sorted", n, nan, q, got, want)
				}
			}
		}
	}
}

// BenchmarkSelect compares selecting a report's percentiles with sorting, on a million
// latencies with repeats.
func BenchmarkSelect(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]int64, 1<<20)
	for i := range src {
		src[i] = int64(rng.ExpFloat64() * 2e4)
	}
	var ks []int
	for _, q := range []float64{50, 90, 99, 99.9, 100} {
		ks = AppendRanks(ks, len(src), q)
	}
	xs := make([]int64, len(src))
	b.Run("select", func(b *testing.B) {
		for b.Loop() {
			copy(xs, src)
			Select(xs, ks)
		}
	})
	b.Run("sort", func(b *testing.B) {
		for b.Loop() {
			copy(xs, src)
			slices.Sort(xs)
		}
	})
}
