package sim

import (
	"context"
	"errors"
	"fmt"

	"github.com/plan-dev/plan/dataplane"
)

// Switch is one plan change of a switched replay: the plan decided at Decided takes the
// arrivals from From on. Its GPUs are held from Decided — both fleets while the new one
// loads its models (make before break) — and the requests the previous plan admitted finish
// on it (serve's reload and the autopilot's switch). A schedule's window
// edge is a switch decided one load ahead of the edge, or at it.
type Switch struct {
	Decided, From dataplane.Time
	Plan          *SwitchPlan
}

// SwitchPlan is a plan a switched replay serves.
type SwitchPlan struct {
	// Name labels the plan in reports (its digest).
	Name string
	// GPUs and CostPerHour are what holding the plan's fleet costs (GPU-hours, money).
	GPUs        int
	CostPerHour float64
	// Deploy builds the plan's deployment and a fresh policy: each segment starts on a newly
	// loaded placement, with empty queues and cold estimators.
	Deploy func() (*dataplane.Deployment, dataplane.Policy, error)
}

// SegmentRun is how one segment is simulated: each application's arrivals over the
// segment and the simulator's options (Duration: the sources' end).
type SegmentRun struct {
	Sources []Source
	// Origin is the trace time of the engine's time 0: the sources' times count from it.
	Origin  dataplane.Time
	Options Options
}

// Switched replays a trace's arrivals over a sequence of plan switches: `plan simulate
// SCHEDULE --trace day.csv` (a switch at each window edge whose plan changes) and `plan
// simulate PLAN --autopilot` (the loop's switches) both run it. The trace is cut only where a
// switch takes over: a plan keeps its queues for as long as it serves, a switched-to plan
// starts from empty queues (a fresh placement does) and the old plan's admitted requests
// drain on the old plan, simulated alongside (its fleet is still up: nothing is lost or
// answered twice). On time means finished by the request's deadline.
type Switched struct {
	// Switches are in decision order; the first is the plan serving from the trace's start
	// (its Decided = its From: already loaded). A switch whose From is not before the next
	// one's is superseded: it never serves, and its fleet is held from its decision until
	// the next one's.
	Switches []Switch
	// End is the end of the arrivals.
	End dataplane.Time
	// Spans, when set, are increasing edges of the reported spans (a schedule's windows):
	// each request counts in the span its arrival falls in, whichever plan serves it.
	Spans []dataplane.Time
	// Segment gives segment k's arrivals in [from, to) and options, for the plan deployed
	// as dep. Options.OnFinish is kept (the replay counts beside it); Options.LLM and
	// Options.Warmup are refused (they change what the metrics count).
	Segment func(k int, dep *dataplane.Deployment, from, to dataplane.Time) (*SegmentRun, error)
}

// SwitchedSegment is the span one plan served: arrivals in [From, To), fleet held from
// Decided to Held.
type SwitchedSegment struct {
	Plan               *SwitchPlan
	Decided, From, To  dataplane.Time
	Held               dataplane.Time
	Requests, Met      int64
	Metrics            *Metrics
	superseded, served bool
}

// SpanCount is the requests arriving in one reported span and how many were on time.
type SpanCount struct {
	Requests, Met int64
}

// SwitchedResult is a replay's outcome.
type SwitchedResult struct {
	// Segments are the spans the plans served, in time order (superseded switches and
	// plans that never served left out: their fleets still count in GPUHours and Cost).
	Segments      []SwitchedSegment
	Requests, Met int64
	Spans         []SpanCount
	// GPUHours and Cost sum each plan's fleet over the time it was held: from its decision
	// until the next plan serves (or the arrivals end). The old fleet's drain past that
	// (at most its requests' deadlines) is not counted.
	GPUHours, Cost float64
}

// Attainment is Met / Requests (1 with no request), to 6 decimals.
func (r *SpanCount) Attainment() float64 {
	if r.Requests == 0 {
		return 1
	}
	return round6(float64(r.Met) / float64(r.Requests))
}

// segments cuts the switches into segments: each switch serves from its From until the
// next one's From (or End); a superseded switch serves nothing.
func (r *Switched) segments() ([]SwitchedSegment, error) {
	if len(r.Switches) == 0 {
		return nil, errors.New("sim: a switched replay without a plan")
	}
	for i, s := range r.Switches {
		if s.Plan == nil || s.Plan.Deploy == nil {
			return nil, fmt.Errorf("sim: switch %d without a plan", i)
		}
		if s.From < s.Decided {
			return nil, fmt.Errorf("sim: switch %d serves from %d µs, before its decision at %d µs", i, s.From, s.Decided)
		}
		if i > 0 && s.Decided < r.Switches[i-1].Decided {
			return nil, fmt.Errorf("sim: switch %d decided at %d µs, before switch %d (%d µs)", i, s.Decided, i-1, r.Switches[i-1].Decided)
		}
	}
	var segs []SwitchedSegment
	live := []int{} // indices into segs of the switches not (yet) superseded
	for _, s := range r.Switches {
		for len(live) > 1 && segs[live[len(live)-1]].From >= s.From {
			// Superseded: its load is abandoned at this decision.
			p := &segs[live[len(live)-1]]
			p.superseded, p.Held = true, min(s.Decided, r.End)
			live = live[:len(live)-1]
		}
		segs = append(segs, SwitchedSegment{Plan: s.Plan, Decided: s.Decided, From: s.From})
		live = append(live, len(segs)-1)
	}
	for j, k := range live {
		s := &segs[k]
		s.To = r.End
		if j+1 < len(live) {
			s.To = min(segs[live[j+1]].From, r.End)
		}
		s.Held = max(s.To, min(s.Decided, r.End))
		s.served = s.From < s.To
	}
	return segs, nil
}

