package cascadesec

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
