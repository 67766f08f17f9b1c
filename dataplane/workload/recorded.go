package workload

import "fmt"

// RecordedRate is the rate (requests/s) at which a Trace file's arrivals for application app
// were recorded: a replay's requests for it (naming it or none) over their span, as the replay
// folds them (n/D), or a count series' total over its length. It is the base of --rate-scale
// (1.0 = the trace as recorded; issue 31 item 3), where --load rescales a trace to the plan.
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
