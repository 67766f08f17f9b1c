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

// TestHoldOverhead: the per-step overhead is held at 0, and said so, when the fitted
// requests' decode steps (their measured load on the decode curve) span under minDecodeSpan;
// a run whose requests decode alone and in a full batch, or one whose decode scale is
// already held, leaves it free.
func TestHoldOverhead(t *testing.T) {
	p := formats.LLMProfile{Iteration: &formats.LLMIteration{
		Prefill: []formats.PWLPoint{{Tokens: 1, Us: 1000}, {Tokens: 8192, Us: 9000}},
		Decode:  []formats.PWLPoint{{Tokens: 1, Us: 1000}, {Tokens: 256, Us: 4000}},
	}}
	// alone: n requests one after another, each decoding by itself for a second; burst: as
	// many again sent at once, decoding beside each other.
	mk := func(alone, burst, out int) []Request {
		var reqs []Request
		for i := range alone {
			reqs = append(reqs, Request{Arrival: float64(2 * i), TTFT: 0.1, E2E: 1, PromptTokens: 64 + 40*i, OutputTokens: out})
		}
		for i := range burst {
			reqs = append(reqs, Request{Arrival: float64(2 * alone), TTFT: 0.1, E2E: 1, PromptTokens: 64 + 40*i, OutputTokens: out})
		}
		return reqs
	}
	for _, c := range []struct {
		name       string
		reqs       []Request
		held       bool
		decodeHeld bool
	}{
		{"alone", mk(64, 0, 100), true, false},
		{"full batch", mk(32, 200, 100), false, false},
		{"alone, no decode", mk(64, 0, 1), false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &search{p: p}
			s.parts = []*part{{reqs: c.reqs, nFit: len(c.reqs)}}
			var res Result
			s.hold(nil, &res)
			if s.fixed[2] != c.held || (res.overheadHeld != "") != c.held || s.fixed[1] != c.decodeHeld {
				t.Errorf("overhead held %v (%q), decode held %v; want %v, %v", s.fixed[2], res.overheadHeld, s.fixed[1], c.held, c.decodeHeld)
			}
			if c.held && !strings.Contains(res.overheadHeld, "step overhead held at 0") {
				t.Errorf("held without saying why: %q", res.overheadHeld)
			}
		})
	}
}

// TestSearchedFit: a search that replays only a run's first n requests fits those of them
// that finished, as measured, before the first one left out was sent (later ones would have
// shared their steps), and at least minFit; a search that replays the whole run fits all.
func TestSearchedFit(t *testing.T) {
	// Request i is sent at i s and lasts e2e[i] s.
	mk := func(e2e ...float64) []Request {
		reqs := make([]Request, len(e2e))
		for i, e := range e2e {
			reqs[i] = Request{Arrival: float64(i), E2E: e}
		}
		return reqs
	}
	for _, c := range []struct {
		name string
		reqs []Request
		n    int
		want int
	}{
		{"whole run", mk(5, 5, 5, 5), 4, 4},
		{"all done before the cut", mk(0.5, 0.5, 0.5, 0.5, 0.5, 0.5), 4, 4},
		{"the last still running", mk(0.5, 0.5, 0.5, 1.5, 0.5, 0.5), 4, 3},
		{"an early one still running", mk(0.5, 4.5, 0.5, 0.5, 0.5, 0.5), 4, minFit},
		{"done at the cut", mk(4, 0.5, 0.5, 0.5, 0.5), 4, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := searchedFit(c.reqs, c.n); got != c.want {
				t.Errorf("searchedFit(n=%d) = %d, want %d", c.n, got, c.want)
			}
		})
	}
}
