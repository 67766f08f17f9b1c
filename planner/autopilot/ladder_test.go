package autopilot

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	ap "github.com/plan-dev/plan/dataplane/autopilot"
	"github.com/plan-dev/plan/formats/sections/ppipesec"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// fakePlan is a plan over 4 L4 + 12 P4 whose re-solve serves 100 rps per GPU.
func fakePlan() *formats.Plan {
	cl := &formats.Cluster{GPUs: []formats.GPUPool{{Type: "L4", Count: 4, PerServer: 4}, {Type: "P4", Count: 12, PerServer: 4}}}
	return &formats.Plan{Cluster: cl, Provenance: formats.Provenance{Embedded: &formats.EmbeddedInputs{Cluster: cl}}}
}

func fakeLadder(t *testing.T, solves *int, failBelow int) *Ladder {
	t.Helper()
	resolve := func(_ context.Context, p *formats.Plan) (*formats.Plan, error) {
		*solves++
		n := 0
		for _, g := range p.Provenance.Embedded.Cluster.GPUs {
			n += g.Count
		}
		if n < failBelow {
			return nil, errors.New("SLO cannot be met")
		}
		q := *p
		q.Metadata.Name = strings.Repeat("x", n) // a distinct digest per rung
		return &q, nil
	}
	deploy := func(p *formats.Plan) (*dataplane.Deployment, error) {
		n := 0
		for _, g := range p.Cluster.GPUs {
			n += g.Count
		}
		return &dataplane.Deployment{Apps: []dataplane.App{{Name: "m", RateRPS: 100 * float64(n)}}}, nil
	}
	l, err := NewLadder(fakePlan(), []string{"m"}, 4, resolve, deploy)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLadder(t *testing.T) {
	cases := []struct {
		name      string
		demand    ap.Demand
		failBelow int
		gpus      int
		over      bool
		err       string
	}{
		{"small load: the smallest rung", ap.Demand{Rates: []float64{150}}, 0, 4, false, ""},
		{"middle load", ap.Demand{Rates: []float64{700}}, 0, 8, false, ""},
		{"peak load: the whole cluster", ap.Demand{Rates: []float64{1600}}, 0, 16, false, ""},
		{"above the cluster: best, over budget", ap.Demand{Rates: []float64{5000}}, 0, 16, true, ""},
		{"budget below the load: best within budget", ap.Demand{Rates: []float64{1600}, GPUBudget: 9}, 0, 8, true, ""},
		{"small rungs infeasible: skipped", ap.Demand{Rates: []float64{100}}, 6, 8, false, ""},
		{"nothing within budget solves", ap.Demand{Rates: []float64{100}, GPUBudget: 5}, 6, 0, false, "SLO cannot be met"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			solves := 0
			l := fakeLadder(t, &solves, c.failBelow)
			got, err := l.Solve(context.Background(), c.demand)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.GPUs != c.gpus || got.OverBudget != c.over {
				t.Errorf("got %d GPUs over-budget %v, want %d %v", got.GPUs, got.OverBudget, c.gpus, c.over)
			}
			n := solves
			if _, err := l.Solve(context.Background(), c.demand); err != nil || solves != n {
				t.Errorf("a second identical solve re-solved rungs (%d → %d solves, err %v)", n, solves, err)
			}
		})
	}
}

func TestLadderClusters(t *testing.T) {
	solves := 0
	l := fakeLadder(t, &solves, 0)
	for k, want := range map[int][2]int{1: {1, 3}, 2: {2, 6}, 3: {3, 9}, 4: {4, 12}} {
		c := l.Cluster(k)
		if c.GPUs[0].Count != want[0] || c.GPUs[1].Count != want[1] || c.GPUs[0].PerServer > c.GPUs[0].Count {
			t.Errorf("rung %d: %+v, want counts %v", k, c.GPUs, want)
		}
	}
	if l.base.Provenance.Embedded.Cluster.GPUs[1].Count != 12 {
		t.Error("a rung changed the base plan's cluster")
	}
	p := fakePlan()
	p.Provenance.Embedded.Cluster.Servers = []formats.Server{{}}
	if _, err := NewLadder(p, nil, 0, nil, nil); err == nil || !strings.Contains(err.Error(), "cluster.servers") {
		t.Errorf("explicit servers: err %v", err)
	}
	if _, err := NewLadder(&formats.Plan{}, nil, 0, nil, nil); err == nil || !strings.Contains(err.Error(), "embeds no cluster") {
		t.Errorf("no embedded cluster: err %v", err)
	}
}

