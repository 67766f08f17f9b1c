package solver

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plan-dev/plan/solver/internal/highs"
)

// needEngine returns the process-wide engine of a kind. A missing one skips
// the test, or fails it under PLAN_REQUIRE_ALL=1: CI builds both engines
// (`make test` runs `make native` and tests with -tags highs_native).
func needEngine(tb testing.TB, kind string) *highs.Engine {
	tb.Helper()
	e, err := highs.ForKind(kind)
	if err == nil {
		return e
	}
	if os.Getenv("PLAN_REQUIRE_ALL") == "1" || !errors.Is(err, ErrBackendUnavailable) {
		tb.Fatalf("%s engine: %v", kind, err)
	}
	tb.Skipf("%s engine unavailable: %v", kind, err)
	return nil
}

// relaxed returns m with every integrality dropped (its LP relaxation).
func relaxed(m *Model) *Model {
	c := NewModel(m.name+"-lp", m.sense)
	for _, col := range m.cols {
		c.AddVar(col.name, col.lb, col.ub, col.obj, false)
	}
	for _, r := range m.rows {
		c.AddRow(r.name, r.lb, r.ub, r.terms...)
	}
	c.SetObjOffset(m.offset)
	return c
}

// TestEnginesAgree solves the test models with both engines. They run the
// same HiGHS build (wazero interprets the wasm, native is wasm2c's C of it
// compiled without fused multiply-add), so status, objective, values and
// node counts must be identical, not merely close.
func TestEnginesAgree(t *testing.T) {
	wz := needEngine(t, highs.KindWazero)
	nat := needEngine(t, highs.KindNative)
	type model struct {
		name string
		m    *Model
	}
	var models []model
	for _, tc := range knownCases() {
		models = append(models, model{tc.name, tc.build()})
	}
	fl := facilityLocation(42, 12, 15)
	models = append(models,
		model{"mknap-5-10-2", multiKnapsack(5, 10, 2)},
		model{"mknap-3-25-3", multiKnapsack(3, 25, 3)},
		model{"cfl-12-15", fl},
		model{"cfl-12-15-relaxation", relaxed(fl)},
		model{"cfl-40-50-relaxation", relaxed(facilityLocation(42, 40, 50))},
	)
	ctx := context.Background()
	for _, tc := range models {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Deterministic: true, TimeLimit: time.Minute}
			rw, errw := solveWith(ctx, wz, tc.m, opts, time.Now())
			rn, errn := solveWith(ctx, nat, tc.m, opts, time.Now())
			if (errw == nil) != (errn == nil) {
				t.Fatalf("wazero: %v; native: %v", errw, errn)
			}
			if errw != nil {
				return
			}
			if rw.Status != rn.Status || rw.HasSolution != rn.HasSolution {
				t.Fatalf("status wazero %v (solution %v), native %v (%v)", rw.Status, rw.HasSolution, rn.Status, rn.HasSolution)
			}
			same := func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
			if !same(rw.Objective, rn.Objective) || !same(rw.Bound, rn.Bound) || !same(rw.Gap, rn.Gap) {
				t.Errorf("objective/bound/gap wazero %v/%v/%v, native %v/%v/%v",
					rw.Objective, rw.Bound, rw.Gap, rn.Objective, rn.Bound, rn.Gap)
			}
			if rw.Nodes != rn.Nodes || rw.Iterations != rn.Iterations {
				t.Errorf("nodes/iterations wazero %d/%d, native %d/%d", rw.Nodes, rw.Iterations, rn.Nodes, rn.Iterations)
			}
			for j := range rw.Values {
				if rw.Values[j] != rn.Values[j] {
					t.Errorf("value %d: wazero %v, native %v", j, rw.Values[j], rn.Values[j])
					break
				}
			}
		})
	}
}

