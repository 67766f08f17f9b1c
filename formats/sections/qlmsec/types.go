package qlmsec

import "github.com/plan-dev/plan/formats"

// QLM's plan section types: the `qlm` section of a plan, a value of this package's
// PlanSection, read with PlanOf (formats holds none of them).

// QLMPlan assigns request groups to instances' virtual queues in order.
type QLMPlan struct {
	Instances []QLMInstance `json:"instances"`
	Groups    []QLMGroup    `json:"groups,omitempty"`
	ReplanMs  float64       `json:"replan_ms,omitempty"`
	// Routes is the least-cost plan's split of each request size over GPU types (Mélange,
	// Griggs et al. 2024, §5: the ILP serves a bucket's rate on the GPU types where it is
	// cheapest): the runtime sends a request to the route of its class nearest its prompt and
	// output tokens, then to one of the route's GPU types by share. Absent = any instance.
	Routes []QLMRoute `json:"routes,omitempty"`
}

// QLMRoute is one request-size bucket of a class and the shares of its rate per GPU type.
type QLMRoute struct {
	Class        string     `json:"class"`
	InputTokens  float64    `json:"input_tokens"`
	OutputTokens float64    `json:"output_tokens"`
	GPUs         []QLMShare `json:"gpus"`
}

// QLMShare is the fraction of a route's requests served on one GPU type.
type QLMShare struct {
	GPU   string  `json:"gpu"`
	Share float64 `json:"share"`
}

// QLMInstance is one LLM engine instance and its virtual queue (group IDs, head first).
type QLMInstance struct {
	Name     string   `json:"name"`
	GPU      string   `json:"gpu"`
	GPUCount int      `json:"gpu_count"`
	Model    string   `json:"model,omitempty"`
	Queue    []string `json:"queue,omitempty"`
	// GPUs are the instance's GPUs, indices in cluster order (the cluster's gpus pools in
	// order), all on one server: a tensor-parallel instance (gpu_count > 1) spans them.
	// Empty = the next gpu_count GPUs of its type in cluster order.
	GPUs []int `json:"gpus,omitempty"`
	// Role is the instance's part in a disaggregated deployment (llm-deploy-search §1):
	// "" aggregated (prefill and decode on one engine), llmspec.RolePrefill or RoleDecode. A model
	// served by prefill instances is served by decode instances too, and by no aggregated
	// one; its KV moves over the cluster's kv_link_gbps.
	Role string `json:"role,omitempty"`
}

// QLMGroup is a request group: requests of one model with similar SLO and lengths.
type QLMGroup struct {
	ID       string           `json:"id"`
	Model    string           `json:"model"`
	Class    string           `json:"class,omitempty"`
	SLO      formats.Duration `json:"slo"`
	Requests int              `json:"requests"`
}
