package ppipe

import (
	"github.com/plan-dev/plan/formats"
)

// Flags are PPipe's options as `plan solve` takes them and as a plan records them in
// provenance.options (the solved values, defaults resolved), so `plan check --resolve`
// re-solves with the same ones. Strategy, SLO, TimeLimit and Gap come from plan solve's
// common flags; the others are PPipe's own, each bound to the flag its `flag` tag names
// (internal/base/optflag).
type Flags struct {
	// Strategy: ppipe (default), np or dart-r.
	Strategy string `json:"strategy"`
	// MaxPartitions P bounds the stages of a pipeline (default 3, PPipe §4.2).
	MaxPartitions int `json:"max_partitions" flag:"max-partitions" help:"maximum partitions (stages) per pipeline, P"`
	// Alpha is the SLO margin α: plan with T' = T − round(α·T) (default 0.4; 0 = none).
	Alpha float64 `json:"alpha" flag:"alpha" help:"SLO margin α: plan with T' = SLO − round(α·SLO)"`
	// SLO, when set, overrides every model's SLO.
	SLO formats.Duration `json:"slo,omitempty"`
	// TimeLimit bounds the solve (default 60s); Gap is the MIP gap (default DefaultGap, 1e-4).
	TimeLimit formats.Duration `json:"time_limit"`
	Gap       float64          `json:"gap"`
	// Rounding: pipeline (default) or stage.
	Rounding string `json:"rounding" flag:"rounding" help:"GPU rounding: pipeline (each pool on its own GPUs, as the runtime deploys) or stage (pools at one stage index share GPUs, as PPipe's code)"`
	// BatchAllowance budgets the batch-gathering time at the head stage (default false);
	// ArrivalRate is its λ̂ in requests/s (0 = the workload's rate_rps, else NP's estimate).
	BatchAllowance bool    `json:"batch_allowance" flag:"batch-allowance" help:"budget the time to gather a batch at the head stage (β = 1.3·(b−1)/λ̂, two passes)"`
	ArrivalRate    float64 `json:"arrival_rate,omitempty" flag:"arrival-rate" help:"λ̂ in requests/s for --batch-allowance (default: each model's workload rate_rps, else the NP estimate)"`
	// WarmStart starts the MILP from the NP plan (default true).
	WarmStart bool `json:"warm_start" flag:"no-warm-start,negate" help:"do not start the MILP from the NP plan"`
	// Replicas: pipelines per GPU-type sequence (default 1). On the command line and in a
	// plan's recorded options -1 stands for K^(P−D), the authors' code
	// (Options.ReplicasPerLength).
	Replicas int `json:"replicas" flag:"replicas" help:"pipelines per GPU-type sequence, each with its own cuts and batch (-1 = K^(P-D), as the authors' code)"`
	// FillSurplus hands idle GPUs to the models as headroom (default true in plan solve;
	// plans recorded before the option existed had none).
	FillSurplus bool `json:"fill_surplus" flag:"fill-surplus" help:"hand the GPUs the plan leaves idle to the models as headroom (lowest capacity/target first); target_rps stays the solver's guaranteed rate"`
	// Objective is cost for a least-cost fleet, absent for throughput.
	Objective string `json:"objective,omitempty"`
}

// DefaultFlags are `plan solve`'s defaults for PPipe.
func DefaultFlags() Flags {
	return Flags{Strategy: StrategyPPipe, MaxPartitions: DefaultMaxPartitions, Alpha: DefaultAlpha,
		TimeLimit: formats.Duration(DefaultTimeLimit), Gap: DefaultGap, Rounding: RoundingPipeline,
		WarmStart: true, Replicas: 1, FillSurplus: true}
}

// replicasPerLength is the recorded value of Replicas that stands for
// Options.ReplicasPerLength.
const replicasPerLength = -1

// Options returns the solve options of f, value for value.
func (f Flags) Options() Options {
	o := Options{Strategy: f.Strategy, MaxPartitions: f.MaxPartitions, Alpha: f.Alpha, SLO: f.SLO.D(),
		TimeLimit: f.TimeLimit.D(), Gap: f.Gap, BatchAllowance: f.BatchAllowance, ArrivalRate: f.ArrivalRate,
		Replicas: f.Replicas, Rounding: f.Rounding, NoWarmStart: !f.WarmStart, FillSurplus: f.FillSurplus, Objective: f.Objective}
	if f.Replicas == replicasPerLength {
		o.Replicas, o.ReplicasPerLength = 0, true
	}
	return o
}

// flags records o, whose defaults are resolved.
func (o Options) flags() Flags {
	f := Flags{Strategy: o.Strategy, MaxPartitions: o.MaxPartitions, Alpha: o.Alpha, SLO: formats.Duration(o.SLO),
		TimeLimit: formats.Duration(o.TimeLimit), Gap: o.Gap, Rounding: o.Rounding, BatchAllowance: o.BatchAllowance,
		ArrivalRate: o.ArrivalRate, WarmStart: !o.NoWarmStart, Replicas: o.Replicas, FillSurplus: o.FillSurplus, Objective: o.Objective}
	if o.ReplicasPerLength {
		f.Replicas = replicasPerLength
	}
	return f
}
