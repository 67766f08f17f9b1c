package formats

// Workload says what must be served: single models with SLOs and rate weights (PPipe),
// multi-module pipelines/DAGs with one end-to-end SLO (PARD), model cascades with validation
// data (CascadeServe), LLM request classes (QLM) and dynamic workflows (DyOrc).
type Workload struct {
	TypeMeta
	Metadata Metadata        `json:"metadata"`
	Models   []ModelWorkload `json:"models,omitempty"`
	// Sections are the sections of systems registered beyond the typed fields above
	// (SectionSet), decoded by their own Section.
	Sections SectionValues `json:"-"`
}

// ModelWorkload is one model served on its own (PPipe's per-model workload).
type ModelWorkload struct {
	Name string `json:"name"`
	// Profile names the model in the profile when it differs from Name.
	Profile string `json:"profile,omitempty"`
	// SLO is the end-to-end latency objective; 0 = SLOScale × the fastest batch-1 latency.
	SLO      Duration `json:"slo,omitempty"`
	SLOScale float64  `json:"slo_scale,omitempty"`
	// Weight is the model's share of requests (multi-model max-min objective); default 1.
	Weight float64 `json:"weight,omitempty"`
	// RateRPS is an expected arrival rate, when known.
	RateRPS float64 `json:"rate_rps,omitempty"`
}

// ProfileName returns the model name to look up in profiles.
func (m *ModelWorkload) ProfileName() string {
	if m.Profile != "" {
		return m.Profile
	}
	return m.Name
}
