package autopilot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	ap "github.com/plan-dev/plan/dataplane/autopilot"
	"github.com/plan-dev/plan/formats/sections/ppipesec"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// gatedLadder is a ladder over 16 L4 serving 100 rps per GPU (rungs of 4/8/12/16 GPUs with
// steps 4, of k GPUs with steps 16) whose resolve counts its calls per rung and, when gate is set, waits
// for it (or for its context) before answering.
type gatedLadder struct {
	*Ladder
	mu      sync.Mutex
	solves  map[int]int // GPUs → solves
	running atomic.Int32
	most    atomic.Int32
	gate    chan struct{}
	started chan int
}

func newGatedLadder(t *testing.T, steps int, gated bool) *gatedLadder {
	t.Helper()
	g := &gatedLadder{solves: map[int]int{}, started: make(chan int, 64)}
	if gated {
		g.gate = make(chan struct{})
	}
	gpus := func(cl *formats.Cluster) int {
		n := 0
		for _, x := range cl.GPUs {
			n += x.Count
		}
		return n
	}
	resolve := func(ctx context.Context, p *formats.Plan) (*formats.Plan, error) {
		n := gpus(p.Provenance.Embedded.Cluster)
		now := g.running.Add(1)
		defer g.running.Add(-1)
		for m := g.most.Load(); now > m && !g.most.CompareAndSwap(m, now); m = g.most.Load() {
		}
		g.started <- n
		if g.gate != nil {
			select {
			case <-g.gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		g.mu.Lock()
		g.solves[n]++
		g.mu.Unlock()
		q := *p
		q.Metadata.Name = strings.Repeat("x", n)
		return &q, nil
	}
	deploy := func(p *formats.Plan) (*dataplane.Deployment, error) {
		return &dataplane.Deployment{Apps: []dataplane.App{{Name: "m", RateRPS: 100 * float64(gpus(p.Cluster))}}}, nil
	}
	cl := &formats.Cluster{GPUs: []formats.GPUPool{{Type: "L4", Count: 16, PerServer: 4}}}
	base := &formats.Plan{Cluster: cl, Provenance: formats.Provenance{Embedded: &formats.EmbeddedInputs{Cluster: cl}}}
	l, err := NewLadder(base, []string{"m"}, steps, resolve, deploy)
	if err != nil {
		t.Fatal(err)
	}
	g.Ladder = l
	return g
}

func (g *gatedLadder) total() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, k := range g.solves {
		n += k
	}
	return n
}

func TestPrefetchOrder(t *testing.T) {
	g := newGatedLadder(t, 16, false)
	cases := []struct {
		k    int
		want []int
	}{
		{16, []int{16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}}, // at start: the whole bottom
		{6, []int{16, 7, 8, 1, 2, 3, 4, 5}},
		{15, []int{16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}},
		{1, []int{16, 2, 3}},
	}
	for _, c := range cases {
		if got := g.PrefetchOrder(c.k); !slices.Equal(got, c.want) {
			t.Errorf("PrefetchOrder(%d) = %v, want %v", c.k, got, c.want)
		}
	}
	for gpus, want := range map[int]int{16: 16, 6: 6, 1: 1, 0: 1, 40: 16} {
		if got := g.RungOf(gpus); got != want {
			t.Errorf("RungOf(%d) = %d, want %d", gpus, got, want)
		}
	}
}

// TestPrefetchThenStepUp: after the loop chose a rung (Solve walked the rungs up to it and
// the whole cluster), the prefetch solves the two above it, and on up until a rung serves
// twice as much (PrefetchUp); the step up that follows solves nothing: it finds its rungs
// cached, as simulate's zero-time solve does.
func TestPrefetchThenStepUp(t *testing.T) {
	cases := []struct {
		name           string
		first, up      float64 // demands, rps (100 rps per GPU)
		served, target int     // GPUs
		prefetched     int
	}{
		{"rung 2: rungs 3 and 4 (twice rung 2)", 150, 350, 2, 4, 2},
		{"rung 4: rungs 5 and 6, then 7 and 8 (twice rung 4)", 350, 750, 4, 8, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			g := newGatedLadder(t, 16, false)
			cur, err := g.Solve(ctx, ap.Demand{Rates: []float64{c.first}})
			if err != nil || cur.GPUs != c.served {
				t.Fatalf("first solve: %d GPUs, err %v; want %d", cur.GPUs, err, c.served)
			}
			before := g.total()
			n, err := g.PrefetchAround(ctx, cur)
			if err != nil || n != c.prefetched || g.total() != before+n {
				t.Fatalf("prefetch solved %d rungs (%d solves), err %v; want %d", n, g.total()-before, err, c.prefetched)
			}
			up, err := g.Solve(ctx, ap.Demand{Rates: []float64{c.up}})
			if err != nil || up.GPUs != c.target {
				t.Fatalf("step up: %d GPUs, err %v; want %d", up.GPUs, err, c.target)
			}
			if g.total() != before+n {
				t.Errorf("the step up solved %d rungs: want 0 (prefetched)", g.total()-before-n)
			}
			if n, _ := g.PrefetchAround(ctx, cur); n != 0 {
				t.Errorf("a second prefetch solved %d rungs, want 0", n)
			}
		})
	}
}

