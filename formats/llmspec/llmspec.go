// Package llmspec is the LLM vocabulary every LLM part of plan shares: request classes
// (LLMClass: model, SLOs and the percentiles they hold at, rate, token-length profiles,
// shared prefix), the roles of an instance in a disaggregated deployment, and the workload's
// `llm_classes` section that states the classes (WorkloadSection, read with ClassesOf). The
// LLM engine (dataplane/llm), the simulator, the deployment search (planner/llmdeploy), the
// autopilot, serve's load generator and QLM's plan section (formats/sections/qlmsec) all
// speak it, so it belongs to none of them: a new model family or deployment shape extends it
// here, not under one paper's section. A model's measured behaviour and its engine settings
// are the profile's (formats.LLMProfile, formats.LLMEngine), shared the same way.
package llmspec

import (
	"fmt"
	"strings"

	"github.com/plan-dev/plan/formats"
)

// LLMClass is a class of LLM requests: model, SLO, rate and token-length profile.
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

// DefaultPercentileNotes say which SLOs are judged at DefaultSLOPercentile because their
// class states no percentile: a default that decides which plans and candidates pass,
// printed with its value (nil when every SLO states one).
func DefaultPercentileNotes(w *formats.Workload) []string {
	var at []string
	for _, c := range ClassesOf(w) {
		for _, f := range []struct {
			name string
			set  bool
			pct  string
		}{{"slo", c.SLO > 0, c.SLOPercentile}, {"ttft_slo", c.TTFTSLO > 0, c.TTFTPercentile}, {"tpot_slo", c.TPOTSLO > 0, c.TPOTPercentile}} {
			if f.set && f.pct == "" {
				at = append(at, c.Name+" "+f.name)
			}
		}
	}
	if len(at) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("SLOs judged at the default p%g (no percentile stated): %s", DefaultSLOPercentile*100, strings.Join(at, ", "))}
}

// TokenProfile summarizes a token-length distribution.
type TokenProfile struct {
	Mean float64 `json:"mean"`
	Std  float64 `json:"std,omitempty"`
	Max  int     `json:"max"`
}

// Roles of an instance in a disaggregated deployment (llm-deploy-search §1): prefill
// instances hand each request's KV to decode instances over the cluster's KV link; "" is an
// aggregated instance, which runs both phases. The deployment search proposes them, a plan
// section states them (qlmsec.QLMInstance.Role) and the engine runs them.
const (
	RolePrefill = "prefill"
	RoleDecode  = "decode"
)

// Roles are the roles an instance may state ("" = aggregated).
var Roles = []string{RolePrefill, RoleDecode}
