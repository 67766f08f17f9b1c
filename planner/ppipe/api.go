package ppipe

import (
	"fmt"
	"strings"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/planner"
)

// Strategies accepted by Options.Strategy.
const (
	StrategyPPipe = "ppipe"  // split models into pipelines over GPU pools (the MILP of PPipe §3, A.2)
	StrategyNP    = "np"     // no partitioning: whole model per GPU, best SLO-safe batch per type
	StrategyDARTR = "dart-r" // replicated DART: NP split, then one-high + one-low pipelines
)

// Rounding modes of the GPU budget. PPipe A.2, Eq. 23 counts fractional physical GPUs (g/v);
// a deployment needs whole ones, so the planner rounds up.
const (
	// RoundingStage rounds physical GPUs per (model, stage index, GPU type), as the authors'
	// code does: slices of different pipelines at the same stage index may share a GPU. The
	// plan records it in ppipe.extra.rounding, and ppipesec.PPipePlan.PhysicalGPUs — the one
	// rule the solver, Validate, Verify and the deployment count GPUs by — honours it.
	RoundingStage = ppipesec.RoundingStage
	// RoundingPipeline (default) rounds per (pipeline, stage): a physical GPU only ever hosts
	// slices of one pool, which is what the profiles measured (the slices of one GPU run the
	// same block, PPipe §5.3 footnote).
	RoundingPipeline = ppipesec.RoundingPipeline
)

// Defaults of Options' zero values.
const (
	DefaultMaxPartitions = 3
	DefaultAlpha         = 0.4
	DefaultTimeLimit     = planner.DefaultTimeLimit
	// DefaultGap is tighter than planner.DefaultGap: the PPipe authors' reference plans
	// were solved to Gurobi's default MIPGap, 1e-4, and a plan stopped at 0.1% may sit up
	// to 0.1% below them (the ppipe-deploy-panic regression's case b: 0.0101% below at
	// 1e-3, its optimum at 1e-4).
	DefaultGap = 1e-4
	// BatchFormationRho is ρ in the head stage's batch-gathering time β = ρ·(b−1)/λ̂, a term
	// the authors' artifact adds to the latency row (PPipe A.2, Eq. 27) and the paper omits.
	BatchFormationRho = 1.3
)

// Inputs are the decoded input documents of a solve.
type Inputs struct {
	// Profiles hold the models' block latency tables; a model may appear in one profile only.
	Profiles []*formats.Profile
	Cluster  *formats.Cluster
	// Workload lists the models to serve with weights and SLOs. Nil means every model of the
	// profiles, weight 1, default SLO.
	Workload *formats.Workload
	// Refs name the input files, recorded in the plan's provenance (optional).
	Refs []formats.InputRef
}

