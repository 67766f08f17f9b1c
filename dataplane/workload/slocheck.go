package workload

import (
	"math"
	"sort"

	"github.com/plan-dev/plan/dataplane"
)

// LLMSLOs are an LLM class's SLOs (0 = not set; E2E always is) and the share of requests
// each must hold for (llmspec.LLMClass.Percentiles).
type LLMSLOs struct {
	E2E, TTFT, TPOT    dataplane.Time
	E2EP, TTFTP, TPOTP float64
}

// SLOCheck is one SLO of an LLM class judged at its percentile: the share of the class's
// requests that met it (a dropped or cancelled request meets none) against the percentile.
type SLOCheck struct {
	// SLO is "slo" (end to end), "ttft_slo" or "tpot_slo"; LimitUs its bound (TPOT: per
	// output token).
	SLO        string  `json:"slo"`
	LimitUs    float64 `json:"limit_us"`
	Percentile float64 `json:"percentile"`
	Share      float64 `json:"share"`
	Met        bool    `json:"met"`
}

// LLMChecks judges each SLO of s at its own percentile over m, the class's metrics (nil
// when m has no LLM metrics or no requests). An SLO is met when at least its percentile's
// share of requests met it: "p90 TTFT ≤ 500 ms" holds when 90% of the class's requests had
// their first token within 500 ms (DistServe's and Dynamo's SLO attainment, LLM engine
// digest §3).
func LLMChecks(s LLMSLOs, m *AppMetrics) []SLOCheck {
	if m == nil || m.LLM == nil || m.Requests == 0 {
		return nil
	}
	n := float64(m.Requests)
	l := m.LLM
	check := func(name string, limit dataplane.Time, p float64, missed int64) SLOCheck {
		share := math.Round(float64(l.Answered-missed)/n*1e6) / 1e6
		return SLOCheck{SLO: name, LimitUs: float64(limit), Percentile: p, Share: share, Met: share >= p}
	}
	out := []SLOCheck{check("slo", s.E2E, s.E2EP, l.E2EMissed)}
	if s.TTFT > 0 {
		out = append(out, check("ttft_slo", s.TTFT, s.TTFTP, l.TTFTMissed))
	}
	if s.TPOT > 0 {
		out = append(out, check("tpot_slo", s.TPOT, s.TPOTP, l.TPOTMissed))
	}
	return out
}

// E2EMissed, TTFTMissed and TPOTMissed judge one answered request (on time or late)
// against the SLOs of s: the per-request rule behind the counts LLMChecks judges
// (LLMMetrics' E2EMissed, TTFTMissed, TPOTMissed), by which the simulator's collector and
// the deployment search's probes both count. An SLO is missed past its limit (at it, it
// holds); one s does not set (0) is never missed.
func (s LLMSLOs) E2EMissed(e2e dataplane.Time) bool { return e2e > s.E2E }

// TTFTMissed: the first token came after the TTFT limit (see E2EMissed).
func (s LLMSLOs) TTFTMissed(ttft dataplane.Time) bool { return s.TTFT > 0 && ttft > s.TTFT }

// TPOTMissed: tpot, the mean time per output token after the first ((finish − first token)
// / (output tokens − 1), µs), is over the TPOT limit (see E2EMissed). An answer of one
// token has none to miss: its caller does not ask.
func (s LLMSLOs) TPOTMissed(tpot float64) bool { return s.TPOT > 0 && tpot > float64(s.TPOT) }

// AllMet reports whether every check holds (true for none).
func AllMet(cs []SLOCheck) bool {
	for _, c := range cs {
		if !c.Met {
			return false
		}
	}
	return true
}

// MissLimit is the fewest misses of n requests at which fails holds (math.MaxInt64: none up
// to n), by a binary search: fails must hold for every count above one it holds for, as a
// target on a rounded share of the requests that did not miss does. Runs that stop once
// their verdict is certain (a prediction's failing loads, the deployment search's failing
// probes) set their limits with it from the judge's own test.
func MissLimit(n int64, fails func(m int64) bool) int64 {
	m := int64(sort.Search(int(n)+1, func(m int) bool { return fails(int64(m)) }))
	if m > n {
		return math.MaxInt64
	}
	return m
}
