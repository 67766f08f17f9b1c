package cascadesys

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/planner"
	pc "github.com/plan-dev/plan/planner/cascade"
)

var update = flag.Bool("update", false, "rewrite testdata/cascade/golden-plan.json")

const dir = "../../../../testdata/cascade"

func inputs(t *testing.T) planner.Inputs {
	t.Helper()
	w, err := formats.ReadInto[*formats.Workload](filepath.Join(dir, "workload.yaml"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	p, err := formats.ReadInto[*formats.Profile](filepath.Join(dir, "profile.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := formats.ReadInto[*formats.Cluster](filepath.Join(dir, "cluster.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return planner.Inputs{Workload: w, Profiles: []*formats.Profile{p}, Cluster: c}
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(in *planner.Inputs, pl *Planner, s *planner.Settings)
		want  string
		isErr error
	}{
		{"slo unattainable", func(_ *planner.Inputs, _ *Planner, s *planner.Settings) { s.SLO = 2 * time.Millisecond },
			"--slo 2ms: SLO cannot be met: no cascade serves 1750 QPS within p95 ≤ 2ms on 2 GPU(s): the best attainable is", planner.ErrInput},
		{"accuracy unattainable", func(_ *planner.Inputs, pl *Planner, _ *planner.Settings) { pl.f.AccuracySLO = 0.99 },
			"--accuracy 0.99: SLO cannot be met: accuracy 0.99: the most accurate cascade reaches", planner.ErrInput},
		{"model larger than any GPU", func(in *planner.Inputs, _ *Planner, _ *planner.Settings) {
			in.Profiles[0].Models[2].MemoryBytes = 40e9
		}, "profile: models[2].memory_bytes: 40000000000: model bert-base is larger than any GPU", planner.ErrInput},
		{"unprofiled model", func(in *planner.Inputs, _ *Planner, _ *planner.Settings) {
			in.Profiles[0].Models = in.Profiles[0].Models[:2]
		}, `workload: cascades[0].models[2]: "bert-base": model not found in any profile`, planner.ErrInput},
		{"two GPU pools", func(in *planner.Inputs, _ *Planner, _ *planner.Settings) {
			in.Cluster.GPUs = append(in.Cluster.GPUs, in.Cluster.GPUs[0])
		}, "cluster: gpus: 2 pools", planner.ErrInput},
		{"bad flag", func(_ *planner.Inputs, pl *Planner, _ *planner.Settings) { pl.f.MaxLen = 4 }, "--max-len: 4: must be 1, 2 or 3", planner.ErrInput},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := inputs(t)
			pl := &Planner{f: pc.DefaultFlags()}
			s := planner.Settings{}
			tc.edit(&in, pl, &s)
			_, err := pl.Solve(context.Background(), in, s)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.isErr) {
				t.Fatalf("err %v, want %q (%v)", err, tc.want, tc.isErr)
			}
		})
	}
}

// TestGoldenPlan solves the bundled example deterministically, checks it, compares it with
// the golden plan and re-solves it from its embedded inputs.
func TestGoldenPlan(t *testing.T) {
	in := inputs(t)
	pl := &Planner{f: pc.DefaultFlags()}
	plan, err := pl.Solve(context.Background(), in, planner.Settings{Deterministic: true, ToolVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := (Checker{}).Verify(plan); len(v) > 0 {
		t.Fatalf("verify: %v", v)
	}
	golden := filepath.Join(dir, "golden-plan.json")
	if *update {
		if err := formats.WriteFile(golden, plan, intree.Sections()); err != nil {
			t.Fatal(err)
		}
	}
	ref, err := formats.ReadInto[*formats.Plan](golden, intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range (Checker{}).Compare(plan, ref, 0) {
		if !c.OK {
			t.Errorf("golden: %s", c.Line)
		}
	}
	got, _ := formats.Marshal(plan)
	want, _ := os.ReadFile(golden)
	if strings.TrimSpace(string(got)) != strings.TrimSpace(string(want)) {
		t.Errorf("plan differs from %s (run with -update after an intended change)", golden)
	}
	re, err := (Checker{}).Resolve(context.Background(), ref, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range (Checker{}).Compare(re, ref, 0) {
		if !c.OK {
			t.Errorf("resolve: %s", c.Line)
		}
	}
	if len(Render(plan)) != 2 {
		t.Fatal("render: want placement and gear tables")
	}
	dep, pol, err := cascadeSystem{}.Deploy(plan)
	if err != nil || pol != "cascadeserve" || len(dep.Stages) != 3 {
		t.Fatalf("deploy: %v %q", err, pol)
	}
}

// TestCocktailPlan: a cocktail+ plan is one single-model gear over the largest fleet, and
// deploys with the cocktail+ autoscaling policy by default.
func TestCocktailPlan(t *testing.T) {
	in := inputs(t)
	pl := &Planner{f: pc.DefaultFlags()}
	plan, err := pl.Solve(context.Background(), in, planner.Settings{Strategy: pc.StrategyCocktail, Deterministic: true})
	if err != nil {
		t.Fatal(err)
	}
	if g := cascadesec.PlanOf(plan).Gears; len(g) != 1 || len(g[0].Models) != 1 {
		t.Fatalf("want one single-model gear: %+v", g)
	}
	if _, pol, err := (cascadeSystem{}).Deploy(plan); err != nil || pol != "cocktail+" {
		t.Fatalf("deploy: policy %q, %v", pol, err)
	}
}
