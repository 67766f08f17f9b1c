package cascadesec

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/plan-dev/plan/formats"
)

// validatePlan checks CascadeServe's plan section: replicas of the task's models on GPUs of
// the plan's cluster, and contiguous gears (QPS ranges, CascadeServe §4) whose models,
// thresholds, load shares and triggers refer to placed replicas.
func validatePlan(c *formats.Checker, pl *formats.Plan, p string) {
	cp := pl.Cascade
	c.NotEmpty(formats.Field(p, "task"), cp.Task)
	pp := formats.Field(p, "placement")
	if len(cp.Placement) == 0 {
		c.Add(pp, nil, "must place at least one replica")
	}
	total, where := formats.ClusterGPUs(pl)
	replicas := map[string]int{}
	for i, r := range cp.Placement {
		ip := formats.Index(pp, i)
		if c.NotEmpty(formats.Field(ip, "model"), r.Model) {
			replicas[r.Model]++
		}
		if len(r.GPUs) == 0 {
			c.Add(formats.Field(ip, "gpus"), nil, "must list at least one GPU index")
		}
		seen := map[int]bool{}
		for j, gi := range r.GPUs {
			jp := formats.Index(formats.Field(ip, "gpus"), j)
			switch {
			case gi < 0:
				c.Add(jp, gi, "must be >= 0")
			case total >= 0 && gi >= total:
				c.Add(jp, gi, "must be < %d, the number of GPUs in %s", total, where)
			case seen[gi]:
				c.Add(jp, gi, "duplicate GPU index")
			}
			seen[gi] = true
		}
	}
	gp := formats.Field(p, "gears")
	if len(cp.Gears) == 0 {
		c.Add(gp, nil, "must list at least one gear")
	}
	for i := range cp.Gears {
		gr := &cp.Gears[i]
		ip := formats.Index(gp, i)
		c.Rate(formats.Field(ip, "q_lo"), gr.QLo)
		if i == 0 && gr.QLo != 0 && formats.Finite(gr.QLo) && gr.QLo >= 0 {
			c.Add(formats.Field(ip, "q_lo"), gr.QLo, "must be 0: gears must start at QPS 0")
		}
		if i > 0 && gr.QLo != cp.Gears[i-1].QHi {
			c.Add(formats.Field(ip, "q_lo"), gr.QLo, "must equal gears[%d].q_hi (%g): gears must be contiguous", i-1, cp.Gears[i-1].QHi)
		}
		if !formats.Finite(gr.QHi) || !(gr.QHi > gr.QLo) {
			c.Add(formats.Field(ip, "q_hi"), gr.QHi, "must be > q_lo (%g)", gr.QLo)
		} else {
			c.Rate(formats.Field(ip, "q_hi"), gr.QHi)
		}
		mp := formats.Field(ip, "models")
		if len(gr.Models) == 0 {
			c.Add(mp, nil, "must list at least one model")
		}
		models := map[string]bool{}
		for j, m := range gr.Models {
			jp := formats.Index(mp, j)
			if !c.NotEmpty(jp, m) {
				continue
			}
			if models[m] {
				c.Add(jp, m, "duplicate model")
			} else if replicas[m] == 0 {
				c.Add(jp, m, "model has no replica in %s", pp)
			}
			models[m] = true
		}
		if len(gr.Models) > 0 && len(gr.Thr) != len(gr.Models)-1 {
			c.Add(formats.Field(ip, "thr"), len(gr.Thr), "length must be len(models)-1 = %d", len(gr.Models)-1)
		}
		for j, t := range gr.Thr {
			c.NonNegative(formats.Index(formats.Field(ip, "thr"), j), t)
		}
		for _, m := range formats.SortedKeys(gr.Share) {
			sp := formats.KeyPath(formats.Field(ip, "share"), m)
			if !models[m] {
				c.Add(sp, m, "not a model of this gear")
				continue
			}
			shares := gr.Share[m]
			if len(shares) != replicas[m] {
				c.Add(sp, len(shares), "length must be the number of replicas of %s in %s (%d)", m, pp, replicas[m])
			}
			var sum float64
			ok := true
			for j, s := range shares {
				if !formats.Finite(s) || s < 0 || s > 1 {
					c.Add(formats.Index(sp, j), s, "must be in [0, 1]")
					ok = false
				}
				sum += s
			}
			if ok && len(shares) > 0 && math.Abs(sum-1) > 1e-6 {
				c.Add(sp, nil, "must sum to 1 (sums to %g)", sum)
			}
		}
		for _, m := range formats.SortedKeys(gr.Trigger) {
			tp := formats.KeyPath(formats.Field(ip, "trigger"), m)
			if !models[m] {
				c.Add(tp, m, "not a model of this gear")
			}
			c.AtLeast(tp, int64(gr.Trigger[m]), 1)
		}
		c.InRange(formats.Field(ip, "expected_accuracy"), gr.ExpAcc, 0, 1)
		c.DurationIn(formats.Field(ip, "expected_work_s"), gr.ExpWork, 1e6, "s", false)
		c.DurationIn(formats.Field(ip, "expected_platency_ms"), gr.ExpPLat, 1e3, "ms", false)
	}
	c.DurationIn(formats.Field(p, "poll_ms"), cp.PollMs, 1e3, "ms", false)
	c.NonNegative(formats.Field(p, "alpha"), cp.Alpha)
	if cp.MaxBatch < 0 {
		c.Add(formats.Field(p, "max_batch"), cp.MaxBatch, "must be >= 1 (or omitted)")
	}
}

