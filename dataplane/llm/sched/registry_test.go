package sched_test

import (
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/llm/sched"
	"github.com/plan-dev/plan/formats"
)

// shortestFirst is a toy waiting-queue policy defined here, outside the engine and the
// registry's packages: shortest prompt first. Registering it takes one Spec; the engine runs
// it unchanged.
func shortestFirst() llm.Queue {
	return &llm.Ordered{Less: func(a, b *llm.Seq) bool {
		if a.Prompt != b.Prompt {
			return a.Prompt < b.Prompt
		}
		return llm.ByArrival(a, b)
	}}
}

func toyModel() *llm.Model {
	one := 1
	return llm.NewModel(&formats.LLMProfile{Model: "m", GPU: "A100", GPUCount: 1, KVBytesPerToken: 1, KVCapacityTokens: 100000,
		Iteration: &formats.LLMIteration{
			Prefill: []formats.PWLPoint{{Tokens: 1, Us: 1000}},
			Decode:  []formats.PWLPoint{{Tokens: 1, Us: 500}},
		}, Engine: &formats.LLMEngine{MaxNumSeqs: 1, OutputDelaySteps: &one}})
}

// TestToyPolicyRunsThroughEngine registers shortestFirst beside the in-tree policies and
// replays the same requests under it and under fcfs: one sequence slot, a long prompt first
// and a short one after it, both waiting behind a running request. fcfs serves the long one
// first, shortestFirst the short one.
func TestToyPolicyRunsThroughEngine(t *testing.T) {
	reg, err := sched.NewRegistry(append(sched.InTree(), sched.Spec{Name: "shortest-first", Doc: "toy", New: shortestFirst})...)
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.Names(); len(got) != 4 || got[3] != "shortest-first" {
		t.Fatalf("names %v", got)
	}
	reqs := []llm.Request{{ID: 0, Arrival: 0, Prompt: 10, Out: 3}, {ID: 1, Arrival: 10, Prompt: 500, Out: 2}, {ID: 2, Arrival: 20, Prompt: 5, Out: 2}}
	first := map[string][]dataplane.Time{}
	for _, name := range []string{"fcfs", "shortest-first"} {
		q, err := reg.New(name)
		if err != nil {
			t.Fatal(err)
		}
		res, _ := llm.Replay(toyModel(), reqs, q)
		for _, r := range res {
			if r.Refused || r.Done == dataplane.Never {
				t.Fatalf("%s: request %d not served: %+v", name, r.ID, r)
			}
			first[name] = append(first[name], r.FirstToken)
		}
	}
	if f := first["fcfs"]; f[1] >= f[2] {
		t.Errorf("fcfs first tokens %v: want the long prompt (1) before the short one (2)", f)
	}
	if s := first["shortest-first"]; s[2] >= s[1] {
		t.Errorf("shortest-first first tokens %v: want the short prompt (2) before the long one (1)", s)
	}
}

// TestRegistry: the in-tree policies are listed once, an unknown name is an error, and a
// duplicate registration is refused.
func TestRegistry(t *testing.T) {
	reg := sched.Default()
	for _, name := range []string{"fcfs", "priority", "edf"} {
		if _, err := reg.New(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := reg.New("lottery"); err == nil {
		t.Error("unknown policy accepted")
	}
	if _, err := sched.NewRegistry(append(sched.InTree(), sched.InTree()[0])...); err == nil {
		t.Error("duplicate policy accepted")
	}
}

// TestInTreeOrders: each in-tree policy's admission order, where a preempted request goes
// back, and priority's preemption victim.
func TestInTreeOrders(t *testing.T) {
	a := &llm.Seq{ID: 1, Arrival: 0, Prio: 5, Deadline: 900}
	b := &llm.Seq{ID: 2, Arrival: 10, Prio: 1, Deadline: 500}
	c := &llm.Seq{ID: 3, Arrival: 20, Prio: 1, Deadline: 700}
	for _, tc := range []struct {
		name           string
		want, requeued []dataplane.ReqID
	}{
		// fcfs puts a preempted request back at the front (c was admitted, then preempted).
		{"fcfs", []dataplane.ReqID{1, 2, 3}, []dataplane.ReqID{3, 1, 2}},
		{"priority", []dataplane.ReqID{2, 3, 1}, []dataplane.ReqID{2, 3, 1}},
		{"edf", []dataplane.ReqID{2, 3, 1}, []dataplane.ReqID{2, 3, 1}},
	} {
		q, _ := sched.Default().New(tc.name)
		for _, s := range []*llm.Seq{c, a, b} {
			q.Push(s)
		}
		if got := ids(q); !equal(got, tc.want) {
			t.Errorf("%s: order %v, want %v", tc.name, got, tc.want)
		}
		q.Admit(nil, c)
		q.Requeue(nil, c)
		if got := ids(q); !equal(got, tc.requeued) {
			t.Errorf("%s: after requeue %v, want %v", tc.name, got, tc.requeued)
		}
	}
	q, _ := sched.Default().New("priority")
	e := &llm.Engine{}
	for _, s := range []*llm.Seq{b, a, c} {
		e.Place(s)
	}
	if v := q.(llm.VictimPicker).Victim(e); v != a {
		t.Errorf("priority victim %d, want 1 (lowest priority)", v.ID)
	}
	e.Abort(a)
	if v := q.(llm.VictimPicker).Victim(e); v != c {
		t.Errorf("priority victim %d, want 3 (same priority, later arrival)", v.ID)
	}
}

func ids(q llm.Queue) []dataplane.ReqID {
	var out []dataplane.ReqID
	for i := 0; i < q.Len(); i++ {
		out = append(out, q.At(i).ID)
	}
	return out
}

func equal(a, b []dataplane.ReqID) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
