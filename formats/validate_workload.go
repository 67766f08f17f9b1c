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
		v.add("", nil, "must describe at least one of %s", prose(sectionKeys(KindWorkload, reflect.TypeFor[Workload](), secs)))
	}
	v.errs = append(v.errs, secs.validateTyped(KindWorkload, w, w.SectionKeys())...)
	v.errs = append(v.errs, w.Sections.validate(w)...)
	return v.errs
}

// MinWeight and MaxWeight bound a model's rate weight.
const (
	MinWeight = 1e-6
	MaxWeight = 1e6
)
