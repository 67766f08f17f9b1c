package speedbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plan-dev/plan/bench"
	"github.com/plan-dev/plan/bench/solverbench"
	"github.com/plan-dev/plan/internal/simbench"
	"github.com/plan-dev/plan/solver"
)

// ReferenceEnv names the native HiGHS reference binary (the lpbench scripts/highs-reference.sh
// builds); without it the bench looks where the script builds it, under the working
// directory (the repository root).
const ReferenceEnv = "PLAN_HIGHS_REFERENCE"

// referenceGlob is where scripts/highs-reference.sh leaves lpbench, one build per CXXFLAGS.
const referenceGlob = "third_party/highs/reference/HiGHS-*/build*/lpbench"

func solverMeasures() []measure {
	lp := func(model string) measure {
		return measure{name: "solver-lp-" + model, group: "solver", run: func(ctx context.Context, o *Command, _ bench.Env) (Row, error) {
			return runLP(ctx, o, model)
		}}
	}
	return []measure{lp("demo"), lp("hc2-g1"), {name: "solver-milp-hc2-g1", group: "solver", run: runMILP}}
}

// model is the embedded bench solver model NAME.lp.
func model(name string) (solverbench.Model, error) {
	ms, err := solverbench.EmbeddedModels()
	if err != nil {
		return solverbench.Model{}, err
	}
	for _, m := range ms {
		if m.Name == name+".lp" {
			return m, nil
		}
	}
	return solverbench.Model{}, fmt.Errorf("no embedded model %s.lp", name)
}

// runLP compares the native engine's time per simplex iteration on the model's LP
// relaxation (presolve off, one thread: bench solver's default) with native HiGHS's on the
// same file, where the reference binary is here and took the same iterations.
func runLP(ctx context.Context, o *Command, name string) (Row, error) {
	const unit, refName = "µs/iter", "(native HiGHS)"
	tgt := target{bound: 1.10}
	m, err := model(name)
	if err != nil {
		return Row{}, err
	}
	reps := 5
	if o.quick {
		reps = 3
	}
	r, err := solverbench.Measure(ctx, m, solver.FileOptions{Engine: "native", Relax: true, Presolve: "off"}, reps)
	if errors.Is(err, solver.ErrBackendUnavailable) {
		return row("solver-lp-"+name, unit, refName, 0, 0, tgt, "the native engine is not in this binary (build with -tags highs_native)"), nil
	}
	if err != nil {
		return Row{}, err
	}
	bin, why := findReference()
	if bin == "" {
		return row("solver-lp-"+name, unit, refName, r.PerIterUs, 0, tgt,
			fmt.Sprintf("reference not available: %s; %d iterations, median of %d", why, r.Iterations, reps)), nil
	}
	iters, us, err := runReference(ctx, bin, m, reps)
	if err != nil {
		return row("solver-lp-"+name, unit, refName, r.PerIterUs, 0, tgt, fmt.Sprintf("reference not available: %s: %v", bin, err)), nil
	}
	if iters != r.Iterations {
		return row("solver-lp-"+name, unit, refName, r.PerIterUs, 0, tgt,
			fmt.Sprintf("no ratio: native HiGHS took %d iterations, the engine %d (build it with CXXFLAGS='-march=native -ffp-contract=off')", iters, r.Iterations)), nil
	}
	return row("solver-lp-"+name, unit, refName, r.PerIterUs, us, tgt,
		fmt.Sprintf("%d iterations on both, median of %d; reference %s", iters, reps, bin)), nil
}

// findReference is the native HiGHS reference binary, or "" and why there is none.
func findReference() (string, string) {
	if p := os.Getenv(ReferenceEnv); p != "" {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			return "", fmt.Sprintf("$%s=%s is not a file", ReferenceEnv, p)
		}
		return p, ""
	}
	found, _ := filepath.Glob(referenceGlob)
	if len(found) == 0 {
		return "", fmt.Sprintf("no native HiGHS at %s (scripts/highs-reference.sh builds it) and $%s unset", referenceGlob, ReferenceEnv)
	}
	slices.Sort(found)
	return found[0], ""
}

// referenceLine is the line lpbench prints per model file (scripts/highs-reference.cpp).
var referenceLine = regexp.MustCompile(`: objective \S+, (\d+) iterations, run [0-9.]+ ms, ([0-9.]+) µs/iter`)

// parseReference reads lpbench's output: the iterations (every line must agree) and the
// median time per iteration.
func parseReference(out string) (int64, float64, error) {
	var iters int64 = -1
	var us []float64
	for _, line := range strings.Split(out, "\n") {
		mm := referenceLine.FindStringSubmatch(line)
		if mm == nil {
			continue
		}
		it, err1 := strconv.ParseInt(mm[1], 10, 64)
		u, err2 := strconv.ParseFloat(mm[2], 64)
		if err1 != nil || err2 != nil {
			return 0, 0, fmt.Errorf("unreadable line %q", line)
		}
		if iters >= 0 && it != iters {
			return 0, 0, fmt.Errorf("runs disagree: %d and %d iterations", iters, it)
		}
		iters = it
		us = append(us, u)
	}
	if len(us) == 0 {
		return 0, 0, fmt.Errorf("no result line in its output %q", strings.TrimSpace(out))
	}
	slices.Sort(us)
	return iters, us[(len(us)-1)/2], nil
}

