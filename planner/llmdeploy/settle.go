package llmdeploy

import (
	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/planner/llmcap"
)

// The SLOs Judge checks per class, as indexes into requestJudgement.ok.
const (
	sloE2E = iota
	sloTTFT
	sloTPOT
	nSLOs
)

// requestJudgement is one answered request's latencies (µs; TPOT µs per token after the
// first, 0 for a one-token answer) and whether each of its class's SLOs held for it (an SLO
// the class does not set holds).
type requestJudgement struct {
	ttft, e2e, tpot float64
	ok              [nSLOs]bool
}

// judgeRequest judges request q's answer r (neither refused nor unfinished) against its
// class cl's SLOs: the one rule Judge and settle share, the simulator's (workload.LLMSLOs'
// E2EMissed, TTFTMissed and TPOTMissed), TPOT = (finish − first token) / (output tokens −
// 1) over answers of more than one token.
func judgeRequest(cl *llmspec.LLMClass, q *llm.Request, r *llm.Result) requestJudgement {
	s := llmcap.SLOs(cl)
	j := requestJudgement{ttft: float64(r.FirstToken - q.Arrival), e2e: float64(r.Done - q.Arrival)}
	j.ok[sloTPOT] = true
	if q.Out > 1 {
		j.tpot = float64(r.Done-r.FirstToken) / float64(q.Out-1)
		j.ok[sloTPOT] = !s.TPOTMissed(j.tpot)
	}
	j.ok[sloE2E] = !s.E2EMissed(r.Done - q.Arrival)
	j.ok[sloTTFT] = !s.TTFTMissed(r.FirstToken - q.Arrival)
	return j
}

// settle stops a capacity probe's replay once the probe has failed for certain. Capacity
// keeps only the verdict of a probe that fails (its percentiles are those of the highest
// rate that met), and a request's result never changes once final: when a class has missed
// one of its SLOs on more of its judged requests than the SLO's percentile allows, Judge
// fails the class whatever the rest of the replay does (a request left unfinished counts as
// a miss too). Above a candidate's capacity the queue grows without bound and this comes
// early, so the probe skips the dearest part of its replay, the overload simulated to its
// end; a probe that meets its SLOs never stops early, so its replay and verdict are the
// same as without it.
type settle struct {
	skip    int
	reqs    []llm.Request
	cls     []int
	classes []llmspec.LLMClass
	// left[k][s] is how many more misses of SLO s class k may take and still meet it (as
	// Judge's Check: share(n − misses, n) ≥ its percentile); < 0: it has failed.
	left [][nSLOs]int
}

// newSettle is the watch for a probe of reqs (cls[i] request i's class), judged by Judge.
func newSettle(classes []llmspec.LLMClass, reqs []llm.Request, cls []int) *settle {
	s := &settle{skip: llmcap.Skip(len(reqs)), reqs: reqs, cls: cls, classes: classes, left: make([][nSLOs]int, len(classes))}
	n := make([]int, len(classes))
	for i := s.skip; i < len(reqs); i++ {
		n[cls[i]]++
	}
	for k := range classes {
		cl := &classes[k]
		e2eP, ttftP, tpotP := cl.Percentiles()
		s.left[k] = [nSLOs]int{allowedMisses(n[k], e2eP), n[k], n[k]}
		if cl.TTFTSLO > 0 {
			s.left[k][sloTTFT] = allowedMisses(n[k], ttftP)
		}
		if cl.TPOTSLO > 0 {
			s.left[k][sloTPOT] = allowedMisses(n[k], tpotP)
		}
	}
	return s
}

// allowedMisses is the most of n requests that may miss an SLO judged at percentile pct
// with the SLO still met (−1: not even none), by the judge's own rule (workload.LLMChecks).
func allowedMisses(n int, pct float64) int {
	fails := func(m int64) bool {
		c := workload.LLMChecks(workload.LLMSLOs{E2E: 1, E2EP: pct}, &workload.AppMetrics{Requests: int64(n), LLM: &workload.LLMMetrics{Answered: int64(n), E2EMissed: m}})
		return len(c) == 0 || !c[0].Met // no requests (n = 0): nothing meets it
	}
	limit := workload.MissLimit(int64(n), fails)
	if limit > int64(n) {
		return n // no count fails it
	}
	return int(limit) - 1
}

// watch implements llm.Watch: true once some class has failed one of its SLOs.
func (s *settle) watch(i int, r *llm.Result) bool {
	if i < s.skip {
		return false
	}
	k := s.cls[i]
	var ok [nSLOs]bool // refused or unfinished: every SLO missed
	if !r.Refused && r.Done != dataplane.Never {
		ok = judgeRequest(&s.classes[k], &s.reqs[i], r).ok
	}
	failed := false
	for slo, met := range ok {
		if !met {
			s.left[k][slo]--
			failed = failed || s.left[k][slo] < 0
		}
	}
	return failed
}

// watch is a probe's replay watch: settle's under failFast, else none.
func (o Options) watch(classes []llmspec.LLMClass, reqs []llm.Request, cls []int) llm.Watch {
	if !o.failFast {
		return nil
	}
	w := newSettle(classes, reqs, cls).watch
	if ctx := o.ctx; ctx != nil {
		return func(i int, r *llm.Result) bool { return ctx.Err() != nil || w(i, r) }
	}
	return w
}
