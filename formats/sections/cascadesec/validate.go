package cascadesec

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats"
)

// validatePlan checks CascadeServe's plan section: replicas of the task's models on GPUs of
// the plan's cluster, and contiguous gears (QPS ranges, CascadeServe §4) whose models,
// thresholds, load shares and triggers refer to placed replicas.
func validatePlan(c *formats.Checker, pl *formats.Plan, cp *CascadePlan, p string) {
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
	score := false
	if e := pl.Provenance.Embedded; e != nil && e.Workload != nil {
		for _, cs := range CascadesOf(e.Workload) {
			score = score || cs.Name == cp.Task && cs.Certainty == CertScore
		}
	}
	formats.Each(c, formats.Field(p, "gears"), "gear", cp.Gears, func(i int, ip string, gr *Gear) {
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
		models := checkModels(c, formats.Field(ip, "models"), gr.Models, func(jp, m string) {
			if replicas[m] == 0 {
				c.Add(jp, m, "model has no replica in %s", pp)
			}
		})
		if len(gr.Models) > 0 && len(gr.Thr) != len(gr.Models)-1 {
			c.Add(formats.Field(ip, "thr"), len(gr.Thr), "length must be len(models)-1 = %d", len(gr.Models)-1)
		}
		for j, t := range gr.Thr {
			if score {
				// any finite scale: the embedded workload's certainties are scores
				if !formats.Finite(t) {
					c.Add(formats.Index(formats.Field(ip, "thr"), j), t, "must be a finite number")
				}
			} else {
				c.NonNegative(formats.Index(formats.Field(ip, "thr"), j), t)
			}
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
			if ok && len(shares) > 0 && math.Abs(sum-1) > shareSumTol {
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
	})
	c.DurationIn(formats.Field(p, "poll_ms"), cp.PollMs, 1e3, "ms", false)
	c.NonNegative(formats.Field(p, "alpha"), cp.Alpha)
	if cp.MaxBatch < 0 {
		c.Add(formats.Field(p, "max_batch"), cp.MaxBatch, "must be >= 1 (or omitted)")
	}
}

// validateCascade checks one cascade of the workload: its models, one SLO (latency or
// accuracy), its QPS range and histogram, and its validation records (validateRecords).
func validateCascade(c *formats.Checker, cs *Cascade, p string, seen *formats.Names) {
	c.Check(seen, formats.Field(p, "name"), cs.Name)
	models := checkModels(c, formats.Field(p, "models"), cs.Models, nil)
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
	if cs.Certainty != "" {
		c.OneOf(formats.Field(p, "certainty"), cs.Certainty, []string{CertProbability, CertScore})
	}
	sources := 0
	for _, given := range []bool{len(cs.Validation) > 0, len(cs.Candidates) > 0, cs.ValidationFile != ""} {
		if given {
			sources++
		}
	}
	switch {
	case sources > 1:
		c.Add(formats.Field(p, "candidates"), nil, "set one of validation, validation_file or candidates")
	case len(cs.Candidates) > 0:
		validateCandidates(c, cs, p, models)
	case cs.ValidationFile != "":
		// the records come from the file (LoadCascadeFiles), checked once loaded
	default:
		validateRecords(c, cs.Validation, cs, formats.Field(p, "validation"), models)
	}
	if len(cs.Test) > 0 && cs.TestFile != "" {
		c.Add(formats.Field(p, "test_file"), cs.TestFile, "set test or test_file, not both")
	} else if len(cs.Test) > 0 {
		validateRecords(c, cs.Test, cs, formats.Field(p, "test"), models)
	}
}

// Certainty scales of a cascade's records (Cascade.Certainty).
const (
	CertProbability = "probability"
	CertScore       = "score"
)

// checkModels checks the models of a cascade or a gear, the list at mp: at least one, each
// named and listed once; first, when set, checks each model at its first mention (jp). It
// returns the set of the models named.
func checkModels(c *formats.Checker, mp string, list []string, first func(jp, m string)) map[string]bool {
	if len(list) == 0 {
		c.Add(mp, nil, "must list at least one model")
	}
	models := map[string]bool{}
	for j, m := range list {
		jp := formats.Index(mp, j)
		if !c.NotEmpty(jp, m) {
			continue
		}
		if models[m] {
			c.Add(jp, m, "duplicate model")
		} else if first != nil {
			first(jp, m)
		}
		models[m] = true
	}
	return models
}

// validateCandidates checks a table of cascades evaluated elsewhere: models of the
// cascade in order, one threshold per stage but the last, an accuracy in [0, 1] and the
// fraction of requests reaching each stage, 1 at the first and non-increasing.
func validateCandidates(c *formats.Checker, cs *Cascade, p string, models map[string]bool) {
	cp := formats.Field(p, "candidates")
	for i := range cs.Candidates {
		cd := &cs.Candidates[i]
		ip := formats.Index(cp, i)
		mp := formats.Field(ip, "models")
		if len(cd.Models) == 0 {
			c.Add(mp, nil, "must list at least one model")
		}
		seen := map[string]bool{}
		for j, m := range cd.Models {
			jp := formats.Index(mp, j)
			switch {
			case !c.NotEmpty(jp, m):
			case !models[m]:
				c.Add(jp, m, "unknown model: not in %s", formats.Field(p, "models"))
			case seen[m]:
				c.Add(jp, m, "duplicate model")
			}
			seen[m] = true
		}
		if len(cd.Models) > 0 && len(cd.Thresholds) != len(cd.Models)-1 {
			c.Add(formats.Field(ip, "thresholds"), len(cd.Thresholds), "length must be len(models)-1 = %d", len(cd.Models)-1)
		}
		for j, t := range cd.Thresholds {
			if !formats.Finite(t) {
				c.Add(formats.Index(formats.Field(ip, "thresholds"), j), t, "must be a finite number")
			} else if cs.Certainty != CertScore && (t < 0 || t > 1) {
				c.Add(formats.Index(formats.Field(ip, "thresholds"), j), t, "must be in [0, 1] (probability certainties; set certainty: score for another scale)")
			}
		}
		c.InRange(formats.Field(ip, "accuracy"), cd.Accuracy, 0, 1)
		rp := formats.Field(ip, "reach")
		if len(cd.Models) > 0 && len(cd.Reach) != len(cd.Models) {
			c.Add(rp, len(cd.Reach), "length must be len(models) = %d (the fraction of requests reaching each stage)", len(cd.Models))
		}
		for j, f := range cd.Reach {
			jp := formats.Index(rp, j)
			switch {
			case !formats.Finite(f) || f < 0 || f > 1:
				c.Add(jp, f, "must be in [0, 1] (a fraction of requests)")
			case j == 0 && f != 1:
				c.Add(jp, f, "must be 1: every request reaches the first stage")
			case j > 0 && f > cd.Reach[j-1]:
				c.Add(jp, f, "must not exceed %s (%g): fractions are non-increasing along the cascade", formats.Index(rp, j-1), cd.Reach[j-1])
			}
		}
	}
}

// validateRecords checks a cascade's validation records: one per (sample, model), with a
// certainty in [0, 1] and a label or a correctness, covering the same samples for every model.
func validateRecords(c *formats.Checker, recs []ValidationRecord, cs *Cascade, vp string, models map[string]bool) {
	p := strings.TrimSuffix(strings.TrimSuffix(vp, ".validation"), ".test")
	if len(recs) == 0 {
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
	for j := range recs {
		r := &recs[j]
		rp := formats.Index(vp, j)
		c.AtLeast(formats.Field(rp, "sample"), int64(r.Sample), 0)
		if c.NotEmpty(formats.Field(rp, "model"), r.Model) && !models[r.Model] {
			if strings.HasSuffix(vp, ".test") {
				c.Add(formats.Field(rp, "model"), r.Model, "a model the validation set lacks: not in %s", formats.Field(p, "models"))
			} else {
				c.Add(formats.Field(rp, "model"), r.Model, "unknown model: not in %s", formats.Field(p, "models"))
			}
		}
		checkOutcome(c, rp, r, cs.Certainty == CertScore, "set certainty: score for another scale, e.g. logit gaps")
		k := key{r.Sample, r.Model}
		if f, dup := first[k]; dup {
			c.AddRaw(rp, fmt.Sprintf("(sample %d, model %s)", r.Sample, r.Model), "duplicate record (first at %s)", formats.Index(vp, f))
		} else {
			first[k] = j
		}
		if r.Label != "" {
			if f, ok := label[r.Sample]; !ok {
				label[r.Sample] = j
			} else if other := recs[f].Label; other != r.Label {
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
