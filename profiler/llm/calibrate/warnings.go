package calibrate

import (
	"fmt"

	"github.com/plan-dev/plan/formats"
)

// Warning is one reason not to trust a fit: Name is stable (for scripts and --strict), Text
// says what was seen.
type Warning struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// Names of the warnings a fit gives.
const (
	// WarnFewRequests: fewer successful requests than MinTrustedRequests.
	WarnFewRequests = "few-requests"
	// WarnNearBound: a factor within 10% of an end of its range.
	WarnNearBound = "near-bound"
	// WarnNegativeOverhead: the per-step overhead fitted below 0.
	WarnNegativeOverhead = "negative-overhead"
	// WarnOverheadHeld: the runs' decode steps span too little to tell the decode scale
	// from the per-step overhead, so the overhead was held at 0 (the decode scale absorbs
	// any the server has).
	WarnOverheadHeld = "overhead-held"
	// WarnHeldOutWorse: a held-out error higher after the correction than before.
	WarnHeldOutWorse = "held-out-worse"
	// WarnKVMismatch: the replay preempts requests whose measured streams never stall, or
	// the reverse: the profile's KV capacity is not the server's.
	WarnKVMismatch = "kv-mismatch"
	// WarnUnfinished: the calibrated replay did not finish every request.
	WarnUnfinished = "unfinished"
)

func (r *Result) warn(name, format string, args ...any) {
	r.Warnings = append(r.Warnings, Warning{Name: name, Text: fmt.Sprintf(format, args...)})
}

// stallSteps is how many of the profile's longest steps a measured gap between two chunks
// of a stream must exceed to count as a stall: a request preempted (its KV freed) waits and
// recomputes, which no single step, however full, takes.
const stallSteps = 3

// kvMismatch compares the replay's preemptions with the run's stalls (a gap between chunks
// longer than stallSteps of the profile's longest step: a prefill step at its largest point
// plus a decode step at its largest): many preempted requests in the replay with few stalled
// in the run says the profile's KV capacity is below the server's, and the reverse above it.
func kvMismatch(reqs []Request, t []Timing, p *formats.LLMProfile) (Warning, bool) {
	it := p.Iteration
	longest := (maxUs(it.Prefill) + maxUs(it.Decode)) / 1e6
	var preempted, stalled int
	for i := range reqs {
		if t[i].Preemptions > 0 {
			preempted++
		}
		if reqs[i].MaxGap > stallSteps*longest {
			stalled++
		}
	}
	floor := max(3, len(reqs)/100)
	switch {
	case preempted >= floor && stalled*4 < preempted:
		return Warning{WarnKVMismatch, fmt.Sprintf("the replay preempted %d requests but the run's streams show %d stalls (a gap over %d of the longest step, %.1f ms): the profile's KV capacity (%d tokens) is likely below the server's; give its logged capacity (--kv-capacity-tokens or --vllm-log)",
			preempted, stalled, stallSteps, 1e3*longest, p.KVCapacityTokens)}, true
	case stalled >= floor && preempted*4 < stalled:
		return Warning{WarnKVMismatch, fmt.Sprintf("the run's streams show %d stalls (a gap over %d of the longest step, %.1f ms) but the replay preempted %d requests: the server's KV capacity is likely below the profile's (%d tokens); give its logged capacity (--kv-capacity-tokens or --vllm-log)",
			stalled, stallSteps, 1e3*longest, preempted, p.KVCapacityTokens)}, true
	}
	return Warning{}, false
}

func maxUs(pts []formats.PWLPoint) float64 {
	m := 0.0
	for _, pt := range pts {
		m = max(m, pt.Us)
	}
	return m
}
