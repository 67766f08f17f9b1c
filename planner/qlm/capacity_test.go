package qlm

import (
	"context"
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	"github.com/plan-dev/plan/planner"
)

// solveOn solves the bundled QLM example (testdata/qlm: Mistral-7B chat and batch classes,
// a Vicuna-13B class) on gpus A100s, with rate_rps of each class scaled by scale.
func solveOn(t *testing.T, gpus int, scale float64, edit func(w *formats.Workload)) *formats.Plan {
	t.Helper()
	in := inputs(t)
	c := *in.Cluster
	c.GPUs = []formats.GPUPool{in.Cluster.GPUs[0]}
	c.GPUs[0].Count, c.GPUs[0].PerServer = gpus, min(gpus, 8)
	in.Cluster = &c
	w := *in.Workload
	w.Sections = maps.Clone(w.Sections) // a copy: its own sections
	llmspec.SetClasses(&w, append([]llmspec.LLMClass(nil), llmspec.ClassesOf(&w)...))
	for i := range llmspec.ClassesOf(&w) {
		llmspec.ClassesOf(&w)[i].RateRPS *= scale
	}
	if edit != nil {
		edit(&w)
	}
	in.Workload = &w
	p, err := Solve(in, Options{Sim: testSim})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func instancesOf(p *formats.Plan, model string) int {
	n := 0
	for _, in := range qlmsec.PlanOf(p).Instances {
		if in.Model == model {
			n++
		}
	}
	return n
}

// TestPlanCapacityGrowsWithInstances: a model's capacity is its instances' (the same mix
// rate each), so it grows in proportion to the instances a plan gives the model — what lets
// the autopilot size a QLM plan on a shrunken cluster — and each class gets its share of
// its model's capacity at the plan's class mix (mistral-chat and mistral-batch: 3 rps each).
func TestPlanCapacityGrowsWithInstances(t *testing.T) {
	base := solveOn(t, 2, 1, nil)
	one, err := PlanCapacity(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		gpus int
	}{{"4 GPUs", 4}, {"8 GPUs", 8}, {"16 GPUs", 16}} {
		t.Run(tc.name, func(t *testing.T) {
			p := solveOn(t, tc.gpus, 1, nil)
			got, err := PlanCapacity(p)
			if err != nil {
				t.Fatal(err)
			}
			for cls, model := range map[string]string{"mistral-chat": "mistral-7b", "mistral-batch": "mistral-7b", "vicuna-chat": "vicuna-13b"} {
				want := one[cls] * float64(instancesOf(p, model)) / float64(instancesOf(base, model))
				if one[cls] <= 0 || math.Abs(got[cls]-want) > 1e-9*want {
					t.Errorf("%s: %g rps on %d instances of %s, want %g (%g on %d)", cls, got[cls], instancesOf(p, model), model, want, one[cls], instancesOf(base, model))
				}
			}
			if math.Abs(got["mistral-chat"]-got["mistral-batch"]) > 1e-9*got["mistral-chat"] {
				t.Errorf("mistral classes at equal rates get %g and %g rps: want equal shares", got["mistral-chat"], got["mistral-batch"])
			}
		})
	}
}

// TestPlanCapacityMix: the capacity follows the plan's class mix (not the rate level): a
// class with twice the rate gets twice the share; classes all at 0 share equally; the
// level of the rates does not change what the instances serve.
func TestPlanCapacityMix(t *testing.T) {
	ref, err := PlanCapacity(solveOn(t, 4, 1, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		scale     float64
		edit      func(w *formats.Workload)
		chatShare float64 // mistral-chat's share of mistral-7b's capacity
	}{
		{"equal rates", 1, nil, 0.5},
		{"half the rates", 0.5, nil, 0.5},
		{"chat twice batch", 1, func(w *formats.Workload) { llmspec.ClassesOf(w)[0].RateRPS = 6 }, 2.0 / 3},
		{"all zero", 0, nil, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PlanCapacity(solveOn(t, 4, tc.scale, tc.edit))
			if err != nil {
				t.Fatal(err)
			}
			total := got["mistral-chat"] + got["mistral-batch"]
			if share := got["mistral-chat"] / total; math.Abs(share-tc.chatShare) > 1e-9 {
				t.Errorf("mistral-chat gets %.4f of mistral-7b's %g rps, want %.4f", share, total, tc.chatShare)
			}
			if tc.edit == nil && math.Abs(got["vicuna-chat"]-ref["vicuna-chat"]) > 1e-9*ref["vicuna-chat"] {
				t.Errorf("vicuna-chat: %g rps at rates ×%g, %g at ×1: the level must not matter", got["vicuna-chat"], tc.scale, ref["vicuna-chat"])
			}
		})
	}
}

// TestPlanCapacityZero: a class whose model no instance hosts, or whose longer requests meet
// their SLO at no batch, serves nothing.
func TestPlanCapacityZero(t *testing.T) {
	for _, tc := range []struct {
		name, class string
		edit        func(p *formats.Plan)
	}{
		{"no instance of the model", "vicuna-chat", func(p *formats.Plan) {
			for i := range qlmsec.PlanOf(p).Instances {
				qlmsec.PlanOf(p).Instances[i].Model = "mistral-7b"
			}
		}},
		{"SLO below the lifetime", "mistral-chat", func(p *formats.Plan) {
			llmspec.ClassesOf(p.Provenance.Embedded.Workload)[0].SLO = formats.Duration(500 * time.Millisecond)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := solveOn(t, 4, 1, nil)
			w := *p.Provenance.Embedded.Workload
			w.Sections = maps.Clone(w.Sections) // a copy: its own sections
			llmspec.SetClasses(&w, append([]llmspec.LLMClass(nil), llmspec.ClassesOf(&w)...))
			p.Provenance.Embedded.Workload = &w
			tc.edit(p)
			got, err := PlanCapacity(p)
			if err != nil {
				t.Fatal(err)
			}
			if got[tc.class] != 0 {
				t.Errorf("%s: %g rps, want 0", tc.class, got[tc.class])
			}
		})
	}
}

// TestPlanCapacityErrors: a plan without what the model needs is an error naming it.
func TestPlanCapacityErrors(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		edit       func(p *formats.Plan)
	}{
		{"no qlm section", "no qlm section", func(p *formats.Plan) { qlmsec.SetPlan(p, nil) }},
		{"no embedded inputs", "provenance.embedded", func(p *formats.Plan) { p.Provenance.Embedded = nil }},
		{"instance without profile", "qlm.instances[0]: model llama-70b", func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[0].Model = "llama-70b" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := solveOn(t, 2, 1, nil)
			tc.edit(p)
			if _, err := PlanCapacity(p); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// TestPlanCapacityCostPlan: a least-cost plan (SolveCost) is sized by the same rule at each
// bucket's upper edge, so its capacity covers the rates it was solved for.
func TestPlanCapacityCostPlan(t *testing.T) {
	in := inputs(t)
	c := *in.Cluster
	c.GPUs = append([]formats.GPUPool(nil), c.GPUs...)
	avail := 64
	c.GPUs[0].Count, c.GPUs[0].Available = 0, &avail
	in.Cluster = &c
	p, err := SolveCost(context.Background(), in, Options{Sim: testSim}, 0, planner.DefaultGap)
	if err != nil {
		if strings.Contains(err.Error(), "HiGHS") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	got, err := PlanCapacity(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range llmspec.ClassesOf(in.Workload) {
		if got[cl.Name] < cl.RateRPS {
			t.Errorf("%s: capacity %g rps below the %g rps the fleet was sized for", cl.Name, got[cl.Name], cl.RateRPS)
		}
	}
}
