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
	if t.HashBlockTokens < 0 || t.HashBlockTokens > MaxTraceTokens {
		v.add("hash_block_tokens", t.HashBlockTokens, "must be in [0, %d]", MaxTraceTokens)
	}
	ids := map[string]int{} // request id -> first index
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
		checkTracePrefix(v, t, i, ids)
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

// checkTracePrefix checks request i's id and what its prompt shares: ids unique; a prefix
// group with prefix_tokens in [1, input_tokens]; hash_ids (not with a group) one per
// hash_block_tokens prompt tokens, ceil(input_tokens / hash_block_tokens) of them, >= 0.
func checkTracePrefix(v *validator, t *Trace, i int, ids map[string]int) {
	r := &t.Requests[i]
	p := idx("requests", i)
	if r.ID != "" {
		if j, dup := ids[r.ID]; dup {
			v.add(field(p, "id"), r.ID, "must be unique: requests[%d] has it too", j)
		} else {
			ids[r.ID] = i
		}
	}
	switch {
	case r.PrefixGroup != "" && r.PrefixTokens <= 0:
		v.add(field(p, "prefix_tokens"), r.PrefixTokens, "must be >= 1 with prefix_group (how many prompt tokens the group shares)")
	case r.PrefixGroup == "" && r.PrefixTokens != 0:
		v.add(field(p, "prefix_tokens"), r.PrefixTokens, "needs prefix_group (whose tokens they are)")
	case r.InputTokens > 0 && r.PrefixTokens > r.InputTokens:
		v.add(field(p, "prefix_tokens"), r.PrefixTokens, "must be <= input_tokens (%d)", r.InputTokens)
	case r.PrefixTokens > MaxTraceTokens:
		v.add(field(p, "prefix_tokens"), r.PrefixTokens, "must be <= %d", MaxTraceTokens)
	}
	if len(r.Hashes()) == 0 {
		return
	}
	if r.PrefixGroup != "" {
		v.add(field(p, "hash_ids"), len(r.Hashes()), "set hash_ids or prefix_group, not both")
	}
	if t.HashBlockTokens <= 0 {
		v.add(field(p, "hash_ids"), len(r.Hashes()), "need hash_block_tokens (the tokens per hash id; Mooncake: %d)", MooncakeBlockTokens)
	} else if want := ceilDiv(r.InputTokens, t.HashBlockTokens); len(r.Hashes()) != want {
		v.add(field(p, "hash_ids"), len(r.Hashes()), "must have ceil(input_tokens %d / hash_block_tokens %d) = %d ids", r.InputTokens, t.HashBlockTokens, want)
	}
	for k, h := range r.Hashes() {
		if h < 0 {
			v.add(idx(field(p, "hash_ids"), k), h, "must be >= 0")
			break
		}
	}
}

func ceilDiv(a, b int) int {
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}
