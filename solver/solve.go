package solver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/plan-dev/plan/solver/internal/highs"
)

// smallMIP is the integer-variable count up to which the feasibility-jump
// heuristic is switched off. It spends a fixed effort budget (~55 ms in wasm)
// however small the model; branch and bound settles such models faster.
const smallMIP = 64

// Solve solves m with HiGHS. See the package documentation for which
// outcomes are results and which are errors. ctx cancellation stops a
// running solve within milliseconds.
func Solve(ctx context.Context, m *Model, opts Options) (*Result, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCanceled, err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if err := opts.check(m); err != nil {
		return nil, err
	}
	if err := writeLPEnv(m); err != nil {
		return nil, err
	}
	eng, err := highs.Default()
	if err != nil {
		return nil, err
	}
	return solveWith(ctx, eng, m, opts, start)
}

// solveWith solves a validated model on eng, racing instances if opts ask
// for it (see Options.Race).
func solveWith(ctx context.Context, eng *highs.Engine, m *Model, opts Options, start time.Time) (*Result, error) {
	var res *Result
	var err error
	if n, delay := opts.racers(m); n > 1 {
		res, err = race(ctx, eng, m, opts, start, n, delay)
	} else {
		res, err = solveOne(ctx, eng, &session{ctx: ctx, m: m, opts: opts, start: start,
			log: opts.Log, progress: opts.Progress})
	}
	if res != nil {
		res.Wall = time.Since(start)
	}
	return res, err
}

// solveOne runs session s on an instance of eng.
func solveOne(ctx context.Context, eng *highs.Engine, s *session) (*Result, error) {
	inst, err := eng.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	// Release outlives ctx: an instance canceled mid-call is closed there,
	// a healthy one has its Highs object destroyed and goes back to the pool.
	defer eng.Release(context.WithoutCancel(ctx), inst)
	s.in = inst
	return s.solve()
}

func (o *Options) check(m *Model) error {
	switch {
	case o.Start != nil && len(o.Start) != m.NumVars():
		return fmt.Errorf("%w: Options.Start has %d values for %d vars", ErrInvalidModel, len(o.Start), m.NumVars())
	case o.TimeLimit < 0:
		return fmt.Errorf("%w: negative Options.TimeLimit %v", ErrInvalidModel, o.TimeLimit)
	case !(o.RelGap >= 0) || math.IsInf(o.RelGap, 0):
		return fmt.Errorf("%w: Options.RelGap %v", ErrInvalidModel, o.RelGap)
	case o.Race < 0:
		return fmt.Errorf("%w: negative Options.Race %d", ErrInvalidModel, o.Race)
	}
	for j, v := range o.Start {
		if math.IsNaN(v) {
			return fmt.Errorf("%w: Options.Start[%d] (%q) is NaN", ErrInvalidModel, j, m.cols[j].name)
		}
	}
	return nil
}

// session is one solve on one instance: up to three HiGHS runs. A race
// has one session per instance.
type session struct {
	ctx     context.Context
	m       *Model
	opts    Options
	in      *highs.Instance
	start   time.Time
	variant int // racer number: 0 runs HiGHS's defaults, others diversify
	// log and progress receive this session's HiGHS log and MIP progress
	// (Options.Log and Options.Progress, or a race's merged view of them).
	log      io.Writer
	progress func(Progress)
	err      error // first fatal error from an info query
}

// runMode selects how a run differs from the plain solve.
type runMode struct {
	presolveOff bool // disambiguates "unbounded or infeasible"
	zeroObj     bool // pure feasibility check, no start, no progress
}

func (s *session) solve() (*Result, error) {
	st, err := s.run(runMode{})
	if err != nil || st != highs.ModelUnboundedOrInfeasible {
		return s.result(st, err)
	}
	// Presolve often detects infeasibility or unboundedness without telling
	// which; the simplex on the unreduced model usually can.
	if st, err = s.run(runMode{presolveOff: true}); err != nil || st != highs.ModelUnboundedOrInfeasible {
		return s.result(st, err)
	}
	// Still ambiguous (typical for MIPs): the model is unbounded iff it is
	// feasible, so solve it without objective.
	st, err = s.run(runMode{presolveOff: true, zeroObj: true})
	switch {
	case err != nil:
		return nil, err
	case st == highs.ModelOptimal:
		st = highs.ModelUnbounded
	case st == highs.ModelInfeasible:
	default:
		st = highs.ModelUnboundedOrInfeasible
	}
	return s.result(st, nil)
}

