package calibrate

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
)

// TestKVMismatch: a replay that preempts requests whose measured streams never stall, or a run
// whose streams stall where the replay preempts none, is a kv-mismatch warning; agreement, or
// too few of either, is none.
func TestKVMismatch(t *testing.T) {
	p := &formats.LLMProfile{KVCapacityTokens: 1000, Iteration: &formats.LLMIteration{
		Prefill: []formats.PWLPoint{{Tokens: 1, Us: 1000}, {Tokens: 8192, Us: 9000}}, Decode: []formats.PWLPoint{{Tokens: 1, Us: 1000}},
	}} // the longest step is 10 ms: a stall is a gap over 30 ms
	mk := func(n, preempted, stalled int) ([]Request, []Timing) {
		reqs, tim := make([]Request, n), make([]Timing, n)
		for i := range reqs {
			reqs[i].MaxGap = 0.012
			tim[i].Done = true
			if i < preempted {
				tim[i].Preemptions = 1
			}
			if i < stalled {
				reqs[i].MaxGap = 0.2
			}
		}
		return reqs, tim
	}
	for _, c := range []struct {
		name                  string
		n, preempted, stalled int
		want                  string
	}{
		{"agree", 100, 10, 9, ""},
		{"replay preempts", 100, 10, 0, "the replay preempted 10 requests but the run's streams show 0 stalls"},
		{"run stalls", 100, 0, 12, "the run's streams show 12 stalls"},
		{"too few", 100, 2, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			reqs, tim := mk(c.n, c.preempted, c.stalled)
			w, ok := kvMismatch(reqs, tim, p)
			if ok != (c.want != "") || ok && (w.Name != WarnKVMismatch || !strings.Contains(w.Text, c.want)) {
				t.Errorf("warning %+v (%v), want %q", w, ok, c.want)
			}
		})
	}
}
