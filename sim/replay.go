package sim

import (
	"fmt"
	"math"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
)

// ExactReplay is a per-request trace replayed as recorded (LLM engine
// digest §5: fidelity is judged by replaying a list of requests with their arrival times and
// prompt and output tokens): every request exactly once, at its own time divided by the load
// factor (load 1 = the trace as recorded), with its own class (workload.AssignTrace's rule)
// and token counts. Token counts the trace leaves 0 are drawn from the class's profiles (fillTokens).
type ExactReplay struct {
	// Name labels the replay in reports (the trace's file name).
	Name string
	// times and attrs are each application's arrivals in order; rows their trace indices.
	times [][]dataplane.Time
	attrs [][]dataplane.Attrs
	// prefixes are the arrivals' prompt prefixes, parallel to attrs (nil: the trace has none).
	prefixes [][]*dataplane.Prefix
	rows     [][]int
	// span is the last request's time.
	span dataplane.Time
}

// NewExactReplay assigns the trace's requests to dep's applications (classes, parallel to
// dep.Apps) by workload.AssignTrace's rule. Errors name the trace, the request's field and
// its value.
func NewExactReplay(name string, t *formats.Trace, dep *dataplane.Deployment, classes []LLMClass) (*ExactReplay, error) {
	if len(classes) != len(dep.Apps) {
		return nil, fmt.Errorf("%s: %d LLM classes for %d applications", name, len(classes), len(dep.Apps))
	}
	rc := make([]workload.ReplayClass, len(classes))
	for a, c := range classes {
		rc[a] = workload.ReplayClass{Name: dep.Apps[a].Name, Model: c.Model, MaxIn: c.In.Max, MaxOut: c.Out.Max}
	}
	reqs, err := workload.AssignTrace(name, t, rc)
	if err != nil {
		return nil, err
	}
	n := len(dep.Apps)
	x := &ExactReplay{Name: name, times: make([][]dataplane.Time, n), attrs: make([][]dataplane.Attrs, n), prefixes: make([][]*dataplane.Prefix, n), rows: make([][]int, n)}
	for _, r := range reqs {
		x.times[r.Class] = append(x.times[r.Class], r.T)
		x.attrs[r.Class] = append(x.attrs[r.Class], dataplane.Attrs{InTokens: r.In, OutTokens: r.Out})
		x.prefixes[r.Class] = append(x.prefixes[r.Class], tracePrefix(t, r.Row))
		x.rows[r.Class] = append(x.rows[r.Class], r.Row)
		x.span = r.T
	}
	return x, nil
}

// tracePrefix is trace row i's id and prompt sharing (Arrival.Prefix), nil when it has none.
func tracePrefix(t *formats.Trace, i int) *dataplane.Prefix {
	r := &t.Requests[i]
	if r.ID == "" && r.PrefixGroup == "" && len(r.Hashes()) == 0 {
		return nil
	}
	p := &dataplane.Prefix{ID: r.ID, Group: string(r.PrefixGroup), GroupTokens: int32(r.PrefixTokens)}
	if h := r.Hashes(); len(h) > 0 {
		p.HashIDs, p.HashBlockTokens = h, int32(t.HashBlockTokens)
	}
	return p
}

// Requests is how many requests the replay holds.
func (x *ExactReplay) Requests() int {
	n := 0
	for _, t := range x.times {
		n += len(t)
	}
	return n
}

// Span is the last request's time in the trace.
func (x *ExactReplay) Span() dataplane.Time { return x.span }

// NativeRPS is each application's rate in the trace as recorded (load 1): its requests over
// the trace's span (at least one second, so a burst does not read as an infinite rate).
func (x *ExactReplay) NativeRPS() []float64 {
	secs := max(float64(x.span)/1e6, 1)
	out := make([]float64, len(x.times))
	for a, t := range x.times {
		out[a] = float64(len(t)) / secs
	}
	return out
}

// Row is the trace index of application a's n-th arrival (Attrs.Trace − 1).
func (x *ExactReplay) Row(a dataplane.AppID, n int64) int {
	if int(a) < len(x.rows) && n >= 0 && n < int64(len(x.rows[a])) {
		return x.rows[a][n]
	}
	return -1
}

// window is the arrival window of the replay at load: past its last (compressed) arrival,
// and at least a second (rates and goodput count over it: a burst at one instant is not an
// infinite rate).
func (x *ExactReplay) window(load float64) dataplane.Time {
	return max(dataplane.Time(math.Ceil(float64(x.span)/load))+1, dataplane.Second)
}

// sources are the replay's arrivals at load: every time divided by the load factor.
func (x *ExactReplay) sources(load float64) []Source {
	out := make([]Source, len(x.times))
	for a, ts := range x.times {
		if len(ts) == 0 {
			continue
		}
		scaled := make([]dataplane.Time, len(ts))
		for i, t := range ts {
			scaled[i] = dataplane.Time(float64(t) / load)
		}
		out[a] = &Times{T: scaled}
	}
	return out
}

// attr is application a's n-th arrival's attributes.
func (x *ExactReplay) attr(a dataplane.AppID, n int64) dataplane.Attrs {
	if n < int64(len(x.attrs[a])) {
		return x.attrs[a][n]
	}
	return dataplane.Attrs{}
}

// prefix is application a's n-th arrival's prompt prefix.
func (x *ExactReplay) prefix(a dataplane.AppID, n int64) *dataplane.Prefix {
	if n < int64(len(x.prefixes[a])) {
		return x.prefixes[a][n]
	}
	return nil
}

// newReplaySim is newPointSimCompact for an exact replay: the trace's own arrivals, classes
// and tokens, over the window that holds its last arrival at load.
func newReplaySim(cfg *SweepConfig, pol dataplane.Policy, load float64, compact bool) (*Sim, error) {
	x := cfg.Replay
	window := x.window(load)
	if cfg.Duration > 0 {
		window = min(window, cfg.Duration)
	}
	n := x.Requests()
	opts := Options{
		Duration: window, Seed: PointSeed(cfg.Seed, load, -1), Jitter: cfg.Jitter, ExpectedRequests: n + 16,
		Failures: cfg.Failures, CancelFraction: cfg.CancelFraction, Warmup: cfg.Warmup, LLM: cfg.LLM, Attrs: x.attr, Prefix: x.prefix, Ctx: cfg.Ctx,
	}
	if compact {
		CompactAsSweeps(&opts)
	}
	return New(cfg.Dep, pol, x.sources(load), opts)
}
