package solver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plan-dev/plan/solver/internal/highs"
)

func t1(v Var, c float64) Term { return Term{v, c} }

// knownCase is a small model with a known outcome.
type knownCase struct {
	name   string
	build  func() *Model
	status Status
	obj    float64
	values []float64 // checked when non-nil
}

// check fails t unless a solve of the case returned its status and, where it has one, its
// optimum.
func (tc knownCase) check(t *testing.T, res *Result, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != tc.status {
		t.Fatalf("status = %v, want %v", res.Status, tc.status)
	}
	if !math.IsInf(tc.obj, 0) && math.Abs(res.Objective-tc.obj) > 1e-6 {
		t.Errorf("objective = %v, want %v", res.Objective, tc.obj)
	}
}

func TestSolveKnown(t *testing.T) {
	needBackend(t)
	for _, tc := range knownCases() {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.build()
			res, err := Solve(context.Background(), m, Options{})
			if err != nil {
				t.Fatalf("Solve: %v", err)
			}
			if res.Status != tc.status {
				t.Fatalf("status = %v, want %v", res.Status, tc.status)
			}
			if math.IsInf(tc.obj, 0) {
				if res.Objective != tc.obj || res.HasSolution {
					t.Errorf("objective = %v, HasSolution = %v; want %v, false", res.Objective, res.HasSolution, tc.obj)
				}
				if res.Err() == nil {
					t.Error("Err() = nil for a result without solution")
				}
				return
			}
			if !res.HasSolution || math.Abs(res.Objective-tc.obj) > 1e-6 {
				t.Fatalf("objective = %v (HasSolution %v), want %v", res.Objective, res.HasSolution, tc.obj)
			}
			if math.Abs(res.Bound-tc.obj) > 1e-4*math.Max(1, math.Abs(tc.obj)) || res.Gap > 1e-4 {
				t.Errorf("bound = %v, gap = %v at optimum %v", res.Bound, res.Gap, tc.obj)
			}
			checkFeasible(t, m, res.Values, res.Objective, 1e-6)
			for j, want := range tc.values {
				if got := res.Value(Var(j)); math.Abs(got-want) > 1e-6 {
					t.Errorf("value of %s = %v, want %v", m.VarName(Var(j)), got, want)
				}
			}
			if res.Err() != nil || res.Wall <= 0 {
				t.Errorf("Err() = %v, Wall = %v", res.Err(), res.Wall)
			}
		})
	}
}

