package solver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/plan-dev/plan/solver/internal/highs"
)

// FileOptions says how SolveFile runs a model file.
type FileOptions struct {
	// Engine is "native", "wazero" or "" for the default (PLAN_SOLVER_ENGINE).
	Engine string
	// Relax solves the LP relaxation: integrality is dropped.
	Relax bool
	// Presolve is HiGHS's presolve option: "on", "off" or "choose" ("" = HiGHS's default).
	Presolve string
	// TimeLimit stops the run (0 = none); RelGap is the MIP gap at which it stops (0 = HiGHS's).
	TimeLimit time.Duration
	RelGap    float64
	// NoHeuristics is Options.NoHeuristics: HiGHS's primal heuristics off, as the PPipe
	// planner runs a MILP cut off at its incumbent, where the work is a proof.
	NoHeuristics bool
	// ObjectiveBound is HiGHS's objective_bound as HiGHS reads it (nil = none): in the
	// minimized form, the negated objective of a maximized model (Options.Cutoff is the
	// same in the model's own sense).
	ObjectiveBound *float64
	// HighsOptions are further HiGHS options as "name=value", set last (so they override
	// the fields above) in order; HiGHS parses each value by its option's type, as in an
	// options file. One it refuses (no such option, a value out of range) is an
	// ErrInvalidOption naming it.
	HighsOptions []string
	// Log receives HiGHS's log of the run (nil = none).
	Log io.Writer
}

// ErrInvalidOption is a HiGHS option (FileOptions.HighsOptions) that is malformed or that
// HiGHS refuses.
var ErrInvalidOption = errors.New("solver: invalid HiGHS option")

// ParseHighsOption splits a "name=value" HiGHS option; the name must be non-empty and
// the value present (it may be empty only for a string option, which HiGHS then judges).
func ParseHighsOption(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(name, " \t") {
		return "", "", fmt.Errorf("%w: %q: want name=value", ErrInvalidOption, s)
	}
	return name, strings.TrimSpace(value), nil
}

// FileResult is what SolveFile reports of one run.
type FileResult struct {
	Engine string // the engine's kind
	Source string // what the engine runs (the wasm package; for native, its memory check)
	// Status is HiGHS's model status, e.g. "Optimal" or "Time limit reached".
	Status     string
	Objective  float64
	Bound      float64 // MIP dual bound; the objective for an LP
	Gap        float64 // MIP relative gap; 0 for an LP
	Iterations int64   // simplex iterations
	Nodes      int64   // branch-and-bound nodes
	Run        time.Duration
}

// SolveFile solves a model file (LP or MPS format, by the extension of name, as HiGHS reads
// it) on one instance of an engine, with one thread and HiGHS's log off, and reports how the
// run went. It serves `plan bench solver`: the models PLAN_WRITE_LP writes, timed on each
// engine, so that a run is comparable with native HiGHS on the same file.
func SolveFile(ctx context.Context, name string, data []byte, o FileOptions) (*FileResult, error) {
	switch ext := strings.ToLower(filepath.Ext(name)); ext {
	case ".lp", ".mps":
	default:
		return nil, fmt.Errorf("%w: %s: want a .lp or .mps file, not %q", ErrInvalidModel, name, ext)
	}
	switch o.Presolve {
	case "", "on", "off", "choose":
	default:
		return nil, fmt.Errorf("%w: presolve %q: want on, off or choose", ErrInvalidModel, o.Presolve)
	}
	if o.TimeLimit < 0 || o.RelGap < 0 || math.IsNaN(o.RelGap) {
		return nil, fmt.Errorf("%w: time limit %v and gap %v must be >= 0", ErrInvalidModel, o.TimeLimit, o.RelGap)
	}
	for _, kv := range o.HighsOptions {
		if _, _, err := ParseHighsOption(kv); err != nil {
			return nil, err
		}
	}
	var eng *highs.Engine
	var err error
	if o.Engine == "" {
		eng, err = highs.Default()
	} else {
		eng, err = highs.ForKind(o.Engine)
	}
	if err != nil {
		return nil, err
	}
	in, err := eng.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer eng.Release(context.WithoutCancel(ctx), in)
	if err := in.Create(ctx); err != nil {
		return nil, err
	}
	in.SetLog(o.Log)
	if err := fileOptions(ctx, in, o); err != nil {
		return nil, err
	}
	if err := in.ReadModel(ctx, filepath.Base(name), data); err != nil {
		if errors.Is(err, ErrCanceled) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidModel, name, err)
	}
	t0 := time.Now()
	if _, err := in.Run(ctx); err != nil {
		return nil, err
	}
	res := &FileResult{Engine: eng.Kind(), Source: eng.Source(), Run: time.Since(t0)}
	st, err := in.ModelStatus(ctx)
	if err != nil {
		return nil, err
	}
	res.Status = st.String()
	iters, err := in.IntInfo(ctx, "simplex_iteration_count")
	if err != nil {
		return nil, err
	}
	res.Iterations = int64(max(iters, 0))
	if res.Objective, err = in.DoubleInfo(ctx, "objective_function_value"); err != nil {
		return nil, err
	}
	res.Bound = res.Objective
	// MIP information is invalid (an error status, not a value) after an LP.
	if nodes, err := in.Int64Info(ctx, "mip_node_count"); err == nil && nodes >= 0 {
		res.Nodes = nodes
		if b, err := in.DoubleInfo(ctx, "mip_dual_bound"); err == nil {
			res.Bound = b
		}
		if g, err := in.DoubleInfo(ctx, "mip_gap"); err == nil {
			res.Gap = g
		}
	}
	return res, nil
}

// fileOptions sets what SolveFile runs with.
func fileOptions(ctx context.Context, in *highs.Instance, o FileOptions) error {
	if err := singleThreaded(ctx, in); err != nil {
		return err
	}
	if err := in.SetBoolOption(ctx, "output_flag", o.Log != nil); err != nil {
		return err
	}
	if o.Relax {
		if err := in.SetBoolOption(ctx, "solve_relaxation", true); err != nil {
			return err
		}
	}
	if o.Presolve != "" {
		if err := in.SetStringOption(ctx, "presolve", o.Presolve); err != nil {
			return err
		}
	}
	if o.TimeLimit > 0 {
		if err := in.SetDoubleOption(ctx, "time_limit", o.TimeLimit.Seconds()); err != nil {
			return err
		}
	}
	if o.NoHeuristics {
		if err := heuristicsOff(ctx, in); err != nil {
			return err
		}
	}
	if o.ObjectiveBound != nil {
		if err := in.SetDoubleOption(ctx, "objective_bound", *o.ObjectiveBound); err != nil {
			return err
		}
	}
	if o.RelGap > 0 {
		if err := in.SetDoubleOption(ctx, "mip_rel_gap", o.RelGap); err != nil {
			return err
		}
	}
	for _, kv := range o.HighsOptions {
		name, value, _ := ParseHighsOption(kv) // checked in SolveFile
		// HiGHS's string setter parses the value by the option's type (bool, int,
		// double or string), as its options files do, and refuses an unknown name.
		if err := in.SetStringOption(ctx, name, value); err != nil {
			if errors.Is(err, ErrCanceled) || errors.Is(err, ErrAborted) {
				return err
			}
			return fmt.Errorf("%w: %s=%s: %w", ErrInvalidOption, name, value, err)
		}
	}
	return nil
}
