package kerneltab

import (
	"testing"
)

// TestDecodeAttentionAcrossKVHeads: decode attention of k KV heads per GPU (multi-head
// attention, h = k) at a count between two the tables measure (1, 2, 4, 8) lies between
// its measured neighbours, on every measured GPU (the 40 heads of a Llama-2-13B at TP 8: 5
// a GPU). Interpolating across KV heads read 5 × 5 heads on the H100 at 4.7× both measured
// neighbours.
func TestDecodeAttentionAcrossKVHeads(t *testing.T) {
	for _, tc := range []struct {
		gpu   string
		batch int
		step  float64
	}{
		{"H100", 1, 2047}, {"H100", 8, 2047}, {"H100", 32, 4095}, {"H100", 64, 511},
		{"H200", 8, 2047}, {"A100", 8, 2047}, {"L40S", 8, 2047}, {"B200", 8, 2047},
	} {
		tb, err := Load(tc.gpu)
		if err != nil {
			t.Fatal(err)
		}
		at := func(k int) float64 {
			us, _, _, err := tb.GenerationAttentionFromMemoryUs(tc.batch, k, k, 128, BF16, tc.step)
			if err != nil {
				t.Fatal(err)
			}
			return us
		}
		for _, k := range []int{3, 5, 6, 7} {
			lo, hi := 2, 4
			if k > 4 {
				lo, hi = 4, 8
			}
			tLo, tHi := at(lo), at(hi)
			us, p, _, _ := tb.GenerationAttentionFromMemoryUs(tc.batch, k, k, 128, BF16, tc.step)
			if us < 0.9*min(tLo, tHi) || us > 1.1*max(tLo, tHi) {
				t.Errorf("%s b=%d step=%g: %d KV heads %.1f µs (%s): outside its neighbours' %.1f–%.1f µs (%d and %d KV heads)", tc.gpu, tc.batch, tc.step, k, us, p, tLo, tHi, lo, hi)
			}
		}
	}
}

func TestFoldKVHeads(t *testing.T) {
	axis := []float64{1, 2, 4, 8}
	for _, tc := range []struct{ k, want float64 }{
		{1, 1}, {2, 2}, {3, 2}, {4, 4}, {5, 4}, {7, 4}, {8, 8}, {10, 8}, {40, 8}, {0.5, 0.5},
	} {
		if got := foldKVHeads(axis, tc.k); got != tc.want {
			t.Errorf("foldKVHeads(%g) = %g, want %g", tc.k, got, tc.want)
		}
	}
}