func knownCases() []knownCase {
	return []knownCase{
		{"lp-maximize", func() *Model {
			m := NewModel("lp", Maximize)
			x := m.AddContinuous("x", 0, 3, 3)
			y := m.AddContinuous("y", 0, Inf, 2)
			m.AddRow("a", -Inf, 4, t1(x, 1), t1(y, 1))
			m.AddRow("b", -Inf, 6, t1(x, 1), t1(y, 3))
			return m
		}, StatusOptimal, 11, []float64{3, 1}},
		{"lp-equality-rows", func() *Model {
			m := NewModel("eq", Minimize)
			x := m.AddContinuous("x", 0, Inf, 1)
			y := m.AddContinuous("y", 0, Inf, 2)
			z := m.AddContinuous("z", 1, Inf, 3)
			m.AddRow("sum", 10, 10, t1(x, 1), t1(y, 1), t1(z, 1))
			m.AddRow("diff", 2, 2, t1(x, 1), t1(y, -1))
			return m
		}, StatusOptimal, 15.5, []float64{5.5, 3.5, 1}},
		{"lp-free-vars", func() *Model {
			// min t with t >= |x - 3| and x = 10 - y, y in [0, 5].
			m := NewModel("free", Minimize)
			x := m.AddContinuous("x", -Inf, Inf, 0)
			tv := m.AddContinuous("t", -Inf, Inf, 1)
			y := m.AddContinuous("y", 0, 5, 0)
			m.AddRow("pos", -3, Inf, t1(tv, 1), t1(x, -1))
			m.AddRow("neg", 3, Inf, t1(tv, 1), t1(x, 1))
			m.AddRow("link", 10, 10, t1(x, 1), t1(y, 1))
			return m
		}, StatusOptimal, 2, []float64{5, 2, 5}},
		{"lp-free-negative-offset", func() *Model {
			m := NewModel("neg", Minimize)
			x := m.AddContinuous("x", -Inf, Inf, 1)
			m.AddRow("r", -7, Inf, t1(x, 1))
			m.SetObjOffset(100)
			return m
		}, StatusOptimal, 93, []float64{-7}},
		{"lp-ranged-duplicates", func() *Model {
			// 2 <= x + x + y <= 4 is 2 <= 2x + y <= 4.
			m := NewModel("range", Maximize)
			x := m.AddContinuous("x", 0, Inf, 1)
			y := m.AddContinuous("y", 0, Inf, 1)
			m.AddRow("r", 2, 4, t1(x, 1), t1(y, 1), t1(x, 1))
			return m
		}, StatusOptimal, 4, []float64{0, 4}},
		{"milp-integer-bounds", func() *Model {
			m := NewModel("ib", Minimize)
			a := m.AddInteger("a", -5, 5, 3)
			b := m.AddInteger("b", -3, 4, -2)
			m.AddRow("r1", -2, Inf, t1(a, 1), t1(b, 1))
			m.AddRow("r2", -Inf, 1.5, t1(a, 1), t1(b, -1))
			return m
		}, StatusOptimal, -23, []float64{-5, 4}},
		{"milp-fractional-bounds", func() *Model {
			m := NewModel("fb", Maximize)
			x := m.AddInteger("x", -2.5, 3.7, 1)
			y := m.AddContinuous("y", 0, 0.25, 1)
			m.AddRow("r", -Inf, 10, t1(x, 1), t1(y, 1))
			return m
		}, StatusOptimal, 3.25, []float64{3, 0.25}},
		{"milp-knapsack", func() *Model {
			m := NewModel("knap", Maximize)
			w := []float64{4, 6, 3, 5}
			v := []float64{10, 13, 7, 8}
			var terms []Term
			for i := range w {
				terms = append(terms, t1(m.AddBinary("", v[i]), w[i]))
			}
			m.AddRow("cap", -Inf, 10, terms...)
			m.SetObjOffset(1)
			return m
		}, StatusOptimal, 24, []float64{1, 1, 0, 0}},
		{"milp-general-ints", func() *Model {
			// max x + y; x + 2y <= 4; 3x + y <= 6: LP optimum 2.8, MILP 2.
			m := NewModel("gi", Maximize)
			x := m.AddInteger("x", 0, 10, 1)
			y := m.AddInteger("y", 0, 10, 1)
			m.AddRow("a", -Inf, 4, t1(x, 1), t1(y, 2))
			m.AddRow("b", -Inf, 6, t1(x, 3), t1(y, 1))
			return m
		}, StatusOptimal, 2, nil},
		{"empty-model", func() *Model {
			m := NewModel("empty", Minimize)
			m.SetObjOffset(4.5)
			return m
		}, StatusOptimal, 4.5, []float64{}},
		{"no-rows", func() *Model {
			m := NewModel("norows", Maximize)
			m.AddInteger("x", 0, 7, 2)
			m.AddContinuous("y", -1, 1, -1)
			return m
		}, StatusOptimal, 15, []float64{7, -1}},
		{"lp-infeasible", func() *Model {
			m := NewModel("inf", Minimize)
			x := m.AddContinuous("x", 0, Inf, 1)
			y := m.AddContinuous("y", 0, Inf, 1)
			m.AddRow("ge", 5, Inf, t1(x, 1), t1(y, 1))
			m.AddRow("le", -Inf, 3, t1(x, 1), t1(y, 1))
			return m
		}, StatusInfeasible, math.Inf(1), nil},
		{"milp-infeasible-integrality", func() *Model {
			// 2x = 1 has an LP solution but no integer one.
			m := NewModel("inf2", Minimize)
			x := m.AddInteger("x", 0, 5, 1)
			m.AddRow("odd", 1, 1, t1(x, 2))
			return m
		}, StatusInfeasible, math.Inf(1), nil},
		{"lp-unbounded", func() *Model {
			m := NewModel("unb", Maximize)
			x := m.AddContinuous("x", 0, Inf, 1)
			y := m.AddContinuous("y", 0, Inf, 0)
			m.AddRow("r", -Inf, 1, t1(x, 1), t1(y, -1))
			return m
		}, StatusUnbounded, math.Inf(1), nil},
		{"milp-unbounded", func() *Model {
			m := NewModel("unb2", Minimize)
			x := m.AddInteger("x", -Inf, Inf, 1)
			y := m.AddInteger("y", 0, Inf, 1)
			m.AddRow("r", -Inf, 3, t1(x, 1), t1(y, 2))
			return m
		}, StatusUnbounded, math.Inf(-1), nil},
		{"lp-infeasible-and-dual-infeasible", func() *Model {
			// Primal and dual infeasible: presolve tends to report
			// "unbounded or infeasible", which Solve must resolve.
			m := NewModel("both", Minimize)
			x := m.AddContinuous("x", 0, Inf, -1)
			y := m.AddContinuous("y", 0, Inf, -1)
			m.AddRow("a", 1, Inf, t1(x, 1), t1(y, -1))
			m.AddRow("b", 1, Inf, t1(x, -1), t1(y, 1))
			return m
		}, StatusInfeasible, math.Inf(1), nil},
		{"milp-infeasible-unbounded-relaxation", func() *Model {
			m := NewModel("both2", Maximize)
			x := m.AddInteger("x", 0, Inf, 1)
			y := m.AddInteger("y", 0, Inf, 1)
			m.AddRow("a", 0.5, 0.5, t1(x, 1), t1(y, -1))
			return m
		}, StatusInfeasible, math.Inf(-1), nil},
	}
}

