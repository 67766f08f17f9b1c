package sim

import (
	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats/llmspec"
)

// LLMClass is what the simulator needs of an LLM request class (llmspec.LLMClass): the token
// profiles a request's prompt and output lengths are drawn from when no trace gives them,
// and the SLOs users set on token timing (LLM engine digest §3: TTFT and TPOT, as DistServe
// and Dynamo's planner do, beside QLM's end-to-end deadline).
type LLMClass struct {
	Model   string
	In, Out llmspec.TokenProfile
	// TTFTSLO bounds the time to first token and TPOTSLO the mean time per output token
	// after the first; 0 = no such SLO. A completed request counts as on time only if it
	// meets every SLO its class sets.
	TTFTSLO, TPOTSLO dataplane.Time
	// E2EP, TTFTP and TPOTP are the shares of requests that must meet each SLO
	// (llmspec.LLMClass.Percentiles: p99 unless the class states another).
	E2EP, TTFTP, TPOTP float64
}

// LLMClassesOf maps a deployment's applications to the LLM classes of the same names in
// classes (nil when the deployment serves none of them: not an LLM plan).
func LLMClassesOf(dep *dataplane.Deployment, classes []llmspec.LLMClass) []LLMClass {
	if len(classes) == 0 {
		return nil
	}
	byName := map[string]*llmspec.LLMClass{}
	for i := range classes {
		byName[classes[i].Name] = &classes[i]
	}
	out := make([]LLMClass, len(dep.Apps))
	found := false
	for a, app := range dep.Apps {
		c := byName[app.Name]
		if c == nil {
			continue
		}
		found = true
		out[a] = LLMClass{Model: c.Model, In: c.InputTokens, Out: c.OutputTokens,
			TTFTSLO: dataplane.Time(c.TTFTSLO.D().Microseconds()), TPOTSLO: dataplane.Time(c.TPOTSLO.D().Microseconds())}
		out[a].E2EP, out[a].TTFTP, out[a].TPOTP = c.Percentiles()
	}
	if !found {
		return nil
	}
	return out
}

// fillTokens gives an LLM arrival the token counts its trace did not: drawn from its class's
// profiles (normal, truncated to [1, max]; QLM §6, Eq. 3) seeded by the request's ID, the
// same draw (llm.DrawTokens) QLM's policy and serve's emulated instances make, so a run whose tokens the
// simulator now sets decides exactly what it decided when the policy drew them. The driver
// knowing every request's tokens is what lets the report count tokens and TPOT.
func fillTokens(c *LLMClass, id dataplane.ReqID, a *dataplane.Attrs) {
	if a.InTokens <= 0 {
		a.InTokens = int32(llm.DrawTokens(c.In, uint64(id), llm.SaltPrompt))
	}
	if a.OutTokens <= 0 {
		a.OutTokens = int32(llm.DrawTokens(c.Out, uint64(id), llm.SaltOutput))
	}
}

// llmCol accumulates an LLM class's token timings (LLM engine digest §3): TTFT = first token
// − arrival, TPOT = (finish − first token) / (output tokens − 1), and token counts.
type llmCol struct {
	ttft                []dataplane.Time
	tpot                []float64
	prompt, generated   int64
	ttftMiss, tpotMiss  int64
	unstamped, answered int64
	// e2eMiss counts answered requests past their deadline (whatever their TTFT and TPOT).
	e2eMiss int64
}

// llmFinish records an answered (completed or late) LLM request and reports whether it met
// its class's TTFT and TPOT SLOs. A request whose policy stamped no first token is bounded
// by its finish (its first token came no later) for the TTFT SLO and has no TPOT.
func (c *collector) llmFinish(cl *LLMClass, l *llmCol, r *dataplane.Request) bool {
	l.answered++
	if r.Outcome == dataplane.Late {
		l.e2eMiss++
	}
	l.prompt += int64(r.Attrs.InTokens)
	l.generated += int64(r.Attrs.OutTokens)
	ttft := r.Done - r.Arrival
	stamped := r.FirstToken != dataplane.Never
	if stamped {
		ttft = r.FirstToken - r.Arrival
		if c.latencies {
			l.ttft = append(l.ttft, ttft)
		}
	} else {
		l.unstamped++
	}
	ok := true
	slos := workload.LLMSLOs{TTFT: cl.TTFTSLO, TPOT: cl.TPOTSLO}
	if slos.TTFTMissed(ttft) {
		l.ttftMiss++
		ok = false
	}
	if stamped && r.Attrs.OutTokens > 1 {
		tpot := float64(r.Done-r.FirstToken) / float64(r.Attrs.OutTokens-1)
		if c.latencies {
			l.tpot = append(l.tpot, tpot)
		}
		if slos.TPOTMissed(tpot) {
			l.tpotMiss++
			ok = false
		}
	}
	return ok
}

// add merges o into l (the total over classes).
func (l *llmCol) add(o *llmCol) {
	l.ttft = append(l.ttft, o.ttft...)
	l.tpot = append(l.tpot, o.tpot...)
	l.prompt += o.prompt
	l.generated += o.generated
	l.ttftMiss += o.ttftMiss
	l.tpotMiss += o.tpotMiss
	l.unstamped += o.unstamped
	l.answered += o.answered
	l.e2eMiss += o.e2eMiss
}

func (l *llmCol) summarize() *LLMMetrics {
	ttft := make([]float64, len(l.ttft))
	for i, v := range l.ttft {
		ttft[i] = float64(v)
	}
	m := &LLMMetrics{TTFT: Summarize(ttft), TPOT: Summarize(append([]float64(nil), l.tpot...)),
		PromptTokens: l.prompt, OutputTokens: l.generated, TTFTMissed: l.ttftMiss, TPOTMissed: l.tpotMiss, Unstamped: l.unstamped,
		E2EMissed: l.e2eMiss, Answered: l.answered}
	return m
}

// engineStats adds to a run's metrics what a policy that drives LLM engines reports of it
// (llm.StatsReporter): its name, preemption events and the engine settings that differ from
// vLLM's defaults.
func engineStats(pol dataplane.Policy, m *Metrics) {
	r, ok := pol.(llm.StatsReporter)
	if !ok {
		return
	}
	st := r.EngineStats()
	m.LLMEngine = &workload.LLMEngine{Policy: st.Policy, Preemptions: st.Preemptions, PreemptedRequests: st.PreemptedRequests, Settings: st.Settings,
		PrefixCacheQueries: st.PrefixQueries, PrefixCacheHits: st.PrefixHits}
	if st.PrefixQueries > 0 {
		m.LLMEngine.PrefixCacheHitRate = round6(float64(st.PrefixHits) / float64(st.PrefixQueries))
	}
	m.LLMEngine.KVOffloadQueries, m.LLMEngine.KVOffloadHits = st.OffloadQueries, st.OffloadHits
	if st.OffloadQueries > 0 {
		m.LLMEngine.KVOffloadHitRate = round6(float64(st.OffloadHits) / float64(st.OffloadQueries))
	}
}

// SLOs are the class's SLOs and their percentiles, with slo its end-to-end SLO (the
// deployment application's), for workload.LLMChecks.
func (c LLMClass) SLOs(slo dataplane.Time) workload.LLMSLOs {
	return workload.LLMSLOs{E2E: slo, TTFT: c.TTFTSLO, TPOT: c.TPOTSLO, E2EP: c.E2EP, TTFTP: c.TTFTP, TPOTP: c.TPOTP}
}
