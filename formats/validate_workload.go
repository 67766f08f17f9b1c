package formats

import (
	"reflect"
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
