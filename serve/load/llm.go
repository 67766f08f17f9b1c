package load

import (
	"strconv"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
)

// llmClasses are the served plan's LLM classes: those of the workload it embeds (nil for a
// plan of another system, whose workload states none).
func llmClasses(plan *formats.Plan) []llmspec.LLMClass {
	if plan == nil || plan.Provenance.Embedded == nil {
		return nil
	}
	return llmspec.ClassesOf(plan.Provenance.Embedded.Workload)
}

// exactArrivals replays a per-request trace on an LLM plan exactly, as `plan simulate
// --trace` does: every request once, in the class workload.AssignTrace
// gives it, at its time divided by the load factor, with its tokens (sent as
// kserve.TraceTokensHeader). Requests of a class the run does not target (--model) are not
// sent. ok is false when the run is not an exact replay (another plan, a generated trace).
func exactArrivals(o Options, plan *formats.Plan, targets []target, load float64, window dataplane.Time) (arrivals []arrival, ok bool, err error) {
	classes := llmClasses(plan)
	t := o.Arrival.Trace
	if classes == nil || t == nil || len(t.Requests) == 0 {
		return nil, false, nil
	}
	rc := make([]workload.ReplayClass, len(classes))
	for i, c := range classes {
		rc[i] = workload.ReplayClass{Name: c.Name, Model: c.Model, MaxIn: c.InputTokens.Max, MaxOut: c.OutputTokens.Max}
	}
	reqs, err := workload.AssignTrace(o.Arrival.Name, t, rc)
	if err != nil {
		return nil, true, setupError{err}
	}
	target := map[string]int{}
	for i, tg := range targets {
		target[tg.name] = i
	}
	n := make([]int64, len(targets))
	for _, r := range reqs {
		i, ok := target[classes[r.Class].Name]
		if !ok {
			continue
		}
		at := dataplane.Time(float64(r.T) / load)
		if o.DurationSet && at >= window {
			break
		}
		arrivals = append(arrivals, arrival{t: at, app: i, n: n[i], in: r.In, out: r.Out})
		n[i]++
	}
	if o.MaxRequests > 0 && len(arrivals) > o.MaxRequests {
		arrivals = arrivals[:o.MaxRequests]
	}
	return arrivals, true, nil
}

// replayWindow is the run's arrival window: Duration, or without --duration for an exact
// LLM replay or a run bounded by --max-requests the span of its arrivals (goodput and
// offered rates count over it).
func replayWindow(o Options, plan *formats.Plan, arrivals []arrival) time.Duration {
	exact := llmClasses(plan) != nil && o.Arrival.Trace != nil && len(o.Arrival.Trace.Requests) > 0
	if o.DurationSet || (!exact && !byCount(o)) || len(arrivals) == 0 {
		return o.Duration
	}
	// At least a second, as the simulator's replay window: a burst is not an infinite rate.
	return max(time.Duration(arrivals[len(arrivals)-1].t+1)*time.Microsecond, time.Second)
}

// tokensHeader is s's kserve.TraceTokensHeader value.
func tokensHeader(s *Sample) string {
	return strconv.Itoa(int(s.InTokens)) + "," + strconv.Itoa(int(s.OutTokens))
}

// addLLMMetrics gives an LLM plan's report its token timings, as the simulator's (LLM engine
// digest §3): E2E is the client's latency, TTFT the server's (timing.first_token_us: a
// non-streaming answer shows the client no first token), TPOT the rest of the client's
// latency over the output tokens after the first, and output tokens per second over the
// run (end: the last answer). An exact replay's offered rates are its requests over its
// window, not the plan's rates.
func addLLMMetrics(plan *formats.Plan, o Options, met *workload.Metrics, samples []Sample, end time.Duration) {
	if llmClasses(plan) == nil {
		return
	}
	if o.Arrival.Trace != nil && len(o.Arrival.Trace.Requests) > 0 && o.Duration > 0 {
		w := o.Duration.Seconds()
		for i := range met.Apps {
			met.Apps[i].OfferedRPS = workload.Round6(float64(met.Apps[i].Requests) / w)
		}
		met.Total.OfferedRPS = workload.Round6(float64(met.Total.Requests) / w)
	}
	type acc struct {
		ttft, tpot        []float64
		prompt, generated int64
		unstamped         int64
	}
	accs := make([]acc, len(met.Apps))
	var all acc
	for _, s := range samples {
		if s.Status != 200 || s.App >= len(accs) {
			continue
		}
		for _, a := range []*acc{&accs[s.App], &all} {
			a.prompt += int64(s.InTokens)
			a.generated += int64(s.OutTokens)
			if s.ServerFirstToken <= 0 {
				a.unstamped++
				continue
			}
			a.ttft = append(a.ttft, float64(s.ServerFirstToken.Microseconds()))
			if s.OutTokens > 1 {
				a.tpot = append(a.tpot, float64(max(s.Latency-s.ServerFirstToken, 0).Microseconds())/float64(s.OutTokens-1))
			}
		}
	}
	secs := end.Seconds()
	summarize := func(a *acc) *workload.LLMMetrics {
		m := &workload.LLMMetrics{TTFT: summarizeUs(a.ttft), TPOT: summarizeUs(a.tpot),
			PromptTokens: a.prompt, OutputTokens: a.generated, Unstamped: a.unstamped}
		if secs > 0 {
			m.OutputTokensPerS = workload.Round6(float64(a.generated) / secs)
		}
		return m
	}
	for i := range met.Apps {
		met.Apps[i].LLM = summarize(&accs[i])
	}
	met.Total.LLM = summarize(&all)
}
