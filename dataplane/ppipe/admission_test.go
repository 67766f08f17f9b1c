package ppipe

import (
	"math/rand/v2"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestAdmissionOnIdlePipelines: the admission refinement drops a first-seen head whose
// near-planned batch no longer fits its deadline only where the pipeline is busy (its probe
// at the planned batch waits). On two-pipes (two L4s, 9/11/13/15 ms at batch 1–4: a batch-1
// pipeline and a batch-4 one, SLO 25 ms) A at 0 goes to the batch-1 pipeline; B at 1 ms and
// C at 2 ms wait on the idle batch-4 pipeline for more; at B's last instant for a batch of
// three (13 ms) the batch-1 pipeline is free again and takes B alone. C, first at the head
// then, 11 ms after it arrived, finds the batch-4 pipeline idle with a batch of 3 fitting
// its deadline, not 4: dropping it would free nothing for anyone, and a smaller batch serves
// it on time. A burst, where the pipelines are busy, still meets the refinement (TestDoor).
func TestAdmissionOnIdlePipelines(t *testing.T) {
	dep := loadFixture(t, "two-pipes.json")
	for _, admission := range []bool{true, false} {
		s := &miniSim{r: rand.New(rand.NewPCG(1, 2))}
		var done []dataplane.Request
		s.finish = func(r *dataplane.Request) { done = append(done, *r) }
		e, err := dataplane.NewEngine(dep, NewPPipe(PPipeOptions{Penalty: true, Admission: admission}), s)
		if err != nil {
			t.Fatal(err)
		}
		arrivals := []dataplane.Time{0, dataplane.Millisecond, 2 * dataplane.Millisecond}
		for len(arrivals) > 0 || len(s.h) > 0 {
			if len(arrivals) > 0 && (len(s.h) == 0 || arrivals[0] <= s.h[0].At) {
				if _, err := e.Arrive(arrivals[0], 0, 0); err != nil {
					t.Fatal(err)
				}
				arrivals = arrivals[1:]
				continue
			}
			it := s.h.Pop()
			if err := e.Handle(it.At, it.Val); err != nil {
				t.Fatal(err)
			}
		}
		if len(done) != 3 {
			t.Fatalf("admission %v: %d requests finished, want 3", admission, len(done))
		}
		for _, r := range done {
			if r.Outcome != dataplane.Completed || r.Done > r.Deadline {
				t.Errorf("admission %v: request %d (arrived %d µs): %v %q, done %d µs, deadline %d µs",
					admission, r.ID, r.Arrival, r.Outcome, r.Reason(), r.Done, r.Deadline)
			}
		}
	}
}