// TestEngineSelection checks PLAN_SOLVER_ENGINE end to end through Solve.
func TestEngineSelection(t *testing.T) {
	m := multiKnapsack(5, 10, 2)
	for _, kind := range []string{highs.KindWazero, highs.KindNative} {
		t.Run(kind, func(t *testing.T) {
			t.Setenv(highs.EnvEngine, kind)
			got, err := Engine()
			if err != nil {
				if kind == highs.KindNative && !highs.NativeBuilt {
					// Asked for but not built in: a clear error, no fallback.
					if !errors.Is(err, ErrBackendUnavailable) || !strings.Contains(err.Error(), "make native") {
						t.Errorf("native not built: %v", err)
					}
					if _, err := Solve(context.Background(), m, Options{}); !errors.Is(err, ErrBackendUnavailable) {
						t.Errorf("Solve with native not built: %v", err)
					}
					needEngine(t, kind) // skips, or fails under PLAN_REQUIRE_ALL=1
					return
				}
				needEngine(t, kind)
				t.Fatal(err)
			}
			if got != kind {
				t.Errorf("Engine() = %q, want %q", got, kind)
			}
			if res, err := Solve(context.Background(), m, Options{}); err != nil || res.Status != StatusOptimal {
				t.Fatalf("Solve: %v, %v", res, err)
			}
		})
	}
}

func TestRacers(t *testing.T) {
	mip, lp := multiKnapsack(1, 5, 1), relaxed(multiKnapsack(1, 5, 1))
	procs, delay := min(maxAutoRacers, runtime.GOMAXPROCS(0)), RaceDelay
	if procs < 2 {
		procs, delay = 1, 0
	}
	for _, tc := range []struct {
		name  string
		m     *Model
		o     Options
		n     int
		delay time.Duration
	}{
		{"lp", lp, Options{Race: 4}, 1, 0},
		{"deterministic", mip, Options{Race: 4, Deterministic: true}, 1, 0},
		{"off", mip, Options{Race: 1}, 1, 0},
		{"explicit", mip, Options{Race: 3, TimeLimit: time.Second}, 3, 0},
		{"short-limit", mip, Options{TimeLimit: 5 * time.Second}, 1, 0},
		{"planner-default-limit", mip, Options{TimeLimit: time.Minute}, 1, 0},
		{"auto-no-limit", mip, Options{}, procs, delay},
		{"auto-long-limit", mip, Options{TimeLimit: RaceMinTimeLimit}, procs, delay},
	} {
		n, delay := tc.o.racers(tc.m)
		if n != tc.n || delay != tc.delay {
			t.Errorf("%s: racers = %d after %v, want %d after %v", tc.name, n, delay, tc.n, tc.delay)
		}
	}
	if _, err := Solve(context.Background(), mip, Options{Race: -1}); !errors.Is(err, ErrInvalidModel) {
		t.Errorf("Race -1: %v", err)
	}
}

// TestRace solves hard-ish MILPs with two racers: the result must be the
// optimum the single deterministic solve proves, progress reports must not
// overlap, and a racer's panicking callback must reach the caller.
func TestRace(t *testing.T) {
	needBackend(t)
	ctx := context.Background()
	m := multiKnapsack(3, 25, 3)
	want, err := Solve(ctx, m, Options{Deterministic: true, RelGap: 1e-9})
	if err != nil || want.Status != StatusOptimal {
		t.Fatalf("single solve: %v, %v", want, err)
	}
	var inside, calls atomic.Int32
	res, err := Solve(ctx, m, Options{Race: 2, RelGap: 1e-9, Progress: func(p Progress) {
		if inside.Add(1) != 1 {
			t.Error("Progress called concurrently")
		}
		calls.Add(1)
		time.Sleep(time.Microsecond)
		inside.Add(-1)
	}})
	if err != nil || res.Status != StatusOptimal {
		t.Fatalf("race: %v, %v", res, err)
	}
	if res.Objective != want.Objective {
		t.Errorf("race objective %v, single %v", res.Objective, want.Objective)
	}
	checkFeasible(t, m, res.Values, res.Objective, 1e-6)
	if calls.Load() == 0 {
		t.Error("no progress reported")
	}

	// Infeasible MIPs are settled by whichever racer proves it.
	inf := NewModel("inf", Minimize)
	x := inf.AddInteger("x", 0, 5, 1)
	inf.AddRow("odd", 1, 1, t1(x, 2))
	if res, err := Solve(ctx, inf, Options{Race: 2}); err != nil || res.Status != StatusInfeasible {
		t.Errorf("infeasible race: %v, %v", res, err)
	}

	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the callback's panic", r)
			}
		}()
		Solve(ctx, multiKnapsack(2, 60, 5), Options{Race: 2, TimeLimit: time.Second, Progress: func(Progress) { panic("boom") }})
		t.Error("Solve returned normally")
	}()

	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := Solve(cctx, multiKnapsack(2, 60, 5), Options{Race: 2}); !errors.Is(err, ErrCanceled) {
		t.Errorf("canceled race: %v, want ErrCanceled", err)
	}
}

