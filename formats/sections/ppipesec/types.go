package ppipesec

import "github.com/plan-dev/plan/formats"

// PPipePlan is a set of pooled pipelines per model (PPipe, NP and DART-r plans alike).
type PPipePlan struct {
	Strategy string `json:"strategy"` // ppipe | np | dart-r
	// SLOMargin α: the planner budgets T' = T − round(α·T).
	SLOMargin     float64           `json:"slo_margin"`
	MaxPartitions int               `json:"max_partitions"`
	Models        []PPipeModelPlan  `json:"models"`
	GPUUse        []GPUUse          `json:"gpu_use,omitempty"`
	Extra         map[string]string `json:"extra,omitempty"`
}

// PPipeModelPlan is the part of a PPipe plan that serves one model.
type PPipeModelPlan struct {
	Model  string           `json:"model"`
	SLO    formats.Duration `json:"slo"`
	Weight float64          `json:"weight"`
	// BudgetUs is the planning budget T' in µs.
	BudgetUs      float64 `json:"budget_us"`
	ThroughputRPS float64 `json:"throughput_rps"`
	// TargetRPS is the rate the plan is optimised to guarantee (load factor 1.0): z·w_m for
	// multi-model max-min plans, where throughput_rps may exceed it because the objective is
	// indifferent to a model's surplus; equal to throughput_rps for one model. 0 = unknown.
	TargetRPS float64         `json:"target_rps,omitempty"`
	Pipelines []PPipePipeline `json:"pipelines"`
}

// PPipePipeline is a chain of partitions, each served by a pool of (v)GPUs of one type,
// with one batch size for the whole pipeline.
type PPipePipeline struct {
	Batch         int     `json:"batch"`
	ThroughputRPS float64 `json:"throughput_rps"`
	LatencyUs     float64 `json:"latency_us"`
	// BatchFormationUs is the allowance β for gathering a batch at the head stage, included in
	// LatencyUs (0 unless the plan was solved with the batch-formation allowance).
	BatchFormationUs float64     `json:"batch_formation_us,omitempty"`
	Partitions       []Partition `json:"partitions"`
}

// Partition is blocks [FirstBlock, EndBlock) on Count slices of 1/VGPU of a GPU type.
type Partition struct {
	FirstBlock int    `json:"first_block"`
	EndBlock   int    `json:"end_block"`
	GPU        string `json:"gpu"`
	VGPU       int    `json:"vgpu"`
	// Count is the number of 1/VGPU slices; physical GPUs = ceil(Count/VGPU) per pool.
	Count          int     `json:"count"`
	StageLatencyUs float64 `json:"stage_latency_us"`
	// TransferUs is the outgoing transfer time of one batch (0 for the last stage).
	TransferUs    float64 `json:"transfer_us"`
	ThroughputRPS float64 `json:"throughput_rps"`
}

// GPUUse reports GPUs used per type.
type GPUUse struct {
	GPU   string  `json:"gpu"`
	Class string  `json:"class,omitempty"`
	Used  float64 `json:"used"`
	Total int     `json:"total"`
}

// PPipeStrategies are the strategies a PPipe section may name.
var PPipeStrategies = []string{"ppipe", "np", "dart-r"}

// PhysicalGPUs is the number of whole GPUs a partition's pool occupies: ceil(Count/VGPU).
func (pt *Partition) PhysicalGPUs() int {
	if pt.VGPU <= 1 {
		return pt.Count
	}
	return (pt.Count + pt.VGPU - 1) / pt.VGPU
}

// ModelWorkload is one model served on its own (PPipe's per-model workload).
type ModelWorkload struct {
	Name string `json:"name"`
	// Profile names the model in the profile when it differs from Name.
	Profile string `json:"profile,omitempty"`
	// SLO is the end-to-end latency objective; 0 = SLOScale × the fastest batch-1 latency.
	SLO      formats.Duration `json:"slo,omitempty"`
	SLOScale float64          `json:"slo_scale,omitempty"`
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