// TestRateSolver: the cost objective re-solves the embedded workload at the demand rounded
// up to the grid, caches it, and over the GPU budget serves the largest share that fits.
func TestRateSolver(t *testing.T) {
	base := fakePlan()
	base.Provenance.Embedded.Workload = ppipesec.SetModels(&formats.Workload{}, []ppipesec.ModelWorkload{{Name: "m", RateRPS: 500}})
	solves := 0
	resolve := func(_ context.Context, p *formats.Plan) (*formats.Plan, error) {
		solves++
		q := *p
		rate := ppipesec.ModelsOf(p.Provenance.Embedded.Workload)[0].RateRPS
		n := int(math.Ceil(rate / 100))
		q.Fleet = &formats.Fleet{Objective: "cost", GPUsUsed: []formats.FleetGPU{{GPU: "L4", Count: n}}}
		q.Metadata.Name = fmt.Sprint(rate)
		return &q, nil
	}
	deploy := func(p *formats.Plan) (*dataplane.Deployment, error) {
		return &dataplane.Deployment{Apps: []dataplane.App{{Name: "m", RateRPS: ppipesec.ModelsOf(p.Provenance.Embedded.Workload)[0].RateRPS}}}, nil
	}
	r, err := NewRateSolver(base, []string{"m"}, resolve, deploy)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		demand ap.Demand
		gpus   int
		over   bool
		solves int
	}{
		{ap.Demand{Rates: []float64{450}}, 5, false, 1},
		{ap.Demand{Rates: []float64{455}}, 5, false, 1}, // the same grid point: cached
		{ap.Demand{Rates: []float64{900}}, 10, false, 2},
		{ap.Demand{Rates: []float64{900}, GPUBudget: 6}, 6, true, 7},
	}
	for i, c := range cases {
		got, err := r.Solve(context.Background(), c.demand)
		if err != nil {
			t.Fatal(err)
		}
		if got.GPUs != c.gpus || got.OverBudget != c.over || solves != c.solves {
			t.Errorf("case %d: %d GPUs over %v after %d solves, want %d %v %d", i, got.GPUs, got.OverBudget, solves, c.gpus, c.over, c.solves)
		}
	}
	if _, err := NewRateSolver(fakePlan(), []string{"m"}, resolve, deploy); err == nil || !strings.Contains(err.Error(), "no workload application") {
		t.Errorf("no embedded workload: err %v", err)
	}
}

// TestLadderNoCapacityModel: a plan that states the same rates whatever its GPUs is not
// shrunk to its smallest rung.
func TestLadderNoCapacityModel(t *testing.T) {
	resolve := func(_ context.Context, p *formats.Plan) (*formats.Plan, error) {
		q := *p
		q.Metadata.Name = fmt.Sprint(p.Provenance.Embedded.Cluster.GPUs)
		return &q, nil
	}
	deploy := func(*formats.Plan) (*dataplane.Deployment, error) {
		return &dataplane.Deployment{Apps: []dataplane.App{{Name: "m", RateRPS: 3}}}, nil
	}
	l, err := NewLadder(fakePlan(), []string{"m"}, 4, resolve, deploy)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Solve(context.Background(), ap.Demand{Rates: []float64{1}}); !errors.Is(err, ErrNoCapacityModel) {
		t.Errorf("rates that ignore the GPUs: err %v, want ErrNoCapacityModel", err)
	}
}
