package ppipe

import (
	"context"
	"testing"

	"github.com/plan-dev/plan/formats"
)

// benchCase is one of the speed targets (2 cores, gap 0.1%): the L-size clusters of
// the paper (25 high + 75 low GPUs), 10 blocks, synthetic profiles with fixed seeds.
type benchCase struct {
	name   string
	gpus   []gpuSpec
	counts []int
	models int
	P      int
	seed   uint64
}

var benchCases = []benchCase{
	// Target: median ≤ 2 s to a proven gap ≤ 0.1%.
	{"P2-2types-1model", []gpuSpec{specL4, specP4}, []int{25, 75}, 1, 2, 1},
	// Target: ≤ 30 s to ≤ 0.1%.
	{"P3-2types-3models", []gpuSpec{specL4, specP4}, []int{25, 75}, 3, 3, 2},
	// Target: ≤ 120 s.
	{"P3-4types-1model", []gpuSpec{specL4, specV100, specT4, specP4}, []int{10, 15, 35, 40}, 1, 3, 3},
	// The authors' main setting (P ≤ 2) for the group and the four types, for comparison.
	{"P2-2types-3models", []gpuSpec{specL4, specP4}, []int{25, 75}, 3, 2, 2},
	{"P2-4types-1model", []gpuSpec{specL4, specV100, specT4, specP4}, []int{10, 15, 35, 40}, 1, 2, 3},
}

func (c benchCase) inputs() Inputs {
	return Inputs{Profiles: []*formats.Profile{genProfile(c.seed, c.models, 10, c.gpus, 0)}, Cluster: genCluster(c.gpus, c.counts, 30)}
}

// BenchmarkSolve reports wall time per solve plus the gap and objective reached.
func BenchmarkSolve(b *testing.B) {
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			in := c.inputs()
			var pl *formats.Plan
			for b.Loop() {
				var err error
				pl, err = Solve(context.Background(), in, Options{MaxPartitions: c.P, TimeLimit: 120e9, Gap: 0.001})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(pl.Provenance.Gap*100, "gap%")
			b.ReportMetric(pl.Provenance.Objective, "obj")
			b.ReportMetric(float64(pl.Provenance.Nodes), "nodes")
			kept := pl.PPipe.Extra["options_kept"]
			b.Logf("%s: status %s obj %.2f bound %.2f gap %.4f%% options %s/%s", c.name, pl.Provenance.Status, pl.Provenance.Objective, pl.Provenance.Bound, pl.Provenance.Gap*100, kept, pl.PPipe.Extra["options_raw"])
		})
	}
}

// BenchmarkSolveAblation measures what the LP guidance and the NP warm start buy on the first
// target case (HiGHS on the full MILP alone, with and without the warm start).
func BenchmarkSolveAblation(b *testing.B) {
	c := benchCases[0]
	for _, v := range []struct {
		name string
		opts Options
	}{
		{"default", Options{}},
		{"no-lp-guide", Options{NoLPGuide: true}},
		{"no-lp-guide-no-warm-start", Options{NoLPGuide: true, NoWarmStart: true}},
		{"replicas-code", Options{Replicas: -1}},
		{"rounding-stage", Options{Rounding: RoundingStage}},
	} {
		b.Run(v.name, func(b *testing.B) {
			in := c.inputs()
			o := v.opts
			o.MaxPartitions, o.TimeLimit, o.Gap = c.P, 120e9, 0.001
			var pl *formats.Plan
			for b.Loop() {
				var err error
				if pl, err = Solve(context.Background(), in, o); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(pl.Provenance.Gap*100, "gap%")
			b.ReportMetric(pl.Provenance.Objective, "obj")
		})
	}
}