func TestErrSentinels(t *testing.T) {
	for _, tc := range []struct {
		r    Result
		want error
	}{
		{Result{Status: StatusOptimal, HasSolution: true}, nil},
		{Result{Status: StatusTimeLimit, HasSolution: true}, nil},
		{Result{Status: StatusTimeLimit}, ErrNoFeasibleSolution},
		{Result{Status: StatusInfeasible}, ErrModelInfeasible},
		{Result{Status: StatusUnbounded}, ErrUnbounded},
		{Result{Status: StatusError}, ErrSolveFailed},
	} {
		if got := tc.r.Err(); got != tc.want {
			t.Errorf("%v.Err() = %v, want %v", tc.r.Status, got, tc.want)
		}
	}
	for s, want := range map[Status]string{StatusOptimal: "optimal", StatusInfeasible: "infeasible",
		StatusUnbounded: "unbounded", StatusTimeLimit: "time-limit", StatusError: "error", 0: "status(0)"} {
		if s.String() != want {
			t.Errorf("Status(%d).String() = %q, want %q", int(s), s.String(), want)
		}
	}
	t.Setenv(highs.EnvWasm, "/nonexistent/highs.wasm")
	if _, _, err := highs.LoadWasm(); !errors.Is(err, ErrBackendUnavailable) ||
		!strings.Contains(err.Error(), "make assets") || !strings.Contains(err.Error(), "PLAN_HIGHS_WASM") {
		t.Errorf("missing wasm: %v; the error must say how to fix it", err)
	}
}

