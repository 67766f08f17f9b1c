package dataplane

import "testing"

// TestWorkGPUTwoHops: the requests of a two-hop batch get both hops' shares when its second
// hop ends, and only the first hop's when the second hop's worker fails before it runs: what
// they got when each hop added its share at its end (Batch.lazyWork).
func TestWorkGPUTwoHops(t *testing.T) {
	for _, fail := range []bool{false, true} {
		r := newRig(t, testDep([][]StageID{{1}, nil}, nil), dispatchOnSecond(0, 1))
		for range 2 {
			if _, err := r.e.Arrive(0, 0, 0); err != nil {
				t.Fatal(err)
			}
		}
		firstDone := func() bool { return r.e.Batch(0).Hops[0].End >= 0 }
		now := r.drive(0, firstDone)
		want := 500.0 // 1,000 µs over a batch of 2 on whole GPUs
		if fail {
			if err := r.e.Handle(now, Event{Kind: EvWorkerDown, Worker: 1}); err != nil {
				t.Fatal(err)
			}
		} else {
			want = 1000
		}
		r.drive(now, nil)
		for id := range ReqID(2) {
			q := r.e.Req(id)
			if q.Outcome == Pending || q.WorkGPU != want {
				t.Errorf("fail %v: r%d is %v with %g GPU-µs, want %g", fail, id, q.Outcome, q.WorkGPU, want)
			}
		}
	}
}