// run performs one HiGHS run with a fresh Highs object.
func (s *session) run(mode runMode) (highs.ModelStatus, error) {
	ctx, in := s.ctx, s.in
	if err := in.Create(ctx); err != nil {
		return 0, err
	}
	in.SetLog(s.logWriter(mode))
	if err := s.setOptions(mode); err != nil {
		return 0, err
	}
	if err := in.PassModel(ctx, s.m.problem(mode.zeroObj)); err != nil {
		if errors.Is(err, ErrAborted) || errors.Is(err, ErrCanceled) {
			return 0, err
		}
		// HiGHS refused the model (checks beyond Validate's).
		return 0, fmt.Errorf("%w: %w", ErrInvalidModel, err)
	}
	if s.opts.Start != nil && !mode.zeroObj && s.m.nInt > 0 {
		if err := in.SetSolution(ctx, s.opts.Start); err != nil {
			return 0, err
		}
	}
	if _, err := in.Run(ctx); err != nil {
		return 0, err
	}
	// An error status from Highs_run is reflected in the model status
	// (solve error, ...), which result maps.
	return in.ModelStatus(ctx)
}

// singleThreaded keeps HiGHS on one thread: its task scheduler would start threads, which
// this single-threaded wasm build cannot do (std::thread throws, aborting the instance).
func singleThreaded(ctx context.Context, in *highs.Instance) error {
	if err := in.SetIntOption(ctx, "threads", 1); err != nil {
		return err
	}
	return in.SetStringOption(ctx, "parallel", "off")
}

func (s *session) setOptions(mode runMode) error {
	ctx, in := s.ctx, s.in
	if err := singleThreaded(ctx, in); err != nil {
		return err
	}
	// Logging stays on: it feeds Progress, Options.Log and error messages.
	if err := in.SetBoolOption(ctx, "output_flag", true); err != nil {
		return err
	}
	if s.opts.TimeLimit > 0 {
		left := s.opts.TimeLimit - time.Since(s.start)
		if err := in.SetDoubleOption(ctx, "time_limit", max(left.Seconds(), 1e-3)); err != nil {
			return err
		}
	}
	if s.opts.RelGap > 0 {
		if err := in.SetDoubleOption(ctx, "mip_rel_gap", s.opts.RelGap); err != nil {
			return err
		}
	}
	if mode.presolveOff || s.opts.NoPresolve {
		if err := in.SetStringOption(ctx, "presolve", "off"); err != nil {
			return err
		}
	}
	if s.m.nInt > 0 && s.m.nInt <= smallMIP {
		if err := in.SetBoolOption(ctx, "mip_heuristic_run_feasibility_jump", false); err != nil {
			return err
		}
	}
	if s.opts.NoHeuristics && s.m.nInt > 0 {
		if err := heuristicsOff(ctx, in); err != nil {
			return err
		}
	}
	if s.opts.Cutoff != nil && s.m.nInt > 0 && !mode.zeroObj {
		if err := setCutoff(ctx, in, *s.opts.Cutoff, s.m.sense); err != nil {
			return err
		}
	}
	if s.variant > 0 && s.m.nInt > 0 {
		if s.opts.NoHeuristics {
			// Without heuristics the racers differ by their seeds alone.
			return in.SetIntOption(ctx, "random_seed", s.variant)
		}
		return setRaceOptions(ctx, in, s.variant)
	}
	return nil
}

// heuristicsOff sets what Options.NoHeuristics means: mip_heuristic_effort 0 and, since
// effort 0 alone still runs the root's heuristics, each of them off by name.
func heuristicsOff(ctx context.Context, in *highs.Instance) error {
	if err := in.SetDoubleOption(ctx, "mip_heuristic_effort", 0); err != nil {
		return err
	}
	for _, h := range []string{"rens", "rins", "root_reduced_cost", "shifting", "zi_round", "feasibility_jump"} {
		if err := in.SetBoolOption(ctx, "mip_heuristic_run_"+h, false); err != nil {
			return err
		}
	}
	return nil
}

// setCutoff sets Options.Cutoff: HiGHS's MIP solver minimizes, with a maximized objective
// negated, and reads objective_bound in that form (TestCutoff).
func setCutoff(ctx context.Context, in *highs.Instance, b float64, sense Sense) error {
	if sense == Maximize {
		b = -b
	}
	return in.SetDoubleOption(ctx, "objective_bound", b)
}

// logWriter builds the sink for the HiGHS log of one run.
func (s *session) logWriter(mode runMode) io.Writer {
	var ws []io.Writer
	if s.log != nil {
		ws = append(ws, s.log)
	}
	if s.progress != nil && !mode.zeroObj {
		ws = append(ws, &highs.LineWriter{Fn: s.progressLine})
	}
	switch len(ws) {
	case 0:
		return nil
	case 1:
		return ws[0]
	}
	return io.MultiWriter(ws...)
}

func (s *session) progressLine(line string) {
	row, ok := highs.ParseLogLine(line)
	if !ok {
		return
	}
	s.progress(Progress{
		Elapsed:      time.Since(s.start),
		Nodes:        row.Nodes,
		Incumbent:    row.BestSol,
		Bound:        row.BestBound,
		Gap:          row.Gap,
		HasIncumbent: row.HasSolution,
	})
}