// validateCascade checks one cascade of the workload: its models, one SLO (latency or
// accuracy), its QPS range and histogram, and its validation records (validateRecords).
func validateCascade(c *formats.Checker, cs *formats.Cascade, p string, seen *formats.Names) {
	c.Check(seen, formats.Field(p, "name"), cs.Name)
	mp := formats.Field(p, "models")
	if len(cs.Models) == 0 {
		c.Add(mp, nil, "must list at least one model")
	}
	models := map[string]bool{}
	for j, m := range cs.Models {
		jp := formats.Index(mp, j)
		if !c.NotEmpty(jp, m) {
			continue
		}
		if models[m] {
			c.Add(jp, m, "duplicate model")
		}
		models[m] = true
	}
	switch {
	case cs.LatencySLO != nil && cs.AccuracySLO != 0:
		c.Add(formats.Field(p, "accuracy_slo"), cs.AccuracySLO, "set latency_slo or accuracy_slo, not both")
	case cs.LatencySLO == nil && cs.AccuracySLO == 0:
		c.Add(p, nil, "must set latency_slo or accuracy_slo")
	}
	if s := cs.LatencySLO; s != nil {
		sp := formats.Field(p, "latency_slo")
		if !(s.Percentile > 0 && s.Percentile <= 1) {
			c.Add(formats.Field(sp, "percentile"), s.Percentile, "must be in (0, 1] (a quantile: 0.95 for p95)")
		}
		c.PositiveDuration(formats.Field(sp, "latency"), s.Latency)
	}
	if cs.AccuracySLO != 0 && !(cs.AccuracySLO > 0 && cs.AccuracySLO <= 1) {
		c.Add(formats.Field(p, "accuracy_slo"), cs.AccuracySLO, "must be in (0, 1]")
	}
	c.PositiveRate(formats.Field(p, "qps_max"), cs.QPSMax)
	if cs.QPSRanges < 0 {
		c.Add(formats.Field(p, "qps_ranges"), cs.QPSRanges, "must be >= 1 (or omitted)")
	}
	var sum float64
	for j, x := range cs.QPSHistogram {
		c.NonNegative(formats.Index(formats.Field(p, "qps_histogram"), j), x)
		if formats.Finite(x) && x > 0 {
			sum += x
		}
	}
	if len(cs.QPSHistogram) > 0 && sum == 0 {
		c.Add(formats.Field(p, "qps_histogram"), nil, "must not be all zero")
	}
	validateRecords(c, cs, p, models)
}

// validateRecords checks a cascade's validation records: one per (sample, model), with a
// certainty in [0, 1] and a label or a correctness, covering the same samples for every model.
func validateRecords(c *formats.Checker, cs *formats.Cascade, p string, models map[string]bool) {
	vp := formats.Field(p, "validation")
	if len(cs.Validation) == 0 {
		c.Add(vp, nil, "must have at least one record")
		return
	}
	type key struct {
		sample int
		model  string
	}
	first := map[key]int{}
	label := map[int]int{} // sample -> first record index with a label
	samples := map[string]map[int]bool{}
	all := map[int]bool{}
	for j := range cs.Validation {
		r := &cs.Validation[j]
		rp := formats.Index(vp, j)
		c.AtLeast(formats.Field(rp, "sample"), int64(r.Sample), 0)
		if c.NotEmpty(formats.Field(rp, "model"), r.Model) && !models[r.Model] {
			c.Add(formats.Field(rp, "model"), r.Model, "unknown model: not in %s", formats.Field(p, "models"))
		}
		// Certainties are top-1 minus top-2 scores of normalized outputs (CascadeServe App. B
		// Eq. 5, issue 12): outside [0, 1] they are a unit mistake (logits, percentages).
		if !formats.Finite(r.Cert) || r.Cert < 0 || r.Cert > 1 {
			c.Add(formats.Field(rp, "cert"), r.Cert, "must be in [0, 1] (a certainty: top-1 minus top-2 normalized score)")
		}
		switch {
		case r.Label != "" && r.Correct != nil:
			c.Add(formats.Field(rp, "correct"), *r.Correct, "set label or correct, not both")
		case r.Label == "" && r.Correct == nil:
			c.Add(rp, nil, "must set label or correct")
		}
		k := key{r.Sample, r.Model}
		if f, dup := first[k]; dup {
			c.AddRaw(rp, fmt.Sprintf("(sample %d, model %s)", r.Sample, r.Model), "duplicate record (first at %s)", formats.Index(vp, f))
		} else {
			first[k] = j
		}
		if r.Label != "" {
			if f, ok := label[r.Sample]; !ok {
				label[r.Sample] = j
			} else if other := cs.Validation[f].Label; other != r.Label {
				c.Add(formats.Field(rp, "label"), r.Label, "differs from %s.label (%q) for the same sample", formats.Index(vp, f), other)
			}
		}
		if samples[r.Model] == nil {
			samples[r.Model] = map[int]bool{}
		}
		samples[r.Model][r.Sample] = true
		all[r.Sample] = true
	}
	// Every model must have records for the same samples.
	for _, m := range cs.Models {
		if m == "" {
			continue
		}
		have := samples[m]
		if len(have) == 0 {
			c.Add(vp, m, "no records for this model")
			continue
		}
		var missing []int
		for s := range all {
			if !have[s] {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 {
			sort.Ints(missing)
			strs := make([]string, len(missing))
			for i, s := range missing {
				strs[i] = strconv.Itoa(s)
			}
			c.Add(vp, m, "no records for samples %s: every model must cover the same samples", formats.Elide(strs, 8))
		}
	}
}
