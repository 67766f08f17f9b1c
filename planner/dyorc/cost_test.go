package dyorc

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
)

// readInputs reads a workload and a cluster of the repository's testdata.
func readInputs(t *testing.T, workload, cluster string) (*formats.Workload, *formats.Cluster) {
	t.Helper()
	wl, err := formats.ReadInto[*formats.Workload](filepath.Join("..", "..", "testdata", workload), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := formats.ReadInto[*formats.Cluster](filepath.Join("..", "..", "testdata", cluster), nil)
	if err != nil {
		t.Fatal(err)
	}
	return wl, cl
}

// TestSolveCostBound: the least-cost search records the bound it proves (the load and memory
// bounds on every type's GPU count, priced), never the plan's own cost as if the search were
// a proof: on the small workload the cheapest fleet that meets the apps' rates in simulation
// is 4 L4s, while the bound allows 2, so the plan is a heuristic with its gap; a status of
// optimal would need the gap closed.
func TestSolveCostBound(t *testing.T) {
	wl, cl := readInputs(t, "dyorc/small.json", "cost/cluster-dyorc.yaml")
	p, err := SolveCost(context.Background(), wl, cl, nil, Options{Deterministic: true, Sim: testSim})
	if err != nil {
		t.Fatal(err)
	}
	pv := p.Provenance
	if pv.Bound == nil || pv.Gap == nil {
		t.Fatalf("no bound or gap recorded: %+v", pv)
	}
	cost, bound, gap := pv.Objective, *pv.Bound, *pv.Gap
	switch {
	case cost != p.Fleet.CostPerHour:
		t.Errorf("objective %g, the fleet costs %g", cost, p.Fleet.CostPerHour)
	case bound > cost || bound <= 0:
		t.Errorf("bound %g for cost %g", bound, cost)
	case math.Abs(gap-(cost-bound)/cost) > 1e-6:
		t.Errorf("gap %g, (cost − bound)/cost is %g", gap, (cost-bound)/cost)
	case (pv.Status == "optimal") != (gap == 0):
		t.Errorf("status %s with gap %g", pv.Status, gap)
	}
	t.Logf("%s: cost %g, bound %g, gap %g", pv.Status, cost, bound, gap)
}