// runReference solves m's LP relaxation reps times with native HiGHS (presolve off).
func runReference(ctx context.Context, bin string, m solverbench.Model, reps int) (int64, float64, error) {
	dir, err := os.MkdirTemp("", "plan-bench-speed-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	f := filepath.Join(dir, filepath.Base(m.Name))
	if err := os.WriteFile(f, m.Data(), 0o644); err != nil {
		return 0, 0, err
	}
	args := make([]string, reps)
	for i := range args {
		args[i] = f
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "PRESOLVE=off")
	out, err := cmd.Output()
	if err != nil {
		return 0, 0, err
	}
	return parseReference(string(out))
}

// runMILP is the CPU time of the native engine solving the hc2-g1 MILP to a 0.1% gap on one
// thread: an absolute budget (8 CPU-seconds), so there is no reference and the ratio is the
// CPU-seconds themselves. The model is the last phase of the PPipe planner's solve, the full
// MILP cut off at its incumbent plus the gap (a "cutoff" row, objective ≥ t =
// incumbent·1.001, planner/ppipe's cutoff phase), so it is run as the planner runs it: primal
// heuristics off, and infeasible is the proof that no plan beats the incumbent by more
// than 0.1%. HiGHS's defaults (heuristics on) take 5,361 nodes to that proof, the
// planner's options 499 (both deterministic, the same on either engine). One option is the
// bench's own: the cut-off is also HiGHS's objective_bound (solver.Options.Cutoff), since the
// row alone gives HiGHS no objective limit to fix columns by reduced cost against (786
// nodes, 7.5-8.0 CPU-s against 10.2-10.7). The planner's throughput phase does not pass it:
// on its in-memory model, raced on two cores, it was slower (bench/RESULTS.md).
func runMILP(ctx context.Context, o *Command, _ bench.Env) (Row, error) {
	const name, unit, refName = "solver-milp-hc2-g1", "CPU-s", "(absolute budget)"
	tgt := target{bound: 8}
	m, err := model("hc2-g1")
	if err != nil {
		return Row{}, err
	}
	// Wall-clock limits (HiGHS's): the budget is 8 CPU-seconds, so these leave room for a
	// shared machine without holding a quick run for minutes.
	limit := 120 * time.Second
	if o.quick {
		limit = 20 * time.Second
	}
	opts := solver.FileOptions{Engine: "native", TimeLimit: limit, RelGap: 0.001, NoHeuristics: true}
	bound, cutoff := cutoffRow(m.Data())
	if cutoff {
		opts.ObjectiveBound = &bound
	}
	cpu0 := simbench.CPUTime()
	r, err := solver.SolveFile(ctx, m.Name, m.Data(), opts)
	cpu := (simbench.CPUTime() - cpu0).Seconds()
	if errors.Is(err, solver.ErrBackendUnavailable) {
		return row(name, unit, refName, 0, 0, tgt, "the native engine is not in this binary (build with -tags highs_native)"), nil
	}
	if err != nil {
		return Row{}, err
	}
	proof, ok := milpProof(r.Status, r.Gap, cutoff, 0.001)
	if !ok {
		return row(name, unit, refName, cpu, 0, tgt, fmt.Sprintf("did not reach the 0.1%% gap within the %v limit (%s, %d nodes): ours is the CPU spent, a lower bound; no ratio", limit, r.Status, r.Nodes)), nil
	}
	note := fmt.Sprintf("%s, %d nodes, %.1f s wall, heuristics off, objective_bound %g; an absolute budget: the ratio is the CPU-seconds", proof, r.Nodes, r.Run.Seconds(), bound)
	rw := row(name, unit, refName, cpu, 0, tgt, note)
	rw.Ratio = rw.Ours
	rw.Met = rw.Ours != nil && cpu <= tgt.bound
	return rw, nil
}

// cutoffRow reads an LP-format model's cut-off row, as the planner writes it and HiGHS's LP
// writer prints it (" cutoff: z >= t" on a maximized model, "... <= t" on a minimized
// one), and returns t as HiGHS's objective_bound reads it: the minimized objective's,
// so −t for the maximized model. ok is false without such a row.
func cutoffRow(lp []byte) (bound float64, ok bool) {
	m := cutoffLine.FindSubmatch(lp)
	if m == nil {
		return 0, false
	}
	t, err := strconv.ParseFloat(string(m[2]), 64)
	if err != nil {
		return 0, false
	}
	if string(m[1]) == ">=" {
		return -t, true
	}
	return t, true
}

var cutoffLine = regexp.MustCompile(`(?m)^ cutoff: [^\n]*?(>=|<=) (\S+)$`)

// milpProof says how a run proved the gap, if it did: a gap within it, or, on a model cut
// off at its incumbent plus the gap, infeasibility (no solution above the cut-off, so the
// incumbent is within the gap of the optimum).
func milpProof(status string, gap float64, cutoff bool, want float64) (string, bool) {
	switch {
	case gap <= want: // false for NaN: no incumbent
		return fmt.Sprintf("%s, gap %s", status, bench.Pct(gap)), true
	case cutoff && status == solver.StatusInfeasible.String():
		return "infeasible above the cut-off: the incumbent is within the gap", true
	}
	return "", false
}
