package solver

import (
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/plan-dev/plan/solver/internal/highs"
)

// Sentinel errors. Solve's errors wrap one of ErrCanceled, ErrAborted,
// ErrBackendUnavailable, ErrInvalidModel or ErrSolveFailed; Result.Err
// returns ErrModelInfeasible, ErrUnbounded or ErrNoFeasibleSolution.
var (
	// ErrModelInfeasible: the model has no feasible solution.
	ErrModelInfeasible = errors.New("solver: model is infeasible")
	// ErrUnbounded: the objective is unbounded in the optimization direction.
	ErrUnbounded = errors.New("solver: model is unbounded")
	// ErrNoFeasibleSolution: the time limit was reached before any feasible solution was found.
	ErrNoFeasibleSolution = errors.New("solver: no feasible solution found within the limits")
	// ErrBackendUnavailable: highs.wasm is missing or not the pinned build,
	// or PLAN_SOLVER_ENGINE asks for an engine this binary lacks; the errors
	// wrapping it say how to fix that (`make assets`, PLAN_HIGHS_WASM, ...).
	ErrBackendUnavailable = highs.ErrUnavailable
	// ErrAborted: HiGHS crashed (C++ exception, abort, trap, out of memory).
	// The process is unaffected; the instance is discarded.
	ErrAborted = highs.ErrAborted
	// ErrCanceled: the context ended before the solve finished. Errors
	// wrapping it also wrap the context's error.
	ErrCanceled = highs.ErrCanceled
	// ErrInvalidModel: Validate found a problem, or Options do not fit the model.
	ErrInvalidModel = errors.New("solver: invalid model")
	// ErrSolveFailed: HiGHS ended without a usable status (e.g. a numerical
	// solve error); Result.Status is StatusError.
	ErrSolveFailed = errors.New("solver: HiGHS failed")
)

// Status is the outcome of a solve.
type Status int

// Solve outcomes.
const (
	StatusOptimal    Status = iota + 1 // proven optimal within the gap tolerance
	StatusInfeasible                   // no feasible solution exists
	StatusUnbounded                    // the objective is unbounded
	StatusTimeLimit                    // stopped by Options.TimeLimit; see Result.HasSolution
	StatusError                        // HiGHS failed; Solve also returns an error
)

var statusNames = [...]string{"", "optimal", "infeasible", "unbounded", "time-limit", "error"}

