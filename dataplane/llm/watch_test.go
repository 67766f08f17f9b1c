package llm_test

import (
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/llm/sched/fcfs"
)

// TestReplayWatchStops: a watch that stops at the k-th final result leaves every result it
// was told of as the full replay has it, and stops the replay there: requests it was not
// told of stay unfinished. Both replays, aggregated and disaggregated.
func TestReplayWatchStops(t *testing.T) {
	pre, dec := longProfiles()
	reqs := poisson(7, 200, 1.2, 8000, 200)
	replays := []struct {
		name string
		run  func(llm.Watch) []llm.Result
	}{
		{"aggregated", func(w llm.Watch) []llm.Result {
			res, _ := llm.ReplayWatched(llm.NewModel(dec), reqs, fcfs.New(), w)
			return res
		}},
		{"disaggregated", func(w llm.Watch) []llm.Result {
			res, _, err := llm.ReplayDisagg(llm.Disagg{Prefill: llm.NewModel(pre), Decode: llm.NewModel(dec), P: 1, D: 1, LinkGBps: 50, Watch: w}, reqs)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}},
	}
	for _, r := range replays {
		t.Run(r.name, func(t *testing.T) {
			full := r.run(nil)
			for _, k := range []int{1, 50, len(reqs)} {
				told := map[int]bool{}
				got := r.run(func(i int, res *llm.Result) bool {
					if told[i] {
						t.Errorf("request %d's final result told twice", i)
					}
					told[i] = true
					if final(*res) != final(full[i]) {
						t.Errorf("request %d told %+v, the full replay has %+v", i, *res, full[i])
					}
					return len(told) == k
				})
				if len(told) != k {
					t.Fatalf("stop at %d: told of %d results", k, len(told))
				}
				for i := range got {
					if told[i] {
						continue
					}
					if got[i].Done != dataplane.Never || got[i].Refused {
						t.Errorf("stop at %d: request %d not told of, but final: %+v", k, i, got[i])
					}
				}
			}
		})
	}
}

// final is what a Result holds when a watch is told of it (its counts are added at the
// replay's end).
func final(r llm.Result) llm.Result {
	r.Preemptions, r.Cached = 0, 0
	return r
}
