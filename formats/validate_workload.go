package formats

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Validate is ValidateWith(nil): see Plan.Validate.
func (w *Workload) Validate() ErrorList { return w.ValidateWith(nil) }

// ValidateWith checks a workload; typed sections whose validation lives in their system's
// package are checked by the Sections secs registers under their keys (Plan.ValidateWith).
func (w *Workload) ValidateWith(secs *SectionSet) ErrorList {
	v := &validator{}
	checkMeta(v, w.TypeMeta, KindWorkload)
	if len(w.SectionKeys()) == 0 {
		v.add("", nil, "must describe at least one of %s", prose(typedSectionKeys(reflect.TypeFor[Workload]())))
	}
	seen := names{}
	for i := range w.Models {
		w.Models[i].validate(v, idx("models", i), seen)
	}
	seen = names{}
	for i := range w.Pipelines {
		w.Pipelines[i].validate(v, idx("pipelines", i), seen)
	}
	seen = names{}
	for i := range w.Cascades {
		w.Cascades[i].validate(v, idx("cascades", i), seen)
	}
	v.errs = append(v.errs, secs.validateTyped(KindWorkload, w, w.SectionKeys())...)
	v.errs = append(v.errs, w.Sections.validate()...)
	return v.errs
}

func (m *ModelWorkload) validate(v *validator, p string, seen names) {
	seen.check(v, field(p, "name"), m.Name)
	if m.SLO < 0 {
		v.add(field(p, "slo"), m.SLO, "must be >= 0 (0 = slo_scale x the fastest batch-1 latency)")
	}
	boundedDuration(v, field(p, "slo"), m.SLO)
	if m.SLOScale != 0 && !(m.SLOScale >= 1 && finite(m.SLOScale)) {
		v.add(field(p, "slo_scale"), m.SLOScale, "must be >= 1 (or omitted)")
	}
	if m.SLO > 0 && m.SLOScale != 0 {
		v.add(field(p, "slo_scale"), m.SLOScale, "set slo or slo_scale, not both")
	}
	optionalPositive(v, field(p, "weight"), m.Weight)
	if m.Weight > 0 && finite(m.Weight) && (m.Weight < MinWeight || m.Weight > MaxWeight) {
		// Weights scale the max-min objective's rows: far outside this range the MILP's
		// coefficients are meaningless (or rejected by the solver).
		v.add(field(p, "weight"), m.Weight, "must be in [%g, %g] (weights are relative)", MinWeight, MaxWeight)
	}
	rate(v, field(p, "rate_rps"), m.RateRPS)
}

// MinWeight and MaxWeight bound a model's rate weight.
const (
	MinWeight = 1e-6
	MaxWeight = 1e6
)

func (pl *Pipeline) validate(v *validator, p string, seen names) {
	seen.check(v, field(p, "name"), pl.Name)
	positiveDuration(v, field(p, "slo"), pl.SLO)
	rate(v, field(p, "rate_rps"), pl.RateRPS)
	mp := field(p, "modules")
	if len(pl.Modules) == 0 {
		v.add(mp, nil, "must list at least one module")
		return
	}
	mods := names{}
	ambiguous := false // an empty or repeated name makes the graph meaningless
	for j := range pl.Modules {
		n := pl.Modules[j].Name
		ambiguous = ambiguous || n == "" || mods[n] != ""
		mods.check(v, field(idx(mp, j), "name"), n)
	}
	succ := map[string][]string{}
	var order []string
	for j := range pl.Modules {
		m := &pl.Modules[j]
		jp := idx(mp, j)
		notEmpty(v, field(jp, "model"), m.Model)
		order = append(order, m.Name)
		edges := map[string]int{}
		for k, e := range m.After {
			ep := idx(field(jp, "after"), k)
			switch {
			case e.Module == "":
				v.add(field(ep, "module"), e.Module, "must not be empty")
			case e.Module == m.Name:
				v.add(field(ep, "module"), e.Module, "a module cannot depend on itself")
			case mods[e.Module] == "":
				v.add(field(ep, "module"), e.Module, "unknown module: not in %s", mp)
			default:
				if f, dup := edges[e.Module]; dup {
					v.add(field(ep, "module"), e.Module, "duplicate edge (first at after[%d])", f)
				} else {
					edges[e.Module] = k
					succ[e.Module] = append(succ[e.Module], m.Name)
				}
			}
			if e.Probability != 0 && !(e.Probability > 0 && e.Probability <= 1) {
				v.add(field(ep, "probability"), e.Probability, "must be in (0, 1]")
			}
		}
	}
	if c := findCycle(order, succ); c != nil && !ambiguous {
		v.add(mp, nil, "modules form a cycle: %s", strings.Join(c, " -> "))
	}
}

