package formats

// Workload says what must be served: single models with SLOs and rate weights (PPipe),
// multi-module pipelines/DAGs with one end-to-end SLO (PARD), model cascades with validation
// data (CascadeServe), LLM request classes (QLM) and dynamic workflows (DyOrc).
type Workload struct {
	TypeMeta
	Metadata   Metadata        `json:"metadata"`
	Models     []ModelWorkload `json:"models,omitempty"`
	Pipelines  []Pipeline      `json:"pipelines,omitempty"`
	Cascades   []Cascade       `json:"cascades,omitempty"`
	LLMClasses []LLMClass      `json:"llm_classes,omitempty"`
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

// LLMClass is a class of LLM requests (QLM): model, SLO, rate and token-length profile.
type LLMClass struct {
	Name  string   `json:"name"`
	Model string   `json:"model"`
	SLO   Duration `json:"slo"`
	// TTFTSLO bounds the time to first token and TPOTSLO the mean time per output token
	// after the first (LLM engine digest §3: SLOs of DistServe and Dynamo's planner); 0 =
	// none. A request meets its class's SLOs only if it meets every one the class sets.
	TTFTSLO Duration `json:"ttft_slo,omitempty"`
	TPOTSLO Duration `json:"tpot_slo,omitempty"`
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
