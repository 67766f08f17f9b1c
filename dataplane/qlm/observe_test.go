package qlm

import (
	"math"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/sim"
)

// observed is one ObserveInstance call.
type observed struct {
	inst             string
	waiting, running float64
}

// twoInstances returns an attached QLM policy over two identical instances of the hand
// profile (Θ = 5000 tok/s) with one class of μ = 50 output tokens: an external request is
// 50/5000 = 10 ms of drain (QLM §6, Eq. 2).
func twoInstances(t *testing.T, names ...string) (*Policy, *qlmQueue) {
	t.Helper()
	var ins []Instance
	for _, n := range names {
		ins = append(ins, Instance{Name: n, GPU: "A100", Model: "m"})
	}
	dep, err := Build([]llmspec.LLMClass{oneClass("m", time.Hour)}, Setup{Profiles: []formats.LLMProfile{handProfile()}, Instances: ins})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := Registry().New(dep, dataplane.Config{Policy: PolicyQLM}, PolicyQLM)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.New(dep, pol, []sim.Source{&sim.Times{}}, sim.Options{Duration: dataplane.Second}); err != nil {
		t.Fatal(err)
	}
	p := pol.(*Policy)
	q := p.q.(*qlmQueue)
	q.init(p)
	return p, q
}

// TestExternalLoadPlacement: new request groups go to the instance with the least estimated
// drain (QLM §6–7), which counts the requests an instance's engine reports beyond the ones QLM
// has running there. Four groups (four prompt-length buckets) alternate over two idle
// instances; an engine reporting 50 external requests (0.5 s of drain) gets none of them.
func TestExternalLoadPlacement(t *testing.T) {
	cases := []struct {
		name string
		obs  []observed
		// own is the number of QLM sequences running on each instance.
		own    int
		wantI0 int
	}{
		{"no observation", nil, 0, 2},
		{"i0 engine has a queue", []observed{{"i0", 50, 0}}, 0, 0},
		{"i1 engine has a queue", []observed{{"i1", 40, 10}}, 0, 4},
		{"gauges count only QLM's own requests", []observed{{"i0", 0, 2}}, 2, 2},
		{"a later zero observation clears it", []observed{{"i0", 50, 0}, {"i0", 0, 0}}, 0, 2},
		{"unknown instance, NaN and negative values", []observed{{"i9", 50, 0}, {"i0", math.NaN(), -3}}, 0, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, q := twoInstances(t, "i0", "i1")
			id := dataplane.ReqID(1000)
			for _, in := range p.inst {
				for range tc.own {
					id++
					in.Place(&seq{ID: id, Model: "m", Prompt: 100, Inst: in.ID})
				}
			}
			for _, o := range tc.obs {
				p.ObserveInstance(0, o.inst, o.waiting, o.running)
			}
			for i, prompt := range []int{100, 300, 600, 1200} {
				q.add(p, 0, &seq{ID: dataplane.ReqID(i + 1), Model: "m", Prompt: prompt, Out: 50, Deadline: dataplane.Time(time.Hour / time.Microsecond), Inst: -1})
			}
			if got := len(q.vq[0]); got != tc.wantI0 || len(q.vq[0])+len(q.vq[1]) != 4 {
				t.Errorf("groups on i0 %d, on i1 %d; want %d on i0", got, len(q.vq[1]), tc.wantI0)
			}
		})
	}
}

// TestExternalLoadEstimate: on a single instance the RCT estimate of a new request's
// completion (QLM §6) is later by the drain of the external requests: 50 × 50 tok / 5000 tok/s
// = 0.5 s.
func TestExternalLoadEstimate(t *testing.T) {
	estimate := func(obs []observed) dataplane.Time {
		p, q := twoInstances(t, "i0")
		for _, o := range obs {
			p.ObserveInstance(0, o.inst, o.waiting, o.running)
		}
		q.add(p, 0, &seq{ID: 1, Model: "m", Prompt: 100, Out: 50, Deadline: dataplane.Time(time.Hour / time.Microsecond), Inst: -1})
		return p.stats.Predicted[1]
	}
	base, loaded := estimate(nil), estimate([]observed{{"i0", 30, 20}})
	if d := loaded - base; d < 499*dataplane.Millisecond || d > 501*dataplane.Millisecond {
		t.Errorf("estimate %v µs without external load, %v µs with 50 external requests: want 0.5 s later", base, loaded)
	}
}

// TestExternalLoadPulling: request pulling (QLM §5) takes a waiting group from a busy
// instance to an idle one only when the idle one would start it sooner, after the external
// load its engine reports.
func TestExternalLoadPulling(t *testing.T) {
	cases := []struct {
		name     string
		obs      []observed
		wantPull bool
	}{
		{"idle instance pulls", nil, true},
		{"idle instance's engine is busier", []observed{{"i1", 200, 0}}, false},
		{"busy instance's engine is busier still", []observed{{"i1", 200, 0}, {"i0", 400, 0}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, q := twoInstances(t, "i0", "i1")
			i0, i1 := p.inst[0], p.inst[1]
			// i0 runs 10 sequences (10 × 50 tok = 0.1 s of residual work); one group waits.
			for k := range 10 {
				i0.Place(&seq{ID: dataplane.ReqID(100 + k), Model: "m", Prompt: 100, Inst: 0})
			}
			g := &group{id: 7, model: "m", mu: 50, sd: 20, maxOut: 200, deadline: dataplane.Time(time.Hour / time.Microsecond), vq: 0}
			g.members = []*seq{{ID: 1, Model: "m", Prompt: 100, Out: 50, Tag: &seqExt{group: g}, Inst: 0, Deadline: g.deadline}}
			q.vq[0] = []*group{g}
			q.mark(0) // as add does: pull visits the marked queues
			for _, o := range tc.obs {
				p.ObserveInstance(0, o.inst, o.waiting, o.running)
			}
			got := q.pull(p, i1)
			if (got != nil) != tc.wantPull {
				t.Errorf("pulled %v, want a pull: %v", got != nil, tc.wantPull)
			}
		})
	}
}
