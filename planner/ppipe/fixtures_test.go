package ppipe

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

var update = flag.Bool("update", false, "rewrite golden files")

const fixtureDir = "../../testdata/ppipe"

func fixturePath(name string) string { return filepath.Join(fixtureDir, name) }

// testL4 is the L4 of the fixtures: whole GPUs and halves only.
func testGPUs() []gpuSpec {
	l4 := specL4
	l4.levels = []int{1, 2}
	return []gpuSpec{l4, specP4}
}

// regenerate rewrites profile.json once per -update run; regenerateErr is its error.
var (
	regenerate    sync.Once
	regenerateErr error
)

// loadFixtureInputs reads testdata/ppipe/{profile.json,cluster.yaml,workload.yaml}; with
// -update it first regenerates profile.json (synthetic, seed 7, 2 models × 6 blocks).
func loadFixtureInputs(t *testing.T) Inputs {
	t.Helper()
	if *update {
		// Once: the tests that read the fixture run in parallel.
		regenerate.Do(func() {
			p := genProfile(7, 2, 6, testGPUs(), 4)
			p.Metadata.Name = "ppipe-test"
			p.Metadata.Description = "synthetic 6-block models m0, m1 on L4 (v 1,2) and P4; seed 7 (planner/ppipe gen_test.go)"
			regenerateErr = formats.WriteFile(fixturePath("profile.json"), p, intree.Sections())
		})
		if regenerateErr != nil {
			t.Fatal(regenerateErr)
		}
	}
	prof, err := formats.ReadInto[*formats.Profile](fixturePath("profile.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := formats.ReadInto[*formats.Cluster](fixturePath("cluster.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	wl, err := formats.ReadInto[*formats.Workload](fixturePath("workload.yaml"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	return Inputs{Profiles: []*formats.Profile{prof}, Cluster: cl, Workload: wl}
}

// brokenPlans are hand-broken copies of good-plan.json, one per verified constraint: the
// file name is the rule Verify must report.
var brokenPlans = map[string]func(pl *formats.Plan){
	"budget": func(pl *formats.Plan) { // more P4/L4 slices than the cluster has
		pt := &ppipesec.PlanOf(pl).Models[0].Pipelines[0].Partitions[0]
		x := pt.ThroughputRPS / float64(pt.Count)
		pt.Count += 40
		pt.ThroughputRPS = x * float64(pt.Count)
	},
	"latency": func(pl *formats.Plan) { // an SLO the recorded pipelines no longer meet
		m := &ppipesec.PlanOf(pl).Models[0]
		m.SLO = formats.Duration(int64(m.Pipelines[0].LatencyUs*1000) / 2)
		T := m.SLO.Microseconds()
		m.BudgetUs = T - float64(int64(0.4*T+0.5))
	},
	"stage-latency": func(pl *formats.Plan) {
		p := &ppipesec.PlanOf(pl).Models[0].Pipelines[0]
		p.Partitions[0].StageLatencyUs *= 0.5
		p.LatencyUs -= p.Partitions[0].StageLatencyUs
	},
	"latency-sum": func(pl *formats.Plan) { ppipesec.PlanOf(pl).Models[0].Pipelines[0].LatencyUs *= 0.9 },
	"transfer":    func(pl *formats.Plan) { firstMultiStage(pl).Partitions[0].TransferUs = 0 },
	"throughput": func(pl *formats.Plan) {
		ppipesec.PlanOf(pl).Models[0].Pipelines[0].Partitions[0].ThroughputRPS *= 2
	},
	"throughput-sum": func(pl *formats.Plan) { ppipesec.PlanOf(pl).Models[0].ThroughputRPS *= 1.5 },
	"contiguity":     func(pl *formats.Plan) { firstMultiStage(pl).Partitions[1].FirstBlock++ },
	"batch":          func(pl *formats.Plan) { ppipesec.PlanOf(pl).Models[0].Pipelines[0].Batch = 99 },
	"vgpu":           func(pl *formats.Plan) { ppipesec.PlanOf(pl).Models[0].Pipelines[0].Partitions[0].VGPU = 3 },
	"gpu":            func(pl *formats.Plan) { ppipesec.PlanOf(pl).Models[0].Pipelines[0].Partitions[0].GPU = "V100" },
	"count":          func(pl *formats.Plan) { ppipesec.PlanOf(pl).Models[0].Pipelines[0].Partitions[0].Count = 0 },
	"slo-budget":     func(pl *formats.Plan) { ppipesec.PlanOf(pl).Models[0].BudgetUs += 1000 },
}

func firstMultiStage(pl *formats.Plan) *ppipesec.PPipePipeline {
	for mi := range ppipesec.PlanOf(pl).Models {
		for pi := range ppipesec.PlanOf(pl).Models[mi].Pipelines {
			if p := &ppipesec.PlanOf(pl).Models[mi].Pipelines[pi]; len(p.Partitions) > 1 {
				return p
			}
		}
	}
	panic("good-plan.json has no multi-stage pipeline")
}

// TestFixturePlans checks that good-plan.json verifies and that every hand-broken plan in
// testdata/ppipe/broken is caught with its rule. -update re-solves and rewrites them.
func TestFixturePlans(t *testing.T) {
	// -update rewrites the files other tests read: then it runs before every parallel test.
	if !*update {
		t.Parallel()
	}
	good := fixturePath("good-plan.json")
	if *update {
		in := loadFixtureInputs(t)
		pl, err := Solve(context.Background(), in, Options{Alpha: DefaultAlpha, MaxPartitions: 2, Deterministic: true, Gap: 1e-6})
		skipWithoutSolver(t, err)
		if err != nil {
			t.Fatal(err)
		}
		if err := formats.WriteFile(good, pl, intree.Sections()); err != nil {
			t.Fatal(err)
		}
		raw, _ := formats.Marshal(pl)
		for rule, breakIt := range brokenPlans {
			doc, err := formats.Parse("plan.json", raw, intree.Sections())
			if err != nil {
				t.Fatal(err)
			}
			cp := doc.(*formats.Plan)
			breakIt(cp)
			data, _ := formats.Marshal(cp)
			if err := formats.WriteAtomic(fixturePath("broken/"+rule+".json"), data); err != nil {
				t.Fatal(err)
			}
		}
	}
	pl, err := formats.ReadInto[*formats.Plan](good, intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	if v := Verify(pl); len(v) > 0 {
		t.Fatalf("good plan: %v", v)
	}
	for rule := range brokenPlans {
		t.Run(rule, func(t *testing.T) {
			t.Parallel()
			// Decoded without formats' validation (which rejects some of these on its
			// own): Verify must catch every one independently.
			raw, err := os.ReadFile(fixturePath("broken/" + rule + ".json"))
			if err != nil {
				t.Fatal(err)
			}
			doc, err := formats.Parse(rule+".json", raw, intree.Sections())
			if err != nil {
				t.Fatal(err)
			}
			vs := Verify(doc.(*formats.Plan))
			if !slices.ContainsFunc(vs, func(v Violation) bool { return v.Rule == rule }) {
				t.Errorf("Verify did not report %q; got %v", rule, vs)
			}
		})
	}
	entries, _ := os.ReadDir(fixturePath("broken"))
	if len(entries) != len(brokenPlans) {
		t.Errorf("testdata/ppipe/broken holds %d files, the test knows %d rules", len(entries), len(brokenPlans))
	}
}
