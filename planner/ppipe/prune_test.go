package ppipe

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// pruneDominatedPairs is pruneDominated as every pair of a stage's options compared: the
// reference the bucketed version must agree with.
func pruneDominatedPairs(t *tmpl) {
	for d := range t.stages {
		st := t.stages[d]
		drop := make([]bool, len(st))
		for a := range st {
			for c := range st {
				o, w := &st[a], &st[c]
				if a == c || w.v == o.v || w.v%o.v != 0 || w.b != o.b || w.i != o.i || w.j != o.j {
					continue
				}
				if w.C <= o.C && float64(w.v)*w.X >= float64(o.v)*o.X {
					drop[a] = true
					break
				}
			}
		}
		var out []option
		for a := range st {
			if !drop[a] {
				out = append(out, st[a])
			}
		}
		t.stages[d] = out
	}
}

// TestPruneDominatedMatchesPairs: on random stages (few blocks and batches, so options of
// one (b, i, j) at several vGPU levels collide often; ties included), the bucketed pruning
// keeps exactly the options, in the same order, that comparing every pair keeps.
func TestPruneDominatedMatchesPairs(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	dropped := 0
	for trial := range 200 {
		var stages [][]option
		for range 1 + r.IntN(3) {
			var st []option
			for range r.IntN(60) {
				st = append(st, option{v: 1 << r.IntN(3), b: 1 + r.IntN(3), i: r.IntN(3), j: 3 + r.IntN(2),
					C: float64(1 + r.IntN(5)), X: float64(1 + r.IntN(5)), G: len(st)}) // G tells equal options apart
			}
			stages = append(stages, st)
		}
		clone := func() *tmpl {
			c := &tmpl{}
			for _, st := range stages {
				c.stages = append(c.stages, slices.Clone(st))
			}
			return c
		}
		got, want := clone(), clone()
		pruneDominated(got)
		pruneDominatedPairs(want)
		for d := range got.stages {
			if len(got.stages[d]) == 0 && len(want.stages[d]) == 0 {
				continue
			}
			if !slices.Equal(got.stages[d], want.stages[d]) {
				t.Fatalf("trial %d, stage %d: kept %v, want %v", trial, d, got.stages[d], want.stages[d])
			}
			dropped += len(stages[d]) - len(got.stages[d])
		}
	}
	if dropped == 0 {
		t.Fatal("no option was dominated in any trial: the comparison tested nothing")
	}
}

// TestWholeCopies: with whole GPUs only, a template fits as many times at once as every type
// it names has GPUs for its partitions on that type; with vGPU slices there is no bound.
func TestWholeCopies(t *testing.T) {
	p := &problem{types: []gpuType{{name: "H", count: 25}, {name: "L", count: 75}}}
	for _, tc := range []struct {
		name   string
		cfg    spaceConfig
		types  []int
		copies int
	}{
		{"pair cluster, one stage", spaceConfig{wholeOnly: true, counts: []int{1, 1}}, []int{0}, 1},
		{"pair cluster, high then low", spaceConfig{wholeOnly: true, counts: []int{1, 1}}, []int{0, 1}, 1},
		{"pair cluster, two stages on one type", spaceConfig{wholeOnly: true, counts: []int{1, 1}}, []int{1, 1}, 0},
		{"pair cluster, three stages", spaceConfig{wholeOnly: true, counts: []int{1, 1}}, []int{0, 1, 0}, 0},
		{"leftover GPU of one type", spaceConfig{wholeOnly: true, counts: []int{0, 1}}, []int{1}, 1},
		{"four high, two low", spaceConfig{wholeOnly: true, counts: []int{4, 2}}, []int{0, 0, 1}, 2},
		{"the cluster's own counts", spaceConfig{wholeOnly: true}, []int{1, 1, 0}, 25},
		{"vGPU slices", spaceConfig{counts: []int{1, 1}}, []int{0, 1, 0}, math.MaxInt},
	} {
		if got := p.wholeCopies(tc.cfg, tc.types); got != tc.copies {
			t.Errorf("%s: %v: %d copies, want %d", tc.name, tc.types, got, tc.copies)
		}
	}
}
