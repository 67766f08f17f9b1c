package pard

import (
	"context"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/pardsec"
	demo "github.com/plan-dev/plan/internal/onformats/demo/pard"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/solver"
)

func inputs(w *formats.Workload) Inputs {
	return Inputs{Workload: w, Profiles: []formats.Profile{*demo.Profile()}, Cluster: demo.Cluster()}
}

// TestProvisionBadInput: bad inputs are rejected before solving, with the reason.
func TestProvisionBadInput(t *testing.T) {
	lv, _ := demo.AppByName("lv")
	mk := func(f func(p *pardsec.Pipeline)) *formats.Workload {
		w := demo.Workload(100)
		pardsec.SetPipelines(w, []pardsec.Pipeline{demo.Pipeline(lv, 100)})
		f(&pardsec.PipelinesOf(w)[0])
		return w
	}
	cases := []struct {
		name string
		w    *formats.Workload
		want string
	}{
		{"cycle", mk(func(p *pardsec.Pipeline) {
			p.Modules[0].After = []pardsec.Edge{{Module: "pose-recognition"}}
		}), "the modules form a cycle"},
		{"no profile", mk(func(p *pardsec.Pipeline) { p.Modules[2].Model = "missing-model" }),
			"pipelines[0].modules[2].model: missing-model: no profile has this model"},
		{"slo below batch-1 latencies", mk(func(p *pardsec.Pipeline) { p.SLO = formats.Duration(50 * time.Millisecond) }),
			"below the sum of batch-1 latencies 61.5 ms"},
		{"unknown edge", mk(func(p *pardsec.Pipeline) { p.Modules[1].After = []pardsec.Edge{{Module: "nope"}} }), "unknown module"},
		{"two sinks", mk(func(p *pardsec.Pipeline) { p.Modules[4].After = []pardsec.Edge{{Module: "face-recognition"}} }), "exactly one last module"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Provision(context.Background(), inputs(tc.w), Options{})
			if !errors.Is(err, ErrBadInput) {
				t.Fatalf("err = %v, want ErrBadInput", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// TestProvisionTimeLimit: a solver time limit without any provisioning was
// reported as bad input (exit 2); it is "no plan found within the time limit" (exit 1), and
// the message says to raise --time-limit.
func TestProvisionTimeLimit(t *testing.T) {
	_, err := Provision(context.Background(), inputs(demo.Workload(150)), Options{TimeLimit: time.Nanosecond})
	skipWithoutSolver(t, err)
	if !errors.Is(err, planner.ErrNoSolution) || errors.Is(err, ErrBadInput) {
		t.Fatalf("err = %v, want planner.ErrNoSolution and not ErrBadInput", err)
	}
	if !strings.Contains(err.Error(), "raise --time-limit") {
		t.Errorf("err = %v, want advice to raise --time-limit", err)
	}
}

func skipWithoutSolver(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, solver.ErrBackendUnavailable) && os.Getenv("PLAN_REQUIRE_ALL") != "1" {
		t.Skip("HiGHS backend unavailable")
	}
}

// TestProvisionBundled provisions the four apps and checks the rule and the worker counts.
func TestProvisionBundled(t *testing.T) {
	const rate = 150.0
	// The test asserts an optimal plan: a time limit is not what it measures, and the 10 s
	// default ran out under parallel test load.
	pl, err := Provision(context.Background(), inputs(demo.Workload(rate)), Options{TimeLimit: 10 * time.Minute})
	skipWithoutSolver(t, err)
	if err != nil {
		t.Fatal(err)
	}
	if errs := pl.Validate(intree.Sections()); len(errs) > 0 {
		t.Fatal(errs)
	}
	if pl.Provenance.Status != "optimal" {
		t.Errorf("status %s", pl.Provenance.Status)
	}
	for _, a := range pardsec.PlanOf(pl).Apps {
		app, _ := demo.AppByName(a.Name)
		// Σ over the longest path of 2·d ≤ 0.8·SLO (da: det + max(face, pose) + expr + eye).
		lat := map[string]float64{}
		for _, m := range a.Modules {
			lat[m.Name] = m.LatencyUs
			if want := int(math.Ceil(rate * m.LatencyUs / 1e6 / float64(m.Batch))); m.Workers != want {
				t.Errorf("%s/%s: %d workers, want ceil(rate·d/b) = %d", a.Name, m.Name, m.Workers, want)
			}
		}
		var longest func(name string) float64
		longest = func(name string) float64 {
			best := 0.0
			for _, m := range app.Modules {
				for _, u := range m.After {
					if u == name {
						best = math.Max(best, longest(m.Name))
					}
				}
			}
			return lat[name] + best
		}
		if s := 2 * longest(app.Modules[0].Name); s > 0.8*float64(time.Duration(a.SLO).Microseconds())+1e-6 {
			t.Errorf("%s: Σ2·d = %.0f µs > 0.8·SLO", a.Name, s)
		}
	}
}