// Options tune a solve. DefaultOptions gives the paper's settings (PPipe §7.1). Every value
// means what it says: a zero Alpha plans with the full SLO. Only the fields whose zero is no
// valid setting (Strategy, MaxPartitions, TimeLimit, Gap, Rounding) take their default when
// left zero.
type Options struct {
	// Strategy is ppipe (default), np or dart-r.
	Strategy string
	// MaxPartitions P bounds the stages of a pipeline (default 3).
	MaxPartitions int
	// Alpha is the SLO margin α in [0, 1): the planner budgets T' = T − round(α·T)
	// (DefaultAlpha, 0.4, in DefaultOptions; 0 plans with the full SLO).
	Alpha float64
	// SLO, when > 0, overrides every model's SLO (the --slo flag).
	SLO time.Duration
	// TimeLimit bounds the whole solve (default 60 s); the incumbent is returned on expiry.
	TimeLimit time.Duration
	// Gap is the relative MIP gap at which the solver stops (default 0.001).
	Gap float64
	// BatchAllowance adds β = ρ·(b−1)/λ̂ to the head stage's latency. λ̂ is ArrivalRate when
	// set, else the model's workload rate_rps when given, else the throughput of a first NP
	// pass without β (the most the model carries in any NP optimum: lambda.go).
	BatchAllowance bool
	// ArrivalRate is λ̂ in requests/s for every model's batch-formation allowance (0 = the
	// workload's rate_rps, else the NP estimate). Recorded as provenance option arrival_rate.
	ArrivalRate float64
	// Replicas is how many pipelines may share one GPU-type sequence (each with its own
	// cuts, slices and batch), 1..8; 0, the zero value, is the paper's one. Replicas raise
	// throughput and shrink the MILP's gap (the LP relaxation mixes several configurations
	// of one sequence, which only replicas can realise).
	Replicas int
	// ReplicasPerLength gives every type sequence of length D K^{P−D} replicas instead (K
	// GPU types, P = MaxPartitions), as the authors' code does: its fixed-length templates
	// with empty trailing stages repeat the shorter sequences. Replicas is then unused and
	// must be 0 or 1.
	ReplicasPerLength bool
	// Rounding is RoundingPipeline (default) or RoundingStage.
	Rounding string
	// NoWarmStart disables the MIP start from the NP plan (for benchmarks of its effect).
	NoWarmStart bool
	// NoLPGuide skips the LP relaxation and the LP-restricted MILP and hands the full MILP
	// to HiGHS directly (for benchmarks of their effect).
	NoLPGuide bool
	// NoContinuousCounts skips the continuous-count relaxation and its repair (for
	// benchmarks of their effect).
	NoContinuousCounts bool
	// NoCutoff ends with the plain full MILP warm-started from the best plan instead of the
	// full MILP cut off at that plan's objective plus the gap (for benchmarks of its effect).
	NoCutoff bool
	// FillSurplus hands the GPUs the plan leaves idle back to the models as headroom, after
	// the MILP (every strategy): the model with the lowest capacity/target ratio repeatedly
	// gets the step with the most capacity per GPU, growing one of its pipelines or opening a
	// one-stage whole-model pipeline (surplus.go). TargetRPS stays the MILP's guaranteed rate
	// (load factor 1.0); ThroughputRPS reports the capacity. The CLI defaults it to true.
	FillSurplus bool
	// Deterministic zeroes Provenance.SolveMs so identical inputs give byte-identical plans
	// (used for golden files).
	Deterministic bool
	// Progress, if set, receives solver progress (from the solving goroutine).
	Progress func(Progress)
	// ToolVersion is recorded in the plan's provenance ("" = "dev").
	ToolVersion string
	// Objective is "" (maximise throughput on the cluster's counts) or planner.ObjectiveCost:
	// the least-cost fleet within each type's available count that serves every model's
	// rate_rps (cost.go).
	Objective string

	// Reserve, when set, is the wall time the caller needs after the solve for a plan whose
	// models' target rates add up to rps requests/s (plan solve's prediction of it): the
	// solve ends that much before TimeLimit (or Deadline), at most 60% of it
	// (maxReserve), so that TimeLimit bounds the whole command. It is asked again as the
	// solve learns how large the plan will be (the NP plan, then the LP bound).
	Reserve func(rps float64) time.Duration
	// Deadline, when set and earlier than the solve's start plus TimeLimit, is when the
	// caller's whole command ends (planner.Settings.Deadline): the solve ends by it, less
	// Reserve, and TimeLimit stays what the plan records.
	Deadline time.Time

	// hooks are what tests and diagnostics inject into the solve (nil: none).
	hooks *solveHooks
}

// Progress is a snapshot of a running solve, in the objective's unit (requests/s, or the
// weight-normalised worst-model requests/s for several models). Phase is "np", "lp",
// "restricted" (MILP on the LP's templates), "ppipe" or "dart-r".
type Progress = planner.Progress

// DefaultOptions are the paper's settings (PPipe §7.1): the PPipe strategy, P = 3 stages,
// an SLO margin α = 0.4, the default time limit and gap, pipeline rounding.
func DefaultOptions() Options {
	return Options{Strategy: StrategyPPipe, MaxPartitions: DefaultMaxPartitions, Alpha: DefaultAlpha,
		TimeLimit: DefaultTimeLimit, Gap: DefaultGap, Rounding: RoundingPipeline}
}

func (o Options) withDefaults() Options {
	if o.Strategy == "" {
		o.Strategy = StrategyPPipe
	}
	if o.MaxPartitions == 0 {
		o.MaxPartitions = DefaultMaxPartitions
	}
	if o.TimeLimit == 0 {
		o.TimeLimit = DefaultTimeLimit
	}
	if o.Gap == 0 {
		o.Gap = DefaultGap
	}
	if o.Rounding == "" {
		o.Rounding = RoundingPipeline
	}
	return o
}