// TestPrefetchSharedWithSolve: a Solve that asks for the rung the prefetch is solving waits
// for it instead of solving it again, and the prefetch stops before its next rung; no more
// solves run at once than SolverSlots.
func TestPrefetchSharedWithSolve(t *testing.T) {
	ctx := context.Background()
	g := newGatedLadder(t, 4, true)
	done := make(chan error)
	go func() {
		_, err := g.Prefetch(ctx, 4) // the whole cluster, then rungs 1..3
		done <- err
	}()
	if n := <-g.started; n != 16 {
		t.Fatalf("prefetch started with %d GPUs, want the whole cluster (16)", n)
	}
	solved := make(chan ap.Candidate)
	go func() {
		c, err := g.Solve(ctx, ap.Demand{Rates: []float64{350}})
		if err != nil {
			t.Error(err)
		}
		solved <- c
	}()
	close(g.gate)
	c := <-solved
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if c.GPUs != 4 {
		t.Errorf("solve: %d GPUs, want 4", c.GPUs)
	}
	for gpus, n := range g.solves {
		if n != 1 {
			t.Errorf("the rung of %d GPUs was solved %d times, want once", gpus, n)
		}
	}
	if most := int(g.most.Load()); most > SolverSlots() {
		t.Errorf("%d solves ran at once, want at most SolverSlots() = %d", most, SolverSlots())
	}
}

// TestPrefetchCancelled: a prefetch cancelled mid-rung leaves nothing cached, and the Solve
// waiting on that rung solves it itself.
func TestPrefetchCancelled(t *testing.T) {
	g := newGatedLadder(t, 4, true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := g.Prefetch(ctx, 4)
		done <- err
	}()
	<-g.started
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled prefetch returned no error")
	}
	if g.Cached(4) || g.total() != 0 {
		t.Fatalf("a cancelled rung was cached (%d solves)", g.total())
	}
	close(g.gate)
	if c, err := g.Solve(context.Background(), ap.Demand{Rates: []float64{150}}); err != nil || c.GPUs != 4 {
		t.Fatalf("solve after a cancelled prefetch: %d GPUs, err %v", c.GPUs, err)
	}
}

// TestRateSolverPrefetch: for a cost plan the prefetch solves the grid demands above the
// served plan's capacity up to twice it, and a step up to any demand in that span solves
// nothing.
func TestRateSolverPrefetch(t *testing.T) {
	base := fakePlan()
	base.Provenance.Embedded.Workload = ppipesec.SetModels(&formats.Workload{}, []ppipesec.ModelWorkload{{Name: "m", RateRPS: 500}})
	var solves atomic.Int32
	resolve := func(_ context.Context, p *formats.Plan) (*formats.Plan, error) {
		solves.Add(1)
		q := *p
		rate := ppipesec.ModelsOf(p.Provenance.Embedded.Workload)[0].RateRPS
		q.Fleet = &formats.Fleet{Objective: "cost", GPUsUsed: []formats.FleetGPU{{GPU: "L4", Count: int(rate/100) + 1}}}
		q.Metadata.Name = fmt.Sprint(rate)
		return &q, nil
	}
	deploy := func(p *formats.Plan) (*dataplane.Deployment, error) {
		return &dataplane.Deployment{Apps: []dataplane.App{{Name: "m", RateRPS: ppipesec.ModelsOf(p.Provenance.Embedded.Workload)[0].RateRPS}}}, nil
	}
	r, err := NewRateSolver(base, []string{"m"}, resolve, deploy)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	served, err := r.Solve(ctx, ap.Demand{Rates: []float64{400}})
	if err != nil {
		t.Fatal(err)
	}
	n, err := r.PrefetchAround(ctx, served)
	if err != nil || n != 8 || solves.Load() != 9 {
		t.Fatalf("prefetch solved %d grid demands (%d solves in all), err %v; want 8 (1.1¹…1.1⁸ times %.1f rps)", n, solves.Load(), err, served.Capacity[0])
	}
	for _, d := range []float64{1.05, 1.5, 2} {
		if _, err := r.Solve(ctx, ap.Demand{Rates: []float64{d * served.Capacity[0]}}); err != nil {
			t.Fatal(err)
		}
		if solves.Load() != 9 {
			t.Errorf("a step up to %.2f times the capacity solved again (%d solves)", d, solves.Load())
		}
	}
	if n, _ := r.PrefetchAround(ctx, served); n != 0 {
		t.Errorf("a second prefetch solved %d, want 0", n)
	}
}
