package workload

import (
	"reflect"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestMisses: a request misses an SLO only past its limit (at it, it holds), and an SLO not
// set is never missed.
func TestMisses(t *testing.T) {
	s := LLMSLOs{E2E: 2e6, TTFT: 5e5, TPOT: 5e4}
	cases := []struct {
		name            string
		s               LLMSLOs
		e2e, ttft       int64
		tpot            float64
		e2eM, ttftM, tM bool
	}{
		{"all within", s, 1e6, 4e5, 4e4, false, false, false},
		{"at the limits", s, 2e6, 5e5, 5e4, false, false, false},
		{"just past each", s, 2e6 + 1, 5e5 + 1, 5e4 + 0.5, true, true, true},
		{"ttft and tpot not set", LLMSLOs{E2E: 2e6}, 1e6, 9e9, 9e9, false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, f, p := c.s.E2EMissed(dataplane.Time(c.e2e)), c.s.TTFTMissed(dataplane.Time(c.ttft)), c.s.TPOTMissed(c.tpot)
			if e != c.e2eM || f != c.ttftM || p != c.tM {
				t.Errorf("misses e2e %t ttft %t tpot %t, want %t %t %t", e, f, p, c.e2eM, c.ttftM, c.tM)
			}
		})
	}
}

// TestLLMChecks: each SLO is judged at its own percentile over every request of the class
// (a dropped request meets none); only the SLOs a class sets are checked.
func TestLLMChecks(t *testing.T) {
	// 100 requests: 4 dropped, 96 answered; 2 past the deadline, 8 late first tokens, 1 slow TPOT.
	m := &AppMetrics{Requests: 100, Dropped: 4, LLM: &LLMMetrics{Answered: 96, E2EMissed: 2, TTFTMissed: 8, TPOTMissed: 1}}
	cases := []struct {
		name string
		s    LLMSLOs
		want []SLOCheck
	}{
		{"e2e only at p90", LLMSLOs{E2E: 2e6, E2EP: 0.9},
			[]SLOCheck{{SLO: "slo", LimitUs: 2e6, Percentile: 0.9, Share: 0.94, Met: true}}},
		{"ttft at p90 misses, tpot at p95 holds", LLMSLOs{E2E: 2e6, TTFT: 5e5, TPOT: 5e4, E2EP: 0.9, TTFTP: 0.9, TPOTP: 0.95},
			[]SLOCheck{{SLO: "slo", LimitUs: 2e6, Percentile: 0.9, Share: 0.94, Met: true},
				{SLO: "ttft_slo", LimitUs: 5e5, Percentile: 0.9, Share: 0.88, Met: false},
				{SLO: "tpot_slo", LimitUs: 5e4, Percentile: 0.95, Share: 0.95, Met: true}}},
		{"p99 of everything", LLMSLOs{E2E: 2e6, E2EP: 0.99}, []SLOCheck{{SLO: "slo", LimitUs: 2e6, Percentile: 0.99, Share: 0.94, Met: false}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := LLMChecks(c.s, m)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("%+v\nwant %+v", got, c.want)
			}
			want := true
			for _, x := range c.want {
				want = want && x.Met
			}
			if AllMet(got) != want {
				t.Errorf("AllMet %v, want %v", AllMet(got), want)
			}
		})
	}
	if LLMChecks(LLMSLOs{E2E: 1}, &AppMetrics{Requests: 3}) != nil {
		t.Error("checks of an application without LLM metrics")
	}
}
