package autopilot

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	ap "github.com/plan-dev/plan/dataplane/autopilot"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/intree"

	"github.com/plan-dev/plan/dataplane"
	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/systems/qlmsys"
	pq "github.com/plan-dev/plan/planner/qlm"
	"github.com/plan-dev/plan/sim"
)

// qlmFixture is testdata/autopilot/qlm-plan.json: QLM's placement of two Mistral-7B classes
// on 16 A100s, with its inputs embedded.
func qlmFixture(t *testing.T) *formats.Plan {
	t.Helper()
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "autopilot", "qlm-plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func qlmResolve(ctx context.Context, p *formats.Plan) (*formats.Plan, error) {
	return qlmsys.Checker{Sim: sim.PoissonPoint}.Resolve(ctx, p, 0)
}

func qlmDeploy(p *formats.Plan) (*dataplane.Deployment, error) { return dq.FromPlan(p) }

func qlmLadder(t *testing.T, wrap bool) *Ladder {
	t.Helper()
	base := qlmFixture(t)
	resolve := qlmResolve
	if wrap {
		resolve = ClassResolve(base, qlmResolve)
	}
	l, err := NewLadder(base, []string{"conv", "code"}, 16, resolve, qlmDeploy)
	if err != nil {
		t.Fatal(err)
	}
	l.Capacity = func(p *formats.Plan, _ *dataplane.Deployment) (map[string]float64, error) { return pq.PlanCapacity(p) }
	return l
}

// sharedQLMLadder is the wrapped QLM ladder (qlmLadder(t, true)) that the tests below share.
// A ladder caches its rungs, as the autopilot's loop relies on across its re-solves, so the
// rungs several tests ask for are solved once: TestQLMLadderSolve's four demands each solve
// the full rung first and then climb from rung 1 (46 rung solves with a ladder apiece, 16
// shared; the package's tests took 55 s under -race, 40 of them there).
var sharedQLMLadder struct {
	once sync.Once
	l    *Ladder
}

func wrappedQLMLadder(t *testing.T) *Ladder {
	t.Helper()
	sharedQLMLadder.once.Do(func() { sharedQLMLadder.l = qlmLadder(t, true) })
	if sharedQLMLadder.l == nil {
		t.Fatal("the shared QLM ladder could not be made (the first test that made it says why)")
	}
	return sharedQLMLadder.l
}

// TestClassResolveRungs: QLM's planner refuses a placement whose instances cannot carry the
// classes' rates within their SLOs (simulated), so re-solving the plan's own rates on a small rung fails; ClassResolve plans a
// rung for its share of the classes, and every rung solves with a capacity that grows with
// its GPUs.
func TestClassResolveRungs(t *testing.T) {
	ctx := context.Background()
	if _, err := qlmLadder(t, false).Rung(ctx, 1); err == nil || !strings.Contains(err.Error(), "SLO cannot be met") {
		t.Fatalf("rung 1 of the plan's own rates: err %v, want QLM's overload refusal (the fixture must exercise the scaling)", err)
	}
	l := wrappedQLMLadder(t)
	prev := 0.0
	for _, k := range []int{1, 2, 4, 8, 16} {
		c, err := l.Rung(ctx, k)
		if err != nil {
			t.Fatalf("rung %d: %v", k, err)
		}
		if c.GPUs != k || !(c.Capacity[0] > prev) || c.Capacity[1] <= 0 {
			t.Errorf("rung %d: %d GPUs, capacity %v (previous rung %g): want %d GPUs and more capacity", k, c.GPUs, c.Capacity, prev, k)
		}
		prev = c.Capacity[0]
		p := c.Plan.(*formats.Plan)
		for i, cl := range llmspec.ClassesOf(p.Provenance.Embedded.Workload) {
			want := llmspec.ClassesOf(qlmFixture(t).Provenance.Embedded.Workload)[i].RateRPS * float64(k) / 16
			if math.Abs(cl.RateRPS-want) > 1e-9 {
				t.Errorf("rung %d: class %s planned for %g rps, want %g (the rung's share)", k, cl.Name, cl.RateRPS, want)
			}
		}
	}
}

