package formats

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
		} else if i > 0 && r.TimeUs < t.Requests[i-1].TimeUs {
			v.add(field(p, "t_us"), r.TimeUs, "must be >= requests[%d].t_us (%d): timestamps must be non-decreasing", i-1, t.Requests[i-1].TimeUs)
		}
		atLeast(v, field(p, "input_tokens"), int64(r.InputTokens), 0)
		atLeast(v, field(p, "output_tokens"), int64(r.OutputTokens), 0)
	}
	if c := t.Counts; c != nil {
		positiveDuration(v, "counts.interval", c.Interval)
		if len(c.Counts) == 0 {
			v.add("counts.counts", nil, "must have at least one interval")
		}
		for i, n := range c.Counts {
			atLeast(v, idx("counts.counts", i), n, 0)
		}
	}
	return v.errs
}
