package cascadesec

import "github.com/plan-dev/plan/formats"

// CascadePlan is CascadeServe's gear plan: a fixed replica placement and one gear per QPS range.
type CascadePlan struct {
	Task      string    `json:"task"`
	Placement []Replica `json:"placement"`
	Gears     []Gear    `json:"gears"`
	PollMs    float64   `json:"poll_ms,omitempty"`
	Alpha     float64   `json:"alpha,omitempty"`
	MaxBatch  int       `json:"max_batch,omitempty"`
}

// Replica places one copy of a model on GPUs.
type Replica struct {
	Model string `json:"model"`
	GPUs  []int  `json:"gpus"`
}

// Gear is the cascade and routing used while the QPS is in [QLo, QHi).
type Gear struct {
	QLo     float64              `json:"q_lo"`
	QHi     float64              `json:"q_hi"`
	Models  []string             `json:"models"`
	Thr     []float64            `json:"thr"`
	Share   map[string][]float64 `json:"share,omitempty"`
	Trigger map[string]int       `json:"trigger,omitempty"`
	ExpAcc  float64              `json:"expected_accuracy,omitempty"`
	ExpWork float64              `json:"expected_work_s,omitempty"`
	ExpPLat float64              `json:"expected_platency_ms,omitempty"`
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
	Percentile float64          `json:"percentile"`
	Latency    formats.Duration `json:"latency"`
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