// RunSwitched runs every segment of the replays on up to par goroutines (par ≤ 0: all
// cores; 1: in order, for a Segment whose OnFinish is not safe for concurrent use) and
// returns each replay's result; results do not depend on par.
func RunSwitched(ctx context.Context, par int, rs ...*Switched) ([]*SwitchedResult, error) {
	return RunSwitchedWith(ctx, par, nil, rs...)
}

// RunSwitchedWith is RunSwitched calling progress, when set, after each segment with the
// segments done and in all (from one goroutine at a time: a progress bar).
func RunSwitchedWith(ctx context.Context, par int, progress func(done, total int), rs ...*Switched) ([]*SwitchedResult, error) {
	type job struct{ r, k, seg int }
	segs := make([][]SwitchedSegment, len(rs))
	spans := make([][][]SpanCount, len(rs))
	var jobs []job
	for i, r := range rs {
		s, err := r.segments()
		if err != nil {
			return nil, err
		}
		segs[i], spans[i] = s, make([][]SpanCount, len(s))
		k := 0
		for j := range s {
			if s[j].superseded {
				continue
			}
			if s[j].served {
				jobs = append(jobs, job{r: i, k: k, seg: j})
			}
			k++
		}
	}
	var done func(i, finished int, err error)
	if progress != nil {
		progress(0, len(jobs))
		done = func(_, finished int, _ error) { progress(finished, len(jobs)) }
	}
	errs, err := Parallel(ctx, len(jobs), par, func(n int) error {
		j := jobs[n]
		sp, err := rs[j.r].run(j.k, &segs[j.r][j.seg])
		spans[j.r][j.seg] = sp
		return err
	}, done)
	if err != nil {
		return nil, err
	}
	for _, e := range errs {
		if e != nil {
			return nil, e
		}
	}
	out := make([]*SwitchedResult, len(rs))
	for i, r := range rs {
		res := &SwitchedResult{Spans: make([]SpanCount, max(len(r.Spans)-1, 0))}
		var gpuUs, costUs float64
		for j, s := range segs[i] {
			held := float64(s.Held - min(s.Decided, r.End))
			gpuUs += float64(s.Plan.GPUs) * held
			costUs += s.Plan.CostPerHour * held
			if !s.served {
				continue
			}
			res.Segments = append(res.Segments, s)
			res.Requests += s.Requests
			res.Met += s.Met
			for k, c := range spans[i][j] {
				res.Spans[k].Requests += c.Requests
				res.Spans[k].Met += c.Met
			}
		}
		res.GPUHours = round6(gpuUs / 1e6 / 3600)
		res.Cost = costUs / 1e6 / 3600
		out[i] = res
	}
	return out, nil
}

// run simulates segment k (seg) and fills its counts; it returns the per-span counts.
func (r *Switched) run(k int, seg *SwitchedSegment) ([]SpanCount, error) {
	dep, pol, err := seg.Plan.Deploy()
	if err != nil {
		return nil, r.errorf(k, seg, err)
	}
	sr, err := r.Segment(k, dep, seg.From, seg.To)
	if err != nil {
		return nil, r.errorf(k, seg, err)
	}
	if sr.Options.LLM != nil || sr.Options.Warmup > 0 {
		return nil, r.errorf(k, seg, errors.New("a switched replay judges deadlines over every request: no LLM classes, no warm-up"))
	}
	spans := make([]SpanCount, max(len(r.Spans)-1, 0))
	opts := sr.Options
	user := opts.OnFinish
	opts.OnFinish = func(now dataplane.Time, q *dataplane.Request) {
		if q.Outcome == dataplane.Dropped && q.Reason() == dataplane.DropCancelled {
			return // withdrawn: not counted, as the metrics do not
		}
		met := int64(0)
		if q.Outcome == dataplane.Completed {
			met = 1
		}
		seg.Requests++
		seg.Met += met
		if i := spanOf(r.Spans, sr.Origin+q.Arrival); i >= 0 {
			spans[i].Requests++
			spans[i].Met += met
		}
		if user != nil {
			user(now, q)
		}
	}
	s, err := New(dep, pol, sr.Sources, opts)
	if err != nil {
		return nil, r.errorf(k, seg, err)
	}
	if seg.Metrics, err = s.Run(); err != nil {
		return nil, r.errorf(k, seg, err)
	}
	return spans, nil
}

func (r *Switched) errorf(k int, seg *SwitchedSegment, err error) error {
	return fmt.Errorf("sim: segment %d (%s from %d µs): %w", k, seg.Plan.Name, seg.From, err)
}

// spanOf is the index of the span [edges[i], edges[i+1]) holding t, or -1.
func spanOf(edges []dataplane.Time, t dataplane.Time) int {
	lo, hi := 0, len(edges)-1
	if hi < 1 || t < edges[0] || t >= edges[hi] {
		return -1
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if t < edges[mid] {
			hi = mid
		} else {
			lo = mid
		}
	}
	return lo
}