// TestQLMLadderSolve: the ladder sizes a QLM plan by its capacity model.
func TestQLMLadderSolve(t *testing.T) {
	full, err := pq.PlanCapacity(qlmFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		share    float64 // of the whole cluster's capacity, per class
		min, max int
		over     bool
	}{
		{"a tenth: a small rung", 0.1, 1, 3, false},
		{"half: about half the cluster", 0.5, 7, 9, false},
		{"all of it: the whole cluster", 0.99, 16, 16, false},
		{"above the cluster: over budget", 1.5, 16, 16, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := wrappedQLMLadder(t)
			c, err := l.Solve(context.Background(), ap.Demand{Rates: []float64{tc.share * full["conv"], tc.share * full["code"]}})
			if err != nil {
				t.Fatal(err)
			}
			if c.GPUs < tc.min || c.GPUs > tc.max || c.OverBudget != tc.over {
				t.Errorf("%d GPUs (over budget %v), want %d–%d (%v)", c.GPUs, c.OverBudget, tc.min, tc.max, tc.over)
			}
		})
	}
}

// TestClassRateSolver: the cost objective's re-solve sets each class's rate_rps to its
// application's demand (on the grid); a plan without the classes is refused.
func TestClassRateSolver(t *testing.T) {
	base := qlmFixture(t)
	var got []llmspec.LLMClass
	resolve := func(_ context.Context, p *formats.Plan) (*formats.Plan, error) {
		got = llmspec.ClassesOf(p.Provenance.Embedded.Workload)
		return p, nil
	}
	r, err := NewRateSolver(base, []string{"code", "conv"}, resolve, qlmDeploy)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Solve(context.Background(), ap.Demand{Rates: []float64{5, 30}}); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"code": gridUp(5), "conv": gridUp(30)}
	for _, cl := range got {
		if cl.RateRPS != want[cl.Name] {
			t.Errorf("class %s re-solved for %g rps, want %g", cl.Name, cl.RateRPS, want[cl.Name])
		}
	}
	if llmspec.ClassesOf(base.Provenance.Embedded.Workload)[0].RateRPS != 40 {
		t.Errorf("the base plan's classes changed: %+v", llmspec.ClassesOf(base.Provenance.Embedded.Workload))
	}
	for _, tc := range []struct {
		name string
		apps []string
		plan *formats.Plan
		want string
	}{
		{"unknown class", []string{"chat"}, base, `no application "chat"`},
		{"no classes", []string{"m"}, fakePlan(), "no workload application"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewRateSolver(tc.plan, tc.apps, resolve, qlmDeploy); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// TestSetRatesEverySystem: the rate solver takes a plan of every system (its embedded
// workload's applications are RateTargeters) and moves the demand of every system's
// workload, through each section's RateTargeter, leaving the applications it does not name
// and the original workload as they were.
func TestSetRatesEverySystem(t *testing.T) {
	for _, file := range []string{
		"ppipe/workload.yaml", "pard/workload.json", "cascade/workload.yaml",
		"dyorc/workload.json", "llmdeploy/workload.yaml",
	} {
		t.Run(file, func(t *testing.T) {
			w, err := formats.ReadInto[*formats.Workload](filepath.Join("..", "..", "testdata", file), intree.Sections())
			if err != nil {
				t.Fatal(err)
			}
			before := w.RateTargets()
			if len(before) == 0 {
				t.Fatalf("%s: no rate targets", file)
			}
			first := before[0].Name
			base := &formats.Plan{Provenance: formats.Provenance{Embedded: &formats.EmbeddedInputs{Workload: w}}}
			if _, err := NewRateSolver(base, []string{first}, nil, nil); err != nil {
				t.Errorf("%s: the cost rate solver refuses it: %v", file, err)
			}
			c := *w
			setRates(&c, []string{first}, []float64{before[0].RateRPS*2 + 1})
			after := c.RateTargets()
			for i, rt := range after {
				want := before[i].RateRPS
				if rt.Name == first {
					want = before[i].RateRPS*2 + 1
				}
				if rt.RateRPS != want {
					t.Errorf("%s: rate %g, want %g", rt.Name, rt.RateRPS, want)
				}
			}
			if got := w.RateTargets(); got[0].RateRPS != before[0].RateRPS {
				t.Errorf("the original workload changed: %s at %g, was %g", first, got[0].RateRPS, before[0].RateRPS)
			}
		})
	}
}