func (s Status) String() string {
	if s > 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// Result is what a solve found.
type Result struct {
	Status Status
	// Objective is the objective of the returned solution (offset included).
	// Without a solution it is the worst value in the optimization direction
	// (+Inf when minimizing), or the best one (-Inf) when unbounded.
	Objective float64
	// Bound is the best proven bound on the optimal objective (for an LP
	// solved to optimality, the objective itself).
	Bound float64
	// Gap is the relative MIP gap as HiGHS reports it (info mip_gap,
	// roughly |Objective-Bound| / |Objective|); 0 for optimal LPs, +Inf
	// without a solution.
	Gap float64
	// Values holds one value per variable when HasSolution. Integer
	// variables are rounded to exact integers.
	Values      []float64
	HasSolution bool
	// ReducedCosts holds each variable's reduced cost (HiGHS's column dual)
	// for an optimal LP, nil otherwise: the rate at which the objective
	// worsens as a nonbasic variable leaves its bound, which bounds every
	// solution's objective and so lets a caller fix variables that no
	// solution above a cut-off can move (reduced-cost fixing).
	ReducedCosts []float64
	Nodes        int64         // branch-and-bound nodes (0 for LPs)
	Iterations   int64         // simplex/IPM iterations, all LPs included
	Wall         time.Duration // wall time of Solve
}

// Value returns the value of v in the solution, or 0 if there is none.
func (r *Result) Value(v Var) float64 {
	if int(v) < 0 || int(v) >= len(r.Values) {
		return 0
	}
	return r.Values[v]
}

// Err returns nil if the result carries a solution and otherwise the
// sentinel describing why not: ErrModelInfeasible, ErrUnbounded or ErrNoFeasibleSolution.
func (r *Result) Err() error {
	switch {
	case r.HasSolution:
		return nil
	case r.Status == StatusInfeasible:
		return ErrModelInfeasible
	case r.Status == StatusUnbounded:
		return ErrUnbounded
	case r.Status == StatusError:
		return ErrSolveFailed
	default:
		return ErrNoFeasibleSolution
	}
}

// Options tune a solve. The zero value solves to HiGHS's default gap with no
// time limit.
type Options struct {
	TimeLimit time.Duration // 0 = none
	RelGap    float64       // mip_rel_gap; 0 = HiGHS default 1e-4
	// Start is an optional MIP start, one value per variable, passed to
	// HiGHS with Highs_setSolution. HiGHS ignores an infeasible start.
	Start []float64
	// Progress, if set, is called for every MIP progress line HiGHS logs
	// (new incumbents, periodic updates). Without a race it is called from
	// the goroutine running Solve; in a race the calls come from the
	// racers' goroutines, one at a time, with the best incumbent and bound
	// of all racers and the sum of their nodes.
	Progress func(Progress)
	// Log, if set, receives the raw HiGHS log (in a race, racer 0's only).
	Log io.Writer
	// Race is how many HiGHS instances solve a MIP in parallel, each with
	// different random seeds and heuristic settings; the first to prove the
	// gap (or infeasibility) wins and the others are canceled. Branch and
	// bound on hard MILPs varies a lot with such settings, so a race is
	// usually faster than any one instance and uses all cores (each
	// instance is single-threaded). If every racer hits the time limit,
	// the best incumbent wins and Bound is the best bound any racer proved.
	// Racers other than the first start from Start, the only incumbent the
	// HiGHS C API can hand a solve, not from each other's incumbents.
	//
	// 0 races automatically: a MIP whose TimeLimit is 0 or at least
	// RaceMinTimeLimit gets min(GOMAXPROCS, 4) racers when GOMAXPROCS >= 2,
	// started only once the first instance has run for RaceDelay without
	// finishing, so that easy models never pay for a race. 1 never races;
	// n >= 2 starts n racers at once. LPs never race.
	Race int
	// Deterministic disables racing: the result then depends only on the
	// model and the options (not on timing), up to the time limit. Both
	// engines run the same HiGHS build and return the same result. A race
	// returns an optimal solution within the gap, but which one of several
	// (and so the values, node count and iterations) depends on which
	// racer finished first.
	Deterministic bool
	// NoHeuristics turns HiGHS's primal heuristics off (the root's RENS, RINS
	// and rounding sub-MIPs, feasibility jump, shifting): for a MIP solved to
	// prove a bound or infeasibility rather than to find a solution, where
	// they are pure cost.
	NoHeuristics bool
	// Cutoff, if set on a MIP, is HiGHS's objective_bound: only solutions better than it
	// (above it when maximizing) are of interest, so HiGHS prunes every node whose bound
	// does not beat it and fixes columns by reduced cost against it from the root on. It
	// suits a model that already states the same cut-off as a row (where infeasible is the
	// answer "nothing beats it"): the row alone gives HiGHS no objective limit until it
	// finds a solution of its own.
	Cutoff *float64
	// NoPresolve runs HiGHS without its presolve (presolve=off). For an LP whose presolve
	// removes little, the simplex on the model as written is the faster solve, and the
	// time limit holds: HiGHS reads its clock (and so its time limit and a cancelled
	// context) between presolve passes only, and one pass over a large model can run for
	// seconds.
	NoPresolve bool
}

// Progress is a snapshot of a running MIP solve.
type Progress struct {
	Elapsed      time.Duration // since Solve started
	Nodes        int64         // branch-and-bound nodes processed
	Incumbent    float64       // best solution's objective (valid if HasIncumbent)
	Bound        float64       // best proven bound
	Gap          float64       // relative gap; +Inf if unknown
	HasIncumbent bool
}
