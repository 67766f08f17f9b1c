package solver

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/solver/internal/highs"
)

// engineKinds are the engines every solve benchmark runs on, as sub-benchmarks
// (BenchmarkX/wazero, BenchmarkX/native) on the same model.
var engineKinds = []string{highs.KindWazero, highs.KindNative}

// benchStartup measures what the first solve of a process pays before HiGHS
// runs: compile (or load from cacheDir), instantiate and create a Highs object.
func benchStartup(b *testing.B, cacheDir func() string) {
	needEngine(b, highs.KindWazero)
	wasm, src, err := highs.LoadWasm()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		dir := cacheDir()
		b.StartTimer()
		e, err := highs.NewEngine(ctx, wasm, dir, src)
		if err != nil {
			b.Fatal(err)
		}
		firstCreate(b, e)
		b.StopTimer()
		_ = e.Close(ctx)
		b.StartTimer()
	}
}

// firstCreate acquires e's first instance and creates a Highs object in it.
func firstCreate(b *testing.B, e *highs.Engine) {
	ctx := context.Background()
	in, err := e.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if err := in.Create(ctx); err != nil {
		b.Fatal(err)
	}
	e.Release(ctx, in)
}

// BenchmarkStartupCold compiles the wasm from scratch into an empty cache
// (wazero's cold start).
func BenchmarkStartupCold(b *testing.B) {
	benchStartup(b, func() string { return b.TempDir() })
}

// BenchmarkStartupCached loads the compiled module from a warm cache
// (wazero's usual start).
func BenchmarkStartupCached(b *testing.B) {
	needEngine(b, highs.KindWazero)
	dir := b.TempDir()
	wasm, src, err := highs.LoadWasm()
	if err != nil {
		b.Fatal(err)
	}
	e, err := highs.NewEngine(context.Background(), wasm, dir, src) // fills the cache
	if err != nil {
		b.Fatal(err)
	}
	_ = e.Close(context.Background())
	benchStartup(b, func() string { return dir })
}

