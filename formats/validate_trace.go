package formats

import "time"

// Validate checks a trace.
func (t *Trace) Validate() ErrorList {
	v := &validator{}
	checkMeta(v, t.TypeMeta, KindTrace)
	switch {
	case len(t.Requests) > 0 && t.Counts != nil:
		v.add("counts", nil, "set requests or counts, not both")
	case len(t.Requests) == 0 && t.Counts == nil:
		v.add("requests", nil, "must set requests (at least one) or counts")
	}
	for i := range t.Requests {
		r := &t.Requests[i]
		p := idx("requests", i)
		if r.TimeUs < 0 {
			v.add(field(p, "t_us"), r.TimeUs, "must be >= 0")
		} else if float64(r.TimeUs) > MaxDurationUs {
			v.add(field(p, "t_us"), r.TimeUs, "must be <= %d (%s in µs, %s)", int64(MaxDurationUs), MaxDuration, clockBound)
		} else if i > 0 && r.TimeUs < t.Requests[i-1].TimeUs {
			v.add(field(p, "t_us"), r.TimeUs, "must be >= requests[%d].t_us (%d): timestamps must be non-decreasing", i-1, t.Requests[i-1].TimeUs)
		}
		for _, f := range []struct {
			name string
			n    int
		}{{"input_tokens", r.InputTokens}, {"output_tokens", r.OutputTokens}} {
			atLeast(v, field(p, f.name), int64(f.n), 0)
			if f.n > MaxTraceTokens {
				v.add(field(p, f.name), f.n, "must be <= %d", MaxTraceTokens)
			}
		}
	}
	if c := t.Counts; c != nil {
		positiveDuration(v, "counts.interval", c.Interval)
		if len(c.Counts) == 0 {
			v.add("counts.counts", nil, "must have at least one interval")
		}
		// A count is a rate over the interval: at most MaxRateRPS.
		maxCount := int64(MaxRateRPS * min(c.Interval.D(), MaxDuration).Seconds())
		for i, n := range c.Counts {
			atLeast(v, idx("counts.counts", i), n, 0)
			if c.Interval > 0 && n > maxCount {
				v.add(idx("counts.counts", i), n, "must be <= %d in an interval of %s (%g requests/s, %s)", maxCount, c.Interval, MaxRateRPS, clockBound)
			}
		}
		if n := len(c.Counts); n > 0 && c.Interval > 0 && c.Interval.D() > MaxDuration/time.Duration(n) {
			v.add("counts.counts", len(c.Counts), "%d intervals of %s span more than %s (%s)", len(c.Counts), c.Interval, MaxDuration, clockBound)
		}
	}
	return v.errs
}
