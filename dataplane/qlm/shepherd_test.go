package qlm

import (
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/sim"
)

// runTimes runs policy pol on one hand-profile instance with requests arriving at the given
// times with the given token counts, and returns each request's first-token and done time.
func runTimes(t *testing.T, pol string, at []dataplane.Time, in, out []int32) (ttft, done map[dataplane.ReqID]dataplane.Time) {
	t.Helper()
	dep, err := Build([]llmspec.LLMClass{oneClass("m", time.Minute)}, Setup{Profiles: []formats.LLMProfile{handProfile()}, Instances: []Instance{{Name: "i0", GPU: "A100", Model: "m"}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Registry().New(dep, dataplane.Config{Policy: pol}, PolicyQLM)
	if err != nil {
		t.Fatal(err)
	}
	done = map[dataplane.ReqID]dataplane.Time{}
	s, err := sim.New(dep, p, []sim.Source{&sim.Times{T: at}}, sim.Options{Duration: 10 * dataplane.Second,
		Attrs: func(_ dataplane.AppID, n int64) dataplane.Attrs {
			return dataplane.Attrs{InTokens: in[n], OutTokens: out[n]}
		},
		OnFinish: func(now dataplane.Time, r *dataplane.Request) { done[r.ID] = now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	st := p.(*Policy).Stats()
	ttft = map[dataplane.ReqID]dataplane.Time{}
	for id := range done {
		ttft[id] = st.TTFT[id] + at[id]
	}
	return ttft, done
}

// TestShepherdStaticBatch: SHEPHERD-like batches run to completion (QLM §8): a request
// arriving while a batch decodes waits for the whole batch, where vLLM's continuous batching
// admits it at the next iteration.
func TestShepherdStaticBatch(t *testing.T) {
	at := []dataplane.Time{0, 3000}
	in := []int32{100, 100}
	out := []int32{20, 5}
	for _, c := range []struct {
		pol    string
		static bool
	}{{PolicyShepherd, true}, {PolicyFCFS, false}} {
		t.Run(c.pol, func(t *testing.T) {
			first, done := runTimes(t, c.pol, at, in, out)
			if len(done) != 2 {
				t.Fatalf("%d of 2 requests finished", len(done))
			}
			if c.static && first[1] <= done[0] {
				t.Fatalf("late request's first token at %d, before the static batch ended at %d", first[1], done[0])
			}
			if !c.static && first[1] >= done[0] {
				t.Fatalf("continuous batching: late request's first token at %d, not before the batch ended at %d", first[1], done[0])
			}
		})
	}
}

// TestShepherdPreemptsForDoubleBatch: a feasible batch twice the running one's size preempts
// it (QLM §8): two requests arriving during a one-request batch start first, and the
// preempted request finishes after both.
func TestShepherdPreemptsForDoubleBatch(t *testing.T) {
	first, done := runTimes(t, PolicyShepherd, []dataplane.Time{0, 3000, 3000}, []int32{100, 100, 100}, []int32{40, 5, 5})
	if len(done) != 3 {
		t.Fatalf("%d of 3 requests finished", len(done))
	}
	if !(done[0] > done[1] && done[0] > done[2] && first[1] < done[0]) {
		t.Fatalf("no preemption: done %v, first tokens %v", done, first)
	}
}