// result reads the outcome of the last run.
func (s *session) result(st highs.ModelStatus, err error) (*Result, error) {
	if err != nil {
		return nil, err
	}
	m := s.m
	isMIP := m.nInt > 0
	worst, best := math.Inf(1), math.Inf(-1)
	if m.sense == Maximize {
		worst, best = best, worst
	}
	res := &Result{Objective: worst, Bound: best, Gap: math.Inf(1)}
	switch st {
	case highs.ModelOptimal, highs.ModelEmpty:
		res.Status = StatusOptimal
	case highs.ModelInfeasible:
		res.Status, res.Bound = StatusInfeasible, worst
	case highs.ModelUnbounded:
		res.Status, res.Objective = StatusUnbounded, best
	case highs.ModelTimeLimit:
		res.Status = StatusTimeLimit
	default:
		res.Status = StatusError
		return res, fmt.Errorf("%w: model status %q", ErrSolveFailed, st.String())
	}
	if isMIP {
		res.Nodes = s.int64Info("mip_node_count")
	}
	res.Iterations = s.intInfo("simplex_iteration_count") + s.intInfo("ipm_iteration_count")
	if res.Status == StatusOptimal || res.Status == StatusTimeLimit {
		if err := s.readSolution(res, st == highs.ModelEmpty); err != nil {
			return nil, err
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	if res.Status == StatusOptimal && !res.HasSolution {
		// HiGHS claims optimality without a primal solution: not usable.
		res.Status = StatusError
		return res, fmt.Errorf("%w: optimal status without a feasible solution", ErrSolveFailed)
	}
	return res, nil
}

// readSolution fills objective, values, bound and gap for optimal and
// time-limited runs.
func (s *session) readSolution(res *Result, empty bool) error {
	m := s.m
	isMIP := m.nInt > 0
	if isMIP {
		if b := s.doubleInfo("mip_dual_bound"); !math.IsNaN(b) {
			res.Bound = b
		}
	}
	has := empty || s.intInfo("primal_solution_status") == highs.SolutionFeasible
	if !has || s.err != nil {
		return s.err
	}
	res.HasSolution = true
	if empty {
		res.Objective, res.Values = m.offset, []float64{}
	} else {
		x, dual, err := s.in.Solution(s.ctx, len(m.cols), len(m.rows))
		if err != nil {
			return err
		}
		res.Values = x
		if !isMIP && res.Status == StatusOptimal {
			res.ReducedCosts = dual
		}
		if isMIP {
			// HiGHS accepts integers within 1e-6; callers want exact ones,
			// and an objective that matches the values they get.
			for j, c := range m.cols {
				if c.integer {
					x[j] = math.Round(x[j]) + 0 // + 0 turns -0 into 0
				}
			}
			res.Objective = m.objective(x)
		} else {
			res.Objective = s.doubleInfo("objective_function_value")
		}
	}
	switch {
	case res.Status == StatusOptimal && (!isMIP || empty):
		res.Bound, res.Gap = res.Objective, 0
	case isMIP:
		res.Gap = s.doubleInfo("mip_gap")
		if res.Status == StatusOptimal && math.IsInf(res.Bound, 0) {
			res.Bound = res.Objective // e.g. solved entirely in presolve
		}
	}
	return s.err
}

// The info helpers return 0 (or NaN) for values HiGHS does not report and
// record fatal errors (abort, cancel) in s.err for the caller to return.
func (s *session) intInfo(name string) int64 {
	v, err := s.in.IntInfo(s.ctx, name)
	return max(int64(v), 0) * s.keep(err)
}

func (s *session) int64Info(name string) int64 {
	v, err := s.in.Int64Info(s.ctx, name)
	return max(v, 0) * s.keep(err)
}

func (s *session) doubleInfo(name string) float64 {
	v, err := s.in.DoubleInfo(s.ctx, name)
	if s.keep(err) == 0 {
		return math.NaN()
	}
	return v
}

// keep records a fatal err and returns 1 if the value is usable, else 0.
func (s *session) keep(err error) int64 {
	if err == nil {
		return 1
	}
	if (errors.Is(err, ErrAborted) || errors.Is(err, ErrCanceled)) && s.err == nil {
		s.err = err
	}
	return 0
}

// Version describes the backend, e.g. "HiGHS 1.15.1 (wasm, highs@1.15.3)".
// It loads the backend if needed; without one the version is not known.
// Both engines run the same wasm build (natively after wasm2c, or in wazero)
// and give the same results, so the string does not name the engine: plans
// that record it stay byte-identical whichever engine solved them. Engine
// names it.
func Version() string {
	if eng, err := highs.Default(); err == nil {
		if v := eng.Version(context.Background()); v != "" {
			return "HiGHS " + v + " (wasm, " + highs.Package + ")"
		}
	}
	return "HiGHS 1.15 (wasm, " + highs.Package + ", backend unavailable)"
}

// Engine names the engine Solve uses: "native" (HiGHS translated to C by
// wasm2c and compiled in, build tag highs_native) or "wazero" (the wasm in
// the pure-Go runtime), as chosen by PLAN_SOLVER_ENGINE or, by default, the
// native one where it was built. It is "" with an error if that engine is
// not available.
func Engine() (string, error) {
	eng, err := highs.Default()
	if err != nil {
		return "", err
	}
	return eng.Kind(), nil
}
