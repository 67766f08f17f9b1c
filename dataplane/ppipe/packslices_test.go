package ppipe

import "testing"

// TestPackSlices: every mix of whole GPUs, halves, thirds and quarters packs into exactly
// ceil(Σ 1/level) GPUs, none over capacity, every slice placed once — so a deployment can
// always realise the stage-rounded GPU count.
func TestPackSlices(t *testing.T) {
	for w := 0; w <= 2; w++ {
		for a := 0; a <= 5; a++ {
			for b := 0; b <= 7; b++ {
				for c := 0; c <= 9; c++ {
					var levels []int
					for _, n := range []struct{ v, k int }{{1, w}, {2, a}, {3, b}, {4, c}} {
						for range n.k {
							levels = append(levels, n.v)
						}
					}
					gpus := PackSlices(levels)
					twelfths := 12*w + 6*a + 4*b + 3*c
					if want := (twelfths + 11) / 12; len(gpus) != want {
						t.Fatalf("%d whole, %d halves, %d thirds, %d quarters: %d GPUs, want %d", w, a, b, c, len(gpus), want)
					}
					seen := make([]bool, len(levels))
					for g, slices := range gpus {
						load := 0
						for _, i := range slices {
							if seen[i] {
								t.Fatalf("slice %d placed twice", i)
							}
							seen[i] = true
							load += 12 / levels[i]
						}
						if load > 12 || len(slices) == 0 {
							t.Fatalf("GPU %d holds %v (%d twelfths)", g, slices, load)
						}
					}
					for i, s := range seen {
						if !s {
							t.Fatalf("slice %d not placed", i)
						}
					}
				}
			}
		}
	}
	// First-fit decreasing would take three GPUs here.
	if got := PackSlices([]int{2, 3, 3, 3, 4, 4}); len(got) != 2 {
		t.Errorf("½ ⅓ ⅓ ⅓ ¼ ¼ on %d GPUs: %v", len(got), got)
	}
}
