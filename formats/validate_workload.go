package formats

import (
	"reflect"
)

// Validate checks a workload; its typed sections are checked by the Sections secs registers
// under their keys, and secs nil is a problem (Plan.Validate).
func (w *Workload) Validate(secs *SectionSet) ErrorList {
	if secs == nil {
		return noSectionsProblem(KindWorkload)
	}
	v := &validator{}
	checkMeta(v, w.TypeMeta, KindWorkload)
	if len(w.SectionKeys()) == 0 {
		v.add("", nil, "must describe at least one of %s", prose(typedSectionKeys(reflect.TypeFor[Workload]())))
	}
	v.errs = append(v.errs, secs.validateTyped(KindWorkload, w, w.SectionKeys())...)
	v.errs = append(v.errs, w.Sections.validate()...)
	return v.errs
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