func TestSolveRejectsInvalid(t *testing.T) {
	m := NewModel("bad", Minimize)
	m.AddContinuous("x", 1, 0, 1)
	if _, err := Solve(context.Background(), m, Options{}); !errors.Is(err, ErrInvalidModel) {
		t.Fatalf("Solve(lb > ub) error = %v, want ErrInvalidModel", err)
	}
	m = NewModel("ok", Minimize)
	m.AddContinuous("x", 0, 1, 1)
	for _, o := range []Options{{Start: []float64{1, 2}}, {TimeLimit: -1}, {RelGap: math.NaN()}, {Start: []float64{math.NaN()}}} {
		if _, err := Solve(context.Background(), m, o); !errors.Is(err, ErrInvalidModel) {
			t.Errorf("Solve(%+v) error = %v, want ErrInvalidModel", o, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Solve(ctx, m, Options{}); !errors.Is(err, ErrCanceled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Solve(canceled ctx) error = %v, want ErrCanceled and context.Canceled", err)
	}
}

func TestTimeLimitIncumbent(t *testing.T) {
	needBackend(t)
	m := multiKnapsack(1, 60, 5)
	start := time.Now()
	res, err := Solve(context.Background(), m, Options{TimeLimit: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("200ms time limit took %v", el)
	}
	if res.Status != StatusTimeLimit || !res.HasSolution || !(res.Gap > 0) {
		t.Fatalf("status %v, HasSolution %v, gap %v; want time-limit with an incumbent and a positive gap", res.Status, res.HasSolution, res.Gap)
	}
	if res.Bound < res.Objective || res.Err() != nil {
		t.Errorf("maximization bound %v below incumbent %v (Err %v)", res.Bound, res.Objective, res.Err())
	}
	checkFeasible(t, m, res.Values, res.Objective, 1e-6)
	t.Logf("incumbent %v bound %v gap %.2f%% nodes %d wall %v", res.Objective, res.Bound, 100*res.Gap, res.Nodes, res.Wall)
}

func TestProgressAndLog(t *testing.T) {
	needBackend(t)
	m := multiKnapsack(2, 60, 5)
	var calls []Progress
	var log bytes.Buffer
	res, err := Solve(context.Background(), m, Options{
		TimeLimit: 300 * time.Millisecond,
		Progress:  func(p Progress) { calls = append(calls, p) },
		Log:       &log,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "HiGHS") {
		t.Errorf("log lacks the HiGHS banner:\n%s", log.String())
	}
	if len(calls) == 0 {
		t.Fatalf("no progress reported; log:\n%s", log.String())
	}
	last := calls[len(calls)-1]
	if !last.HasIncumbent || last.Incumbent > res.Objective+1e-6 || last.Elapsed <= 0 || last.Elapsed > res.Wall {
		t.Errorf("last progress %+v inconsistent with result objective %v wall %v", last, res.Objective, res.Wall)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i].Nodes < calls[i-1].Nodes {
			t.Errorf("node count went back: %+v after %+v", calls[i], calls[i-1])
		}
	}
}

func TestMIPStart(t *testing.T) {
	needBackend(t)
	m := multiKnapsack(3, 40, 3)
	start := make([]float64, m.NumVars()) // all-zero is feasible
	start[0] = 1
	var log bytes.Buffer
	res, err := Solve(context.Background(), m, Options{Start: start, Log: &log, RelGap: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if !res.HasSolution || res.Gap > 0.01+1e-9 {
		t.Fatalf("status %v gap %v", res.Status, res.Gap)
	}
	t.Logf("iterations %d nodes %d", res.Iterations, res.Nodes)
	if !strings.Contains(log.String(), "MIP start solution is feasible") {
		t.Errorf("log does not show the start solution being used:\n%s", log.String())
	}
}

func TestCancel(t *testing.T) {
	needBackend(t)
	m := multiKnapsack(4, 80, 6)
	ctx, cancel := context.WithCancel(context.Background())
	var canceledAt time.Time
	time.AfterFunc(300*time.Millisecond, func() { canceledAt = time.Now(); cancel() })
	res, err := Solve(ctx, m, Options{})
	if !errors.Is(err, ErrCanceled) || !errors.Is(err, context.Canceled) || res != nil {
		t.Fatalf("Solve = %v, %v; want nil, ErrCanceled", res, err)
	}
	if lag := time.Since(canceledAt); lag > time.Second {
		t.Errorf("Solve returned %v after cancel", lag)
	} else {
		t.Logf("Solve returned %v after cancel", lag)
	}
	// The canceled instance is discarded; the next solve gets a healthy one.
	small := multiKnapsack(5, 10, 2)
	if res, err := Solve(context.Background(), small, Options{}); err != nil || res.Status != StatusOptimal {
		t.Fatalf("solve after cancel: %v, %v", res, err)
	}
	// A deadline behaves the same way.
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := Solve(ctx, m, Options{}); !errors.Is(err, ErrCanceled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Solve past deadline error = %v", err)
	}
}

func TestConcurrentSolves(t *testing.T) {
	needBackend(t)
	const workers, perWorker = 4, 3
	models := make([]*Model, 8)
	want := make([]float64, len(models))
	for i := range models {
		models[i] = multiKnapsack(uint64(100+i), 14, 2)
		res, err := Solve(context.Background(), models[i], Options{RelGap: 1e-9})
		if err != nil || res.Status != StatusOptimal {
			t.Fatalf("sequential solve %d: %v %v", i, res, err)
		}
		want[i] = res.Objective
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range perWorker {
				i := (w + k) % len(models)
				res, err := Solve(context.Background(), models[i], Options{RelGap: 1e-9})
				switch {
				case err != nil:
					errs <- err
				case res.Status != StatusOptimal || math.Abs(res.Objective-want[i]) > 1e-6:
					errs <- errors.New("model " + models[i].Name() + ": " + res.Status.String())
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestVersion(t *testing.T) {
	needBackend(t)
	v := Version()
	if !strings.HasPrefix(v, "HiGHS 1.15.") || !strings.Contains(v, "highs@1.15.3") {
		t.Errorf("Version() = %q", v)
	}
}

// TestFeasibilityRun covers the last step of resolving "unbounded or
// infeasible", which HiGHS rarely leaves ambiguous after the presolve-off
// rerun: a zero-objective run is optimal iff the model is feasible.
func TestFeasibilityRun(t *testing.T) {
	needBackend(t)
	eng, _ := highs.Default()
	for _, tc := range []struct {
		feasible bool
		want     highs.ModelStatus
	}{{true, highs.ModelOptimal}, {false, highs.ModelInfeasible}} {
		m := NewModel("unb", Maximize)
		x := m.AddInteger("x", 0, Inf, 1)
		lb := 0.0
		if !tc.feasible {
			lb = 0.5
		}
		m.AddRow("r", lb, 0.5, t1(x, 1))
		inst, err := eng.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		s := &session{ctx: context.Background(), m: m, in: inst, start: time.Now()}
		st, err := s.run(runMode{presolveOff: true, zeroObj: true})
		eng.Release(context.Background(), inst)
		if err != nil || st != tc.want {
			t.Errorf("feasible=%v: status %v, %v; want %v", tc.feasible, st, err, tc.want)
		}
	}
}

// TestSolveWithoutBackend runs where highs.wasm is absent (e.g. the test
// binary started outside the checkout): Solve must say how to get it.
func TestSolveWithoutBackend(t *testing.T) {
	if _, err := highs.Default(); err == nil {
		t.Skip("backend present")
	}
	m := NewModel("m", Minimize)
	m.AddContinuous("x", 0, 1, 1)
	_, err := Solve(context.Background(), m, Options{})
	if !errors.Is(err, ErrBackendUnavailable) || !strings.Contains(err.Error(), "make assets") {
		t.Fatalf("Solve without backend: %v", err)
	}
	if v := Version(); !strings.Contains(v, "unavailable") {
		t.Errorf("Version() = %q", v)
	}
}

// TestProgressPanicPropagates checks that a panicking callback surfaces as
// that panic in the caller, not as a HiGHS failure, and harms nothing else.
func TestProgressPanicPropagates(t *testing.T) {
	needBackend(t)
	m := multiKnapsack(2, 60, 5)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the callback's panic", r)
			}
		}()
		Solve(context.Background(), m, Options{TimeLimit: time.Second, Progress: func(Progress) { panic("boom") }})
		t.Error("Solve returned normally")
	}()
	if res, err := Solve(context.Background(), multiKnapsack(5, 10, 2), Options{}); err != nil || res.Status != StatusOptimal {
		t.Fatalf("solve after panic: %v, %v", res, err)
	}
}

// TestReducedCosts: an optimal LP reports one reduced cost per column, zero on basic columns
// and |d| on a nonbasic one equal to the objective lost per unit it is pushed off its bound;
// a MIP reports none.
func TestReducedCosts(t *testing.T) {
	needBackend(t)
	// max 3x + 2y + z  s.t.  x + y + z ≤ 4,  x ≤ 3,  y, z ≥ 0.
	// Optimum x = 3, y = 1, z = 0 (objective 11); the row's dual is 2, so z (cost 1) loses
	// 1 per unit and x, at its upper bound, gains 1 per unit of bound.
	m := NewModel("rc", Maximize)
	x := m.AddContinuous("x", 0, 3, 3)
	y := m.AddContinuous("y", 0, Inf, 2)
	z := m.AddContinuous("z", 0, Inf, 1)
	m.AddRow("cap", -Inf, 4, t1(x, 1), t1(y, 1), t1(z, 1))
	res, err := Solve(context.Background(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(res.Objective-11) > 1e-9 || len(res.ReducedCosts) != 3 {
		t.Fatalf("objective %g, reduced costs %v", res.Objective, res.ReducedCosts)
	}
	for v, want := range map[Var]float64{x: 1, y: 0, z: 1} {
		if got := math.Abs(res.ReducedCosts[v]); math.Abs(got-want) > 1e-9 {
			t.Errorf("|reduced cost| of %s = %g, want %g", m.VarName(v), got, want)
		}
	}
	mi := NewModel("rc-mip", Maximize)
	a := mi.AddInteger("a", 0, 3, 1)
	mi.AddRow("r", -Inf, 2.5, t1(a, 1))
	if r, err := Solve(context.Background(), mi, Options{}); err != nil || r.ReducedCosts != nil {
		t.Errorf("MIP: reduced costs %v, err %v", r.ReducedCosts, err)
	}
}

// TestNoHeuristics: with the primal heuristics off, every known case still ends with its
// status and optimum (branch and bound alone finds and proves them), raced or not.
func TestNoHeuristics(t *testing.T) {
	needBackend(t)
	for _, tc := range knownCases() {
		for _, race := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/race=%d", tc.name, race), func(t *testing.T) {
				res, err := Solve(context.Background(), tc.build(), Options{NoHeuristics: true, Race: race})
				tc.check(t, res, err)
			})
		}
	}
}

// TestNoPresolve: without presolve every known case (LPs and MIPs) still ends with its
// status and optimum, and HiGHS's log shows that presolve did not run (with it on, the
// log of every model with rows and columns says it did).
func TestNoPresolve(t *testing.T) {
	needBackend(t)
	for _, tc := range knownCases() {
		for _, off := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/off=%v", tc.name, off), func(t *testing.T) {
				var log strings.Builder
				m := tc.build()
				res, err := Solve(context.Background(), m, Options{NoPresolve: off, Log: &log, Race: 1})
				tc.check(t, res, err)
				// HiGHS presolves a model with rows and columns only.
				if ran := strings.Contains(log.String(), "Presolving model"); ran == off && (off || m.NumRows() > 0 && m.NumVars() > 0) {
					t.Errorf("presolve ran: %v with NoPresolve %v; log:\n%s", ran, off, log.String())
				}
			})
		}
	}
}

// TestCutoff: a cut-off below the optimum (in the model's sense) keeps the optimum; one
// beyond it leaves no solution; both senses, raced or not.
func TestCutoff(t *testing.T) {
	needBackend(t)
	// max 5a + 4b + 3c, 2a + 3b + c ≤ 5, binary: 9 (a, b); min of the negation: −9.
	build := func(sense Sense) *Model {
		sign := 1.0
		if sense == Minimize {
			sign = -1
		}
		m := NewModel("knap", sense)
		a, b, c := m.AddBinary("a", 5*sign), m.AddBinary("b", 4*sign), m.AddBinary("c", 3*sign)
		m.AddRow("w", -Inf, 5, Term{a, 2}, Term{b, 3}, Term{c, 1})
		return m
	}
	cases := []struct {
		name   string
		sense  Sense
		cutoff float64
		status Status
		obj    float64
	}{
		{"max, below the optimum", Maximize, 8.5, StatusOptimal, 9},
		{"max, above the optimum", Maximize, 9.5, StatusInfeasible, 0},
		{"min, above the optimum", Minimize, -8.5, StatusOptimal, -9},
		{"min, below the optimum", Minimize, -9.5, StatusInfeasible, 0},
	}
	for _, c := range cases {
		for _, race := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/race=%d", c.name, race), func(t *testing.T) {
				res, err := Solve(context.Background(), build(c.sense), Options{Cutoff: &c.cutoff, Race: race})
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != c.status {
					t.Fatalf("status = %v, want %v", res.Status, c.status)
				}
				if c.status == StatusOptimal && math.Abs(res.Objective-c.obj) > 1e-9 {
					t.Errorf("objective = %v, want %v", res.Objective, c.obj)
				}
			})
		}
	}
}