func (c *Cascade) validate(v *validator, p string, seen names) {
	seen.check(v, field(p, "name"), c.Name)
	mp := field(p, "models")
	if len(c.Models) == 0 {
		v.add(mp, nil, "must list at least one model")
	}
	models := map[string]bool{}
	for j, m := range c.Models {
		jp := idx(mp, j)
		if !notEmpty(v, jp, m) {
			continue
		}
		if models[m] {
			v.add(jp, m, "duplicate model")
		}
		models[m] = true
	}
	switch {
	case c.LatencySLO != nil && c.AccuracySLO != 0:
		v.add(field(p, "accuracy_slo"), c.AccuracySLO, "set latency_slo or accuracy_slo, not both")
	case c.LatencySLO == nil && c.AccuracySLO == 0:
		v.add(p, nil, "must set latency_slo or accuracy_slo")
	}
	if s := c.LatencySLO; s != nil {
		sp := field(p, "latency_slo")
		if !(s.Percentile > 0 && s.Percentile <= 1) {
			v.add(field(sp, "percentile"), s.Percentile, "must be in (0, 1] (a quantile: 0.95 for p95)")
		}
		positiveDuration(v, field(sp, "latency"), s.Latency)
	}
	if c.AccuracySLO != 0 && !(c.AccuracySLO > 0 && c.AccuracySLO <= 1) {
		v.add(field(p, "accuracy_slo"), c.AccuracySLO, "must be in (0, 1]")
	}
	positiveRate(v, field(p, "qps_max"), c.QPSMax)
	if c.QPSRanges < 0 {
		v.add(field(p, "qps_ranges"), c.QPSRanges, "must be >= 1 (or omitted)")
	}
	var sum float64
	for j, x := range c.QPSHistogram {
		nonNegative(v, idx(field(p, "qps_histogram"), j), x)
		if finite(x) && x > 0 {
			sum += x
		}
	}
	if len(c.QPSHistogram) > 0 && sum == 0 {
		v.add(field(p, "qps_histogram"), nil, "must not be all zero")
	}
	c.validateRecords(v, p, models)
}

func (c *Cascade) validateRecords(v *validator, p string, models map[string]bool) {
	vp := field(p, "validation")
	if len(c.Validation) == 0 {
		v.add(vp, nil, "must have at least one record")
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
	for j := range c.Validation {
		r := &c.Validation[j]
		rp := idx(vp, j)
		atLeast(v, field(rp, "sample"), int64(r.Sample), 0)
		if notEmpty(v, field(rp, "model"), r.Model) && !models[r.Model] {
			v.add(field(rp, "model"), r.Model, "unknown model: not in %s", field(p, "models"))
		}
		// Certainties are top-1 minus top-2 scores of normalized outputs (CascadeServe App. B
		// Eq. 5, issue 12): outside [0, 1] they are a unit mistake (logits, percentages).
		if !finite(r.Cert) || r.Cert < 0 || r.Cert > 1 {
			v.add(field(rp, "cert"), r.Cert, "must be in [0, 1] (a certainty: top-1 minus top-2 normalized score)")
		}
		switch {
		case r.Label != "" && r.Correct != nil:
			v.add(field(rp, "correct"), *r.Correct, "set label or correct, not both")
		case r.Label == "" && r.Correct == nil:
			v.add(rp, nil, "must set label or correct")
		}
		k := key{r.Sample, r.Model}
		if f, dup := first[k]; dup {
			v.add(rp, raw(fmt.Sprintf("(sample %d, model %s)", r.Sample, r.Model)), "duplicate record (first at %s)", idx(vp, f))
		} else {
			first[k] = j
		}
		if r.Label != "" {
			if f, ok := label[r.Sample]; !ok {
				label[r.Sample] = j
			} else if other := c.Validation[f].Label; other != r.Label {
				v.add(field(rp, "label"), r.Label, "differs from %s.label (%q) for the same sample", idx(vp, f), other)
			}
		}
		if samples[r.Model] == nil {
			samples[r.Model] = map[int]bool{}
		}
		samples[r.Model][r.Sample] = true
		all[r.Sample] = true
	}
	// Every model must have records for the same samples.
	for _, m := range c.Models {
		if m == "" {
			continue
		}
		have := samples[m]
		if len(have) == 0 {
			v.add(vp, m, "no records for this model")
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
			v.add(vp, m, "no records for samples %s: every model must cover the same samples", elide(strs, 8))
		}
	}
}

// StepInput is the `after` reference to the request's own input.
const StepInput = "$in"

// ParseStepRef splits an `after` reference into the step it names and its suffix:
// "x?" (if x ran), "x*" (all copies of x) or "" (x must run). "$in" is the request input;
// "loop.prev" inside a loop body is the previous round.
func ParseStepRef(ref string) (step string, suffix string) {
	if n := len(ref); n > 0 && (ref[n-1] == '?' || ref[n-1] == '*') {
		return ref[:n-1], ref[n-1:]
	}
	return ref, ""
}
