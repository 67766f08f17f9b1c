package formats

// Workload says what must be served: single models with SLOs and rate weights (PPipe),
// multi-module pipelines/DAGs with one end-to-end SLO (PARD), model cascades with validation
// data (CascadeServe), LLM request classes (QLM) and dynamic workflows (DyOrc).
type Workload struct {
	TypeMeta
	Metadata  Metadata        `json:"metadata"`
	Models    []ModelWorkload `json:"models,omitempty"`
	Pipelines []Pipeline      `json:"pipelines,omitempty"`
	Cascades  []Cascade       `json:"cascades,omitempty"`
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

// Pipeline is a multi-module application (a DAG, usually a chain) with one end-to-end SLO.
type Pipeline struct {
	Name    string   `json:"name"`
	SLO     Duration `json:"slo"`
	RateRPS float64  `json:"rate_rps,omitempty"`
	Modules []Module `json:"modules"`
}

// Module is one stage of a pipeline.
type Module struct {
	Name string `json:"name"`
	// Model names the model profile that serves this module.
	Model string `json:"model"`
	// After lists upstream modules; empty = an entry module.
	After []Edge `json:"after,omitempty"`
}

// Edge is a dependency on an upstream module; Probability < 1 makes it conditional
// (the request visits this module only with that probability).
type Edge struct {
	Module      string  `json:"module"`
	Probability float64 `json:"probability,omitempty"`
}

// Cascade is a family of models that may be arranged into cascades for one task,
// with per-sample validation records and an SLO.
type Cascade struct {
	Name   string   `json:"name"`
	Models []string `json:"models"`
	// Exactly one of LatencySLO (maximize accuracy) or AccuracySLO (minimize latency).
	LatencySLO  *LatencySLO `json:"latency_slo,omitempty"`
	AccuracySLO float64     `json:"accuracy_slo,omitempty"`
	QPSMax      float64     `json:"qps_max"`
	QPSRanges   int         `json:"qps_ranges,omitempty"`
	// QPSHistogram[i] is the fraction of time spent at QPS i (from a trace); optional.
	QPSHistogram []float64 `json:"qps_histogram,omitempty"`
	// Certainty is the scale of the records' cert: "probability" (default: a gap of
	// normalized scores, in [0, 1]) or "score" (any real scale, e.g. a logit gap; the
	// threshold search works on quantiles of the scores).
	Certainty string `json:"certainty,omitempty"`
	// Validation holds the per-sample records the planner searches cascades on;
	// Candidates replaces them with cascades evaluated elsewhere (one of the two).
	Validation []ValidationRecord `json:"validation,omitempty"`
	Candidates []CascadeCandidate `json:"candidates,omitempty"`
	// Test holds per-sample records held out from planning: simulation replays them and
	// reports accuracy on them (CascadeServe §6.1's held-out split).
	Test []ValidationRecord `json:"test,omitempty"`
	// ValidationFile and TestFile name CSV/JSONL/JSON record files (relative to the
	// workload's file) that `plan solve` imports into Validation and Test
	// (LoadCascadeFiles): records evaluated elsewhere, kept in their own files.
	ValidationFile string `json:"validation_file,omitempty"`
	TestFile       string `json:"test_file,omitempty"`
}

// CascadeCandidate is one cascade evaluated elsewhere (CascadeServe §2): its models in
// order, the certainty threshold after each stage but the last, the measured accuracy and
// the fraction of requests reaching each stage (Reach[0] = 1, non-increasing).
type CascadeCandidate struct {
	Models     []string  `json:"models"`
	Thresholds []float64 `json:"thresholds,omitempty"`
	Accuracy   float64   `json:"accuracy"`
	Reach      []float64 `json:"reach"`
}

// LatencySLO is a percentile latency bound: the Percentile quantile of end-to-end latency
// must not exceed Latency.
type LatencySLO struct {
	// Percentile is a quantile in (0, 1]: 0.95 for p95.
	Percentile float64  `json:"percentile"`
	Latency    Duration `json:"latency"`
}

// ValidationRecord is one model's output on one validation sample.
type ValidationRecord struct {
	Sample int     `json:"sample"`
	Model  string  `json:"model"`
	Pred   string  `json:"pred"`
	Cert   float64 `json:"cert"`
	Label  string  `json:"label,omitempty"`
	// Correct replaces Label for tasks judged per answer (generative tasks).
	Correct *bool `json:"correct,omitempty"`
}
