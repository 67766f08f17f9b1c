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
	// "" aggregated (prefill and decode on one engine), RolePrefill or RoleDecode. A model
	// served by prefill instances is served by decode instances too, and by no aggregated
	// one; its KV moves over the cluster's kv_link_gbps.
	Role string `json:"role,omitempty"`
}

// Values of QLMInstance.Role.
const (
	RolePrefill = "prefill"
	RoleDecode  = "decode"
)

// Roles are the values QLMInstance.Role may take ("" = aggregated).
var Roles = []string{RolePrefill, RoleDecode}

// QLMGroup is a request group: requests of one model with similar SLO and lengths.
type QLMGroup struct {
	ID       string           `json:"id"`
	Model    string           `json:"model"`
	Class    string           `json:"class,omitempty"`
	SLO      formats.Duration `json:"slo"`
	Requests int              `json:"requests"`
}

// LLMClass is a class of LLM requests (QLM): model, SLO, rate and token-length profile.
type LLMClass struct {
	Name  string           `json:"name"`
	Model string           `json:"model"`
	SLO   formats.Duration `json:"slo"`
	// TTFTSLO bounds the time to first token and TPOTSLO the mean time per output token
	// after the first (LLM engine digest §3: SLOs of DistServe and Dynamo's planner); 0 =
	// none. A request meets its class's SLOs only if it meets every one the class sets.
	TTFTSLO formats.Duration `json:"ttft_slo,omitempty"`
	TPOTSLO formats.Duration `json:"tpot_slo,omitempty"`
	// SLOPercentile, TTFTPercentile and TPOTPercentile state at which percentile each SLO
	// holds — p50, p90, p95 or p99 ("" = p99): the SLO is met when that share of the
	// class's requests meets it (a dropped request meets none), so "ttft_slo: 500ms,
	// ttft_percentile: p90" is DistServe's and Dynamo's "p90 TTFT ≤ 500 ms".
	SLOPercentile  string       `json:"slo_percentile,omitempty"`
	TTFTPercentile string       `json:"ttft_percentile,omitempty"`
	TPOTPercentile string       `json:"tpot_percentile,omitempty"`
	Interactive    bool         `json:"interactive,omitempty"`
	RateRPS        float64      `json:"rate_rps"`
	InputTokens    TokenProfile `json:"input_tokens"`
	OutputTokens   TokenProfile `json:"output_tokens"`
	// PrefixTokens is a prompt prefix every request of the class shares (a system prompt;
	// 0 = none): with enable_prefix_caching an engine finds its full blocks cached once one
	// request computed them (llm-engine-2 §2), so capacity simulations count the prefill it
	// saves. A request's share is at most its prompt.
	PrefixTokens int `json:"prefix_tokens,omitempty"`
}

// SLOPercentiles are the percentiles an LLM class's SLOs may be stated at, and what each
// means as a share of requests.
var SLOPercentiles = map[string]float64{"p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99}

// DefaultSLOPercentile is the percentile of an SLO that states none: the 99% line plan has
// always judged LLM classes at.
const DefaultSLOPercentile = 0.99

// Percentiles returns the shares of requests that must meet the class's E2E, TTFT and TPOT
// SLOs (DefaultSLOPercentile where none is stated, or the stated one is not known).
func (c *LLMClass) Percentiles() (e2e, ttft, tpot float64) {
	at := func(s string) float64 {
		if p, ok := SLOPercentiles[s]; ok {
			return p
		}
		return DefaultSLOPercentile
	}
	return at(c.SLOPercentile), at(c.TTFTPercentile), at(c.TPOTPercentile)
}

// TokenProfile summarizes a token-length distribution.
type TokenProfile struct {
	Mean float64 `json:"mean"`
	Std  float64 `json:"std,omitempty"`
	Max  int     `json:"max"`
}