// TestRaceTimeLimit: when every racer runs out of time, the best incumbent
// wins and the bound is the tightest any racer proved.
func TestRaceTimeLimit(t *testing.T) {
	m := NewModel("min", Minimize)
	m.AddInteger("x", 0, 10, 1)
	res := func(obj, bound float64, has bool) *Result {
		return &Result{Status: StatusTimeLimit, Objective: obj, Bound: bound, HasSolution: has, Gap: relGap(obj, bound)}
	}
	got, err := bestOf(m, []outcome{
		{i: 0, res: res(12, 8, true)},
		{i: 1, res: res(10, 7, true)},
		{i: 2, res: res(math.Inf(1), 9, false)},
		{i: 3, err: ErrCanceled},
	})
	if err != nil || got.Objective != 10 || got.Bound != 9 || math.Abs(got.Gap-0.1) > 1e-12 {
		t.Errorf("bestOf = %+v, %v; want objective 10, bound 9, gap 0.1", got, err)
	}
	if _, err := bestOf(m, []outcome{{i: 1, err: ErrCanceled}, {i: 0, err: ErrAborted}}); !errors.Is(err, ErrAborted) {
		t.Errorf("bestOf without results = %v, want the racer's error", err)
	}
	m.sense = Maximize
	got, _ = bestOf(m, []outcome{{i: 0, res: res(5, 9, true)}, {i: 1, res: res(6, 11, true)}})
	if got.Objective != 6 || got.Bound != 9 {
		t.Errorf("maximize: objective %v bound %v, want 6 and 9", got.Objective, got.Bound)
	}
}

func TestWriteLPEnv(t *testing.T) {
	needBackend(t)
	dir := filepath.Join(t.TempDir(), "lp")
	t.Setenv(EnvWriteLP, dir)
	m := multiKnapsack(5, 10, 2)
	m.name = "mknap/5 x"
	res, err := Solve(context.Background(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Solve(context.Background(), m, Options{}); err != nil { // same model, same file
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 1 || !strings.HasPrefix(filepath.Base(files[0]), "mknap_5_x-") || !strings.HasSuffix(files[0], ".lp") {
		t.Fatalf("files %q, want one mknap_5_x-<hash>.lp", files)
	}
	if p, err := WriteLPFile(dir, m); err != nil || p != files[0] {
		t.Errorf("WriteLPFile = %q, %v; want the same name %q", p, err, files[0])
	}
	lp, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if obj, st := solveLPText(t, lp); st != highs.ModelOptimal || math.Abs(obj-res.Objective) > 1e-6 {
		t.Errorf("written LP solves to %v (%v), Solve found %v", obj, st, res.Objective)
	}
	other := multiKnapsack(6, 10, 2)
	other.name = m.name
	if p, _ := WriteLPFile(dir, other); p == files[0] {
		t.Error("different models share a file name")
	}

	t.Setenv(EnvWriteLP, filepath.Join(files[0], "not-a-dir"))
	if _, err := Solve(context.Background(), m, Options{}); err == nil || !strings.Contains(err.Error(), EnvWriteLP) {
		t.Errorf("unwritable %s: %v", EnvWriteLP, err)
	}
}
