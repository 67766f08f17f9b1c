package formats

import (
	"encoding/json"
	"math"
)

// Plan is the output of `plan solve`: one section per system, plus provenance so that
// `plan check --resolve` can reproduce it. Only the sections that apply are present.
type Plan struct {
	TypeMeta
	Metadata   Metadata   `json:"metadata"`
	Provenance Provenance `json:"provenance"`
	// Cluster is the cluster the plan was solved for (embedded so a plan is self-contained).
	Cluster *Cluster `json:"cluster,omitempty"`
	// Fleet is the priced fleet of a plan solved with `--objective cost`:
	// absent for the planners' own objectives.
	Fleet *Fleet `json:"fleet,omitempty"`
	// Prediction is the plan's predicted outcome at its own rates, simulated by `plan solve`
	// before it wrote the plan and re-simulated by `plan check` (absent in plans written
	// before predictions were recorded).
	Prediction *Prediction `json:"prediction,omitempty"`
	// Sections are the systems' sections (SectionSet), each decoded, validated and written
	// by the Section its system registers.
	Sections SectionValues `json:"-"`
}

// Provenance records how a plan was made.
type Provenance struct {
	Tool          string `json:"tool"`
	ToolVersion   string `json:"tool_version"`
	Solver        string `json:"solver,omitempty"`
	SolverVersion string `json:"solver_version,omitempty"`
	// InputDigest is the sha256 of the canonical JSON of all inputs.
	InputDigest string     `json:"input_digest"`
	Inputs      []InputRef `json:"inputs,omitempty"`
	Strategy    string     `json:"strategy,omitempty"`
	// Options records every setting that influenced the result (flags, defaults): a JSON
	// object whose fields are the system's typed planner options (each planner package's
	// Flags struct), read back by `plan check --resolve`. Plans written before the options
	// were typed hold a string map ({"max_partitions": "3"}); planner.ReadOptions reads both.
	Options json.RawMessage `json:"options,omitempty"`
	// Defaults name, one line each with its value, the defaults that filtered candidates
	// or changed the result because the inputs left them unset (an SLO judged at the
	// default percentile, an engine budget left to vLLM's default for the GPU, a search
	// axis's default values); solve prints the same lines.
	Defaults  []string `json:"defaults,omitempty"`
	Status    string   `json:"status"`
	Objective float64  `json:"objective"`
	// Bound is the solver's proven bound on the objective (upper when maximising, lower when
	// minimising) and Gap the relative gap to it. Both are absent when no bound was proven:
	// a solve that hits its time limit before even its LP relaxation finishes has a plan
	// (the warm start) but no bound, and any number written there (+Inf, or the objective
	// itself) would claim a proof that does not exist. Use Proven to set them.
	Bound   *float64 `json:"bound,omitempty"`
	Gap     *float64 `json:"gap,omitempty"`
	SolveMs float64  `json:"solve_ms"`
	Nodes   int64    `json:"nodes,omitempty"`
	// RateMargin, when above 1, is the factor the workload's rates were multiplied by for
	// planning: the plan solved at its own rates missed its target in simulation, and `plan
	// solve` sized it for this much more (the embedded workload keeps the rates as given;
	// `plan check --resolve` re-solves at the same margin). Absent: planned at the rates.
	RateMargin float64 `json:"rate_margin,omitempty"`
	// Embedded holds the inputs themselves so the plan can be re-solved anywhere.
	Embedded *EmbeddedInputs `json:"embedded,omitempty"`
}

// Proven returns a pointer to x, or nil when x is ±Inf or NaN: how a planner records a
// solver's bound and gap, which are infinite when the solver proved no bound.
func Proven(x float64) *float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return nil
	}
	return &x
}

// Num is *p, or NaN when p is nil: for printing an optional bound or gap.
func Num(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// InputRef names one input file and its digest.
type InputRef struct {
	Kind   string `json:"kind"`
	Path   string `json:"path"`
	Digest string `json:"digest"`
}

// EmbeddedInputs are the decoded inputs a plan was solved from.
type EmbeddedInputs struct {
	Profiles []Profile `json:"profiles,omitempty"`
	Cluster  *Cluster  `json:"cluster,omitempty"`
	Workload *Workload `json:"workload,omitempty"`
}

// EmbeddedModel is the profile of model among the profiles embedded in the plan (the last
// one naming it: later profiles override earlier ones, as on the command line), or nil when
// the plan embeds none. serve's onnx workers and export's cutter both cut a model file by
// its block ranges.
func (p *Plan) EmbeddedModel(model string) *ModelProfile {
	var prof *ModelProfile
	if e := p.Provenance.Embedded; e != nil {
		for i := range e.Profiles {
			if mp, ok := e.Profiles[i].Model(model); ok {
				prof = mp
			}
		}
	}
	return prof
}

// Fleet records the GPUs a cost-optimal plan uses and what they cost per hour.
type Fleet struct {
	// Objective is "cost": the plan minimises the fleet's cost per hour at the workload's rates.
	Objective string `json:"objective"`
	// Currency is the cluster's (USD when it names none).
	Currency string `json:"currency"`
	// GPUsUsed lists per GPU type (sorted) the physical GPUs the plan deploys and their price.
	GPUsUsed []FleetGPU `json:"gpus_used"`
	// CostPerHour is Σ (count−spot_count)·price_per_hour + spot_count·spot_price_per_hour
	// (Σ count·price_per_hour without spot).
	CostPerHour float64 `json:"cost_per_hour"`
	// DefaultPrices names the types priced from the default list prices (no price_per_hour).
	DefaultPrices []string `json:"default_prices,omitempty"`
	// SpotShare is `plan solve --spot SHARE`: at most this share of each GPU type's GPUs run
	// on spot, at least 1−SHARE of them (rounded up) on-demand (SpotSplit); absent without
	// --spot, and then nothing runs on spot.
	SpotShare *float64 `json:"spot_share,omitempty"`
	// OnDemandCostPerHour is, with spot_share, what the same GPUs cost all on-demand
	// (Σ count·price_per_hour), beside cost_per_hour.
	OnDemandCostPerHour *float64 `json:"on_demand_cost_per_hour,omitempty"`
	// NoSpotPrice names, with spot_share, the GPU types used that have no
	// spot_price_per_hour in the cluster: priced and run all on-demand.
	NoSpotPrice []string `json:"no_spot_price,omitempty"`
}

// FleetGPU is one GPU type of a fleet.
type FleetGPU struct {
	GPU          string  `json:"gpu"`
	Count        int     `json:"count"`
	PricePerHour float64 `json:"price_per_hour"`
	// SpotCount is how many of Count run on spot (spot_share); Count−SpotCount run on-demand.
	SpotCount int `json:"spot_count,omitempty"`
	// SpotPricePerHour is the type's spot price per GPU (with spot_share, where it has one).
	SpotPricePerHour *float64 `json:"spot_price_per_hour,omitempty"`
}