func (o Options) validate() error {
	var msgs []string
	switch o.Strategy {
	case StrategyPPipe, StrategyNP, StrategyDARTR:
	default:
		msgs = append(msgs, fmt.Sprintf("strategy: %q: must be ppipe, np or dart-r", o.Strategy))
	}
	if o.MaxPartitions < 1 || o.MaxPartitions > 6 {
		msgs = append(msgs, fmt.Sprintf("max-partitions: %d: must be in 1..6", o.MaxPartitions))
	}
	if !(o.Alpha >= 0 && o.Alpha < 1) {
		msgs = append(msgs, fmt.Sprintf("alpha: %g: must be in [0, 1)", o.Alpha))
	}
	if o.TimeLimit < 0 {
		msgs = append(msgs, fmt.Sprintf("time-limit: %s: must be > 0", o.TimeLimit))
	}
	if !(o.Gap > 0 && o.Gap < 1) {
		msgs = append(msgs, fmt.Sprintf("gap: %g: must be in (0, 1)", o.Gap))
	}
	switch {
	case o.Replicas < 0 || o.Replicas > 8:
		msgs = append(msgs, fmt.Sprintf("replicas: %d: must be in 1..8 (or -1 for the authors' K^(P-D))", o.Replicas))
	case o.ReplicasPerLength && o.Replicas > 1:
		msgs = append(msgs, fmt.Sprintf("replicas: %d: K^(P-D) replicas per sequence already set", o.Replicas))
	}
	if o.Rounding != RoundingStage && o.Rounding != RoundingPipeline {
		msgs = append(msgs, fmt.Sprintf("rounding: %q: must be stage or pipeline", o.Rounding))
	}
	if o.SLO < 0 {
		msgs = append(msgs, fmt.Sprintf("slo: %s: must be > 0", o.SLO))
	}
	if r := o.ArrivalRate; r != 0 && !(r >= formats.MinRateRPS && r <= formats.MaxRateRPS) { // also NaN
		msgs = append(msgs, fmt.Sprintf("arrival-rate: %g: must be in [%.3g, %g] requests/s", r, formats.MinRateRPS, formats.MaxRateRPS))
	}
	if o.ArrivalRate != 0 && !o.BatchAllowance {
		msgs = append(msgs, fmt.Sprintf("arrival-rate: %g: only the batch-formation allowance uses it: set batch-allowance too", o.ArrivalRate))
	}
	if len(msgs) > 0 {
		return &InputError{Problems: msgs}
	}
	return nil
}

// InputError lists every problem found in the inputs; it matches planner.ErrInput.
type InputError = planner.InputError

// InfeasibleModel names a model whose SLO no pipeline meets, with the smallest SLO that would
// admit one (under the same margin, partitions and cluster).
type InfeasibleModel struct {
	Model       string
	SLO         time.Duration
	MinFeasible time.Duration // 0 when no SLO helps (e.g. no usable GPU type)
	// Reason explains an infeasibility that no SLO fixes (empty for SLO infeasibility).
	Reason string
}

// InfeasibleError lists the models whose SLO cannot be met; it matches planner.ErrInfeasible.
type InfeasibleError struct{ Models []InfeasibleModel }

func (e *InfeasibleError) Error() string {
	var b strings.Builder
	for i, m := range e.Models {
		if i > 0 {
			b.WriteByte('\n')
		}
		if m.Reason != "" {
			fmt.Fprintf(&b, "model %s: slo %s: %s", m.Model, m.SLO, m.Reason)
		} else if m.MinFeasible > 0 {
			fmt.Fprintf(&b, "model %s: slo %s: no pipeline meets it; the smallest feasible SLO is %s", m.Model, m.SLO, m.MinFeasible)
		} else {
			fmt.Fprintf(&b, "model %s: slo %s: no pipeline meets any SLO on this cluster", m.Model, m.SLO)
		}
	}
	return b.String()
}

// Unwrap makes errors.Is(err, planner.ErrInfeasible) true.
func (e *InfeasibleError) Unwrap() error { return planner.ErrInfeasible }
