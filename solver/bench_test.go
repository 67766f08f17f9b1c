package solver

import (
	"context"
	"testing"
	"time"

	"github.com/plan-dev/plan/solver/internal/highs"
)

// benchStartup measures what the first solve of a process pays before HiGHS
// runs: compile (or load from cacheDir), instantiate and create a Highs object.
func benchStartup(b *testing.B, cacheDir func() string) {
	needBackend(b)
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
		in, err := e.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := in.Create(ctx); err != nil {
			b.Fatal(err)
		}
		e.Release(ctx, in)
		b.StopTimer()
		_ = e.Close(ctx)
		b.StartTimer()
	}
}

// BenchmarkStartupCold compiles the wasm from scratch into an empty cache.
func BenchmarkStartupCold(b *testing.B) {
	benchStartup(b, func() string { return b.TempDir() })
}

// BenchmarkStartupCached loads the compiled module from a warm cache.
func BenchmarkStartupCached(b *testing.B) {
	needBackend(b)
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

// BenchmarkSolveSmallMIP is the per-solve overhead on a tiny model
// (instance from the pool, model transfer, HiGHS run, result read-back).
func BenchmarkSolveSmallMIP(b *testing.B) {
	needBackend(b)
	m := multiKnapsack(5, 10, 2)
	for range b.N {
		if res, err := Solve(context.Background(), m, Options{}); err != nil || res.Status != StatusOptimal {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkFacilityLocation solves a capacitated facility location problem
// with single sourcing: 40 facilities x 50 customers = 2,000 assignment
// binaries (+40 opening binaries, ~2,100 rows) to HiGHS's default gap.
func BenchmarkFacilityLocation(b *testing.B) {
	needBackend(b)
	m := facilityLocation(42, 40, 50)
	var nodes int64
	var gap float64
	for range b.N {
		res, err := Solve(context.Background(), m, Options{TimeLimit: 5 * time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		if res.Status != StatusOptimal {
			b.Fatalf("status %v gap %v", res.Status, res.Gap)
		}
		nodes += res.Nodes
		gap = res.Gap
	}
	b.ReportMetric(float64(nodes)/float64(b.N), "nodes/op")
	b.ReportMetric(gap*100, "gap%")
}
