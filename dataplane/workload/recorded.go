package workload

import (
	"fmt"
	"math"

	"github.com/plan-dev/plan/dataplane"
)

// RecordedRate is the rate (requests/s) at which a Trace file's arrivals for application app
// were recorded: a replay's requests for it (naming it or none) over their span, as the replay
// folds them (n/D), or a count series' total over its length. It is the base of --rate-scale
// (1.0 = the trace as recorded), where --load rescales a trace to the plan.
func (s ArrivalSpec) RecordedRate(app string) (float64, error) {
	t := s.Trace
	if t == nil {
		return 0, fmt.Errorf("needs a Trace file (--trace FILE): %q has no recorded rate", s.Name)
	}
	if c := t.Counts; c != nil {
		var total int64
		for _, n := range c.Counts {
			total += n
		}
		span := c.Interval.D().Seconds() * float64(len(c.Counts))
		if total == 0 || span <= 0 {
			return 0, fmt.Errorf("%s: the trace's counts are all zero", s.Name)
		}
		return float64(total) / span, nil
	}
	var n int
	var first, last int64
	for _, r := range t.Requests {
		if r.Target != "" && r.Target != app {
			continue
		}
		if n == 0 {
			first = r.TimeUs
		}
		last = r.TimeUs
		n++
	}
	if n < 2 || last <= first {
		return 0, fmt.Errorf("%s: application %q has %d requests over %d µs: no recorded rate", s.Name, app, n, last-first)
	}
	return float64(n) / (float64(last-first) / 1e6), nil
}

// Extent is the span a Trace file's arrivals were recorded over and how many requests it
// holds: a count series' intervals and total, a replay's first to last timestamp and its
// requests (every application's). ok is false for generated arrival processes.
func (s ArrivalSpec) Extent() (span dataplane.Time, n int64, ok bool) {
	t := s.Trace
	if t == nil {
		return 0, 0, false
	}
	if c := t.Counts; c != nil {
		for _, x := range c.Counts {
			n += x
		}
		return dataplane.Time(c.Interval.Microseconds()) * dataplane.Time(len(c.Counts)), n, true
	}
	if len(t.Requests) == 0 {
		return 0, 0, false
	}
	return dataplane.Time(t.Requests[len(t.Requests)-1].TimeUs - t.Requests[0].TimeUs), int64(len(t.Requests)), true
}

// RecordedBefore is how many of a Trace file's requests were recorded in its first d: a
// count series' counts in [0, d) (pro rata in a partial interval), a replay's requests less
// than d after its first.
func (s ArrivalSpec) RecordedBefore(d dataplane.Time) float64 {
	t := s.Trace
	if t == nil {
		return 0
	}
	if c := t.Counts; c != nil {
		iv := float64(c.Interval.Microseconds())
		var n float64
		for k, x := range c.Counts {
			lo := float64(k) * iv
			if lo >= float64(d) {
				break
			}
			n += float64(x) * math.Min(1, (float64(d)-lo)/iv)
		}
		return n
	}
	var n float64
	for _, r := range t.Requests {
		if r.TimeUs-t.Requests[0].TimeUs < int64(d) {
			n++
		}
	}
	return n
}

// Expected is how many arrivals the process brings application app at rate rps (its mean)
// in the window [0, d): a count series' scaled counts over the window (repeating past its
// end: a window at its bursts holds more than rps·d), else rps·d.
func (s ArrivalSpec) Expected(rps float64, d dataplane.Time) float64 {
	if s.Kind == "counts" && s.Trace != nil && s.Trace.Counts != nil {
		span, total, _ := s.Extent()
		if total > 0 && span > 0 {
			// whole repetitions, then the part of one
			reps := math.Floor(float64(d) / float64(span))
			part := s.RecordedBefore(d - dataplane.Time(reps)*span)
			native := float64(total) / (float64(span) / 1e6) // requests/s as recorded
			return (reps*float64(total) + part) * rps / native
		}
	}
	return rps * float64(d) / 1e6
}
