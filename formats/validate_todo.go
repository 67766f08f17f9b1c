package formats

// Validate checks a profile.
func (p *Profile) Validate() ErrorList {
	v := &validator{}
	checkMeta(v, p.TypeMeta, KindProfile)
	return v.errs
}

// Validate checks a workload.
func (w *Workload) Validate() ErrorList {
	v := &validator{}
	checkMeta(v, w.TypeMeta, KindWorkload)
	return v.errs
}

// Validate checks a plan.
func (p *Plan) Validate() ErrorList {
	v := &validator{}
	checkMeta(v, p.TypeMeta, KindPlan)
	return v.errs
}

// Validate checks a trace.
func (t *Trace) Validate() ErrorList {
	v := &validator{}
	checkMeta(v, t.TypeMeta, KindTrace)
	return v.errs
}