// BenchmarkStartupNative is the native engine's cold start: nothing to
// compile, a fresh instance (heap, data segments, constructors) and a
// Highs object.
func BenchmarkStartupNative(b *testing.B) {
	needEngine(b, highs.KindNative)
	cpu0 := processCPU()
	for range b.N {
		e, err := highs.NewNativeEngine()
		if err != nil {
			b.Fatal(err)
		}
		firstCreate(b, e)
		b.StopTimer()
		_ = e.Close(context.Background())
		b.StartTimer()
	}
	b.ReportMetric(float64(processCPU()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
}

// benchSolve solves m on each engine, deterministically (one instance).
func benchSolve(b *testing.B, m *Model, opts Options, want Status) {
	opts.Deterministic = true
	for _, kind := range engineKinds {
		b.Run(kind, func(b *testing.B) {
			eng := needEngine(b, kind)
			var nodes, iters int64
			var gap float64
			cpu0 := processCPU()
			for range b.N {
				res, err := solveWith(context.Background(), eng, m, opts, time.Now())
				if err != nil {
					b.Fatal(err)
				}
				if res.Status != want {
					b.Fatalf("status %v gap %v", res.Status, res.Gap)
				}
				nodes += res.Nodes
				iters += res.Iterations
				gap = res.Gap
			}
			b.ReportMetric(float64(processCPU()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(nodes)/float64(b.N), "nodes/op")
			b.ReportMetric(float64(iters)/float64(b.N), "iters/op")
			if m.nInt > 0 {
				b.ReportMetric(gap*100, "gap%")
			}
		})
	}
}

// BenchmarkSolveSmallMIP is the per-solve overhead on a tiny model
// (instance from the pool, model transfer, HiGHS run, result read-back).
func BenchmarkSolveSmallMIP(b *testing.B) {
	benchSolve(b, multiKnapsack(5, 10, 2), Options{}, StatusOptimal)
}

// BenchmarkLPRelaxation solves the LP relaxation of the facility location
// problem below (2,040 columns, ~2,100 rows) with the dual simplex.
func BenchmarkLPRelaxation(b *testing.B) {
	benchSolve(b, relaxed(facilityLocation(42, 40, 50)), Options{}, StatusOptimal)
}

// BenchmarkFacilityLocation solves a capacitated facility location problem
// with single sourcing: 40 facilities x 50 customers = 2,000 assignment
// binaries (+40 opening binaries, ~2,100 rows) to HiGHS's default gap.
func BenchmarkFacilityLocation(b *testing.B) {
	benchSolve(b, facilityLocation(42, 40, 50), Options{TimeLimit: 5 * time.Minute}, StatusOptimal)
}

// BenchmarkKnapsackMIP is a branch-and-bound-heavy MIP: a 0/1 knapsack with
// 35 items and 3 constraints to optimality (many nodes, small LPs).
func BenchmarkKnapsackMIP(b *testing.B) {
	benchSolve(b, multiKnapsack(3, 35, 3), Options{RelGap: 1e-9, TimeLimit: 5 * time.Minute}, StatusOptimal)
}

// BenchmarkRace compares one instance with a two-instance race on the
// knapsack MIP, on the default engine (it needs two free cores to gain).
func BenchmarkRace(b *testing.B) {
	needBackend(b)
	m := multiKnapsack(3, 35, 3)
	for _, tc := range []struct {
		name string
		opts Options
	}{{"single", Options{Deterministic: true}}, {"race2", Options{Race: 2}}} {
		b.Run(tc.name, func(b *testing.B) {
			tc.opts.RelGap, tc.opts.TimeLimit = 1e-9, 5*time.Minute
			for range b.N {
				res, err := Solve(context.Background(), m, tc.opts)
				if err != nil || res.Status != StatusOptimal {
					b.Fatal(res, err)
				}
			}
		})
	}
}

// BenchmarkLPFile solves the LP relaxation of each model file named in $PLAN_BENCH_LP
// (comma-separated .lp/.mps paths, e.g. written by PLAN_WRITE_LP) on each engine with
// SolveFile (one thread), presolve as $PLAN_BENCH_LP_PRESOLVE says (default off, so that the
// simplex does the same work on every engine and version), and reports the simplex
// iterations and the time per iteration: the "per unit of work" of the native engine's
// ratio to native HiGHS. scripts/highs-reference.sh runs the same files with the same options on a native
// build of HiGHS for the other side of the ratio; `plan bench solver` is the same for users.
func BenchmarkLPFile(b *testing.B) {
	files := os.Getenv("PLAN_BENCH_LP")
	if files == "" {
		b.Skip("PLAN_BENCH_LP names no model files")
	}
	presolve := cmp.Or(os.Getenv("PLAN_BENCH_LP_PRESOLVE"), "off")
	for _, path := range strings.Split(files, ",") {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		for _, kind := range engineKinds {
			b.Run(filepath.Base(path)+"/"+kind, func(b *testing.B) {
				needEngine(b, kind)
				var iters int64
				var run time.Duration
				var res *FileResult
				cpu0 := processCPU()
				for range b.N {
					res, err = SolveFile(context.Background(), path, data, FileOptions{Engine: kind, Relax: true, Presolve: presolve})
					if err != nil {
						b.Fatal(err)
					}
					iters += res.Iterations
					run += res.Run
				}
				b.ReportMetric(float64(processCPU()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64(run.Microseconds())/1e3/float64(b.N), "run-ms/op")
				b.ReportMetric(float64(iters)/float64(b.N), "iters/op")
				b.ReportMetric(float64(run.Nanoseconds())/1e3/float64(max(iters, 1)), "run-µs/iter")
				b.Logf("%s on %s: %s, objective %.10g, %d iterations", path, res.Source, res.Status, res.Objective, res.Iterations)
			})
		}
	}
}
