package formats

// Validate checks a workload: its shared fields, and each section by the Section it was
// decoded with; secs nil is a problem (Plan.Validate).
func (w *Workload) Validate(secs *SectionSet) ErrorList {
	if secs == nil {
		return noSectionsProblem(KindWorkload)
	}
	v := &validator{}
	checkMeta(v, w.TypeMeta, KindWorkload)
	if len(w.SectionKeys()) == 0 {
		v.add("", nil, "must describe at least one of %s", prose(sectionKeys(KindWorkload, secs)))
	}
	v.errs = append(v.errs, w.Sections.validate(w)...)
	return v.errs
}

// MinWeight and MaxWeight bound a model's rate weight.
const (
	MinWeight = 1e-6
	MaxWeight = 1e6
)
