package ppipe

import (
	"math"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
)

// TestCoarseGrid: a model with no more internal cuts than coarseCuts keeps them all; a
// longer one keeps 0 and M, its coarseCuts/2 cheapest cuts by transfer time, and an even
// spread, and nothing else.
func TestCoarseGrid(t *testing.T) {
	tau := func(M int, cheap ...int) []float64 {
		out := make([]float64, M+1)
		for c := range out {
			out[c] = 100 + float64(c)
		}
		for _, c := range cheap {
			out[c] = 1
		}
		return out
	}
	tests := []struct {
		name  string
		M     int
		cheap []int
		want  []int // cut positions kept
	}{
		{"short", 8, nil, []int{0, 1, 2, 3, 4, 5, 6, 7, 8}},
		{"at the grid's size", 13, nil, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}},
		// Cheapest six by τ (41..46 cheap; ties broken by position) and six evenly spread
		// (60·s/7: 8, 17, 25, 34, 42, 51).
		{"long", 60, []int{41, 42, 43, 44, 45, 46}, []int{0, 8, 17, 25, 34, 41, 42, 43, 44, 45, 46, 51, 60}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := coarseGrid(&modelData{blocks: tc.M, tau: tau(tc.M, tc.cheap...)})
			var got []int
			for c, k := range g {
				if k {
					got = append(got, c)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("kept %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("kept %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// TestCoarsePhase: on a large space (the generated corpus's case-1-3: two models on 25 V100
// + 75 T4, P ≤ 3, pipeline rounding, 60 thousand options, whose full LP takes 8–10 s) the
// coarse grid keeps under a fifth of the options, and the phase alone lifts the NP plan
// (603.1) to within 4% of the best plan known (885.7, from a 90 s solve): the plan a short
// limit leaves when the full LP cannot solve in it. The lifted plan scores what the phase
// said (the two restrictions map back to the full space's options). A small space does not
// run the phase.
func TestCoarsePhase(t *testing.T) {
	in := fixtureInputs("coarse")
	opts := Options{Alpha: 0.1, MaxPartitions: 3, Rounding: "pipeline", BatchAllowance: true, Replicas: 1, Deterministic: true, TimeLimit: 2 * time.Minute, Gap: 0.001}
	p, err := prepare(in, opts.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	s := testSession(p)
	cfg := spaceConfig{P: 3, replicas: 1}
	spaces, err := s.spaces(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n, nc := keptOptions(spaces), keptOptions(restrict(spaces, coarseKeep(spaces, nil)).spaces)
	if n <= coarseMinOptions || nc*4 > n {
		t.Fatalf("%d options, %d on the coarse grid: want more than %d, and under a quarter on the grid", n, nc, coarseMinOptions)
	}
	np, err := s.warmStart(spaces, p.build(spaces, cfg))
	skipWithoutSolver(t, err)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.coarse(spaces, cfg, np)
	if err != nil {
		t.Fatal(err)
	}
	const best = 885.68
	if got.obj < 0.96*best || got.obj < 1.3*np.obj {
		t.Errorf("coarse phase: %.2f from the NP plan's %.2f; want within 4%% of %.2f", got.obj, np.obj, best)
	}
	if score := p.objective(p.pipes(spaces, got.best, 1)); math.Abs(score-got.obj) > 1e-6*got.obj {
		t.Errorf("the lifted plan scores %.4f, the phase said %.4f", score, got.obj)
	}
	if !math.IsInf(got.bound, 1) {
		t.Errorf("bound %.2f: the coarse LP's bound is not the full space's", got.bound)
	}

	// A small space goes straight to the full LP.
	small := Inputs{Profiles: []*formats.Profile{genProfile(3, 2, 6, []gpuSpec{specL4, specP4}, 4)}, Cluster: genCluster([]gpuSpec{specL4, specP4}, []int{4, 8}, 30)}
	var phases []string
	o := Options{Alpha: DefaultAlpha, MaxPartitions: 2, Deterministic: true, TimeLimit: time.Minute}.withHooks(solveHooks{call: func(phase string, _ time.Duration, _ time.Time) {
		phases = append(phases, phase)
	}})
	if _, err := Solve(t.Context(), small, o); err != nil {
		t.Fatal(err)
	}
	for _, ph := range phases {
		if ph == "coarse-lp" || ph == "coarse" {
			t.Errorf("a small space ran the coarse phase: %v", phases)
		}
	}
}

// TestFullLPFits: the coarse MILP keeps a quarter of the time only while the full LP, at
// least as slow per option as the coarse one, could still solve in the rest. The numbers are
// case-11-118's of the real-shaped corpus (a 6.3-thousand-option coarse LP in 0.1 s, a
// 64.8-thousand-option full LP) under a 2 s and a 20 s limit.
func TestFullLPFits(t *testing.T) {
	const ms = time.Millisecond
	for _, c := range []struct {
		name         string
		took         time.Duration
		coarse, full int
		left         time.Duration
		want         bool
	}{
		{name: "2 s limit: the full LP needs ~1 s of 0.45 s", took: 100 * ms, coarse: 6287, full: 64801, left: 450 * ms, want: false},
		{name: "20 s limit: room for it", took: 100 * ms, coarse: 6287, full: 64801, left: 17 * time.Second, want: true},
		{name: "just over three quarters", took: 100 * ms, coarse: 1000, full: 10000, left: 1333 * ms, want: false},
		{name: "just under three quarters", took: 100 * ms, coarse: 1000, full: 10000, left: 1334 * ms, want: true},
		{name: "no coarse options", took: 100 * ms, coarse: 0, full: 10000, left: ms, want: true},
	} {
		if got := fullLPFits(c.took, c.coarse, c.full, c.left); got != c.want {
			t.Errorf("%s: fullLPFits(%v, %d, %d, %v) = %v, want %v", c.name, c.took, c.coarse, c.full, c.left, got, c.want)
		}
	}
}
