package formats

// Workload says what must be served: single models with SLOs and rate weights (PPipe),
// multi-module pipelines/DAGs with one end-to-end SLO (PARD), model cascades with validation
// data (CascadeServe), LLM request classes (QLM) and dynamic workflows (DyOrc).
type Workload struct {
	TypeMeta
	Metadata Metadata `json:"metadata"`
	// Sections are the systems' sections (SectionSet), each decoded, validated and
	// written by the Section its system registers.
	Sections SectionValues `json:"-"`
}
