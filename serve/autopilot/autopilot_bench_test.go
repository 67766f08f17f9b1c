package autopilot

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	ap "github.com/plan-dev/plan/dataplane/autopilot"
	dpppipe "github.com/plan-dev/plan/dataplane/ppipe"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/planner"
	pap "github.com/plan-dev/plan/planner/autopilot"
	"github.com/plan-dev/plan/planner/ppipe"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/serve/kserve"
	"github.com/plan-dev/plan/solver"
)

// ppipeResolve re-solves a PPipe plan from its embedded inputs with its recorded options,
// as internal/registry/systems/ppipesys's Checker does (that package imports serve).
func ppipeResolve(ctx context.Context, p *formats.Plan) (*formats.Plan, error) {
	e := p.Provenance.Embedded
	f := ppipe.Flags{Strategy: ppipesec.PlanOf(p).Strategy, MaxPartitions: ppipesec.PlanOf(p).MaxPartitions, Alpha: ppipesec.PlanOf(p).SLOMargin, WarmStart: true}
	if err := planner.ReadOptions(p.Provenance.Options, &f); err != nil {
		return nil, err
	}
	f.TimeLimit = formats.Duration(30 * time.Second)
	o := f.Options()
	o.Deterministic = true
	in := ppipe.Inputs{Cluster: e.Cluster, Workload: e.Workload}
	for i := range e.Profiles {
		in.Profiles = append(in.Profiles, &e.Profiles[i])
	}
	return ppipe.Solve(ctx, in, o)
}

// backgroundResolve runs what serve's autopilot runs on a step up that meets a prefetch
// under way — the demo plan's ladder re-solved by Solve (to the rung serving a demand) and
// by Prefetch around the whole cluster, on goroutines of their own, over fresh ladders so
// that every rung is really solved — until stop is called; stop returns the rungs solved.
func backgroundResolve(b *testing.B, demo *formats.Plan) (stop func() int64) {
	var solved atomic.Int64
	resolve := func(ctx context.Context, p *formats.Plan) (*formats.Plan, error) {
		q, err := ppipeResolve(ctx, p)
		if err == nil {
			solved.Add(1)
		}
		return q, err
	}
	deploy := func(p *formats.Plan) (*dataplane.Deployment, error) { return dpppipe.FromPlan(p) }
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			l, err := pap.NewLadder(demo, []string{ppipesec.PlanOf(demo).Models[0].Model}, 0, resolve, deploy)
			if err != nil {
				b.Error(err)
				return
			}
			var pf sync.WaitGroup
			pf.Add(1)
			go func() {
				defer pf.Done()
				_, _ = l.Prefetch(ctx, l.Steps())
			}()
			if _, err := l.Solve(ctx, ap.Demand{Rates: []float64{1500}}); err != nil && ctx.Err() == nil {
				b.Error(err)
			}
			pf.Wait()
		}
	}()
	return func() int64 {
		cancel()
		wg.Wait()
		return solved.Load()
	}
}

// BenchmarkAutopilotResolveP99 checks that the request path's p99 does not rise by more
// than 10% during a background re-solve (a re-plan must not cost the traffic it plans for):
// one server (the one-GPU plan, 200 rps, 10 ms a
// batch) under the same load — bursts of 200 requests at half its rate — with and without
// the demo plan's ladder being re-solved by the real planner (PPipe's MILP on HiGHS) in the
// same process, the two phases interleaved (their order alternating) so that a machine
// whose load drifts weighs on both alike. It reports each phase's p99 of the latency the
// server measures (socket arrival to answer: p99-idle-ms, p99-resolving-ms) and their ratio
// (p99-ratio: ≤ 1.10 is the target), the p99 the in-process client sees (its goroutines
// share the P's: p99-client-*), and the rungs solved per resolving phase.
//
// What keeps the solver off the request path: it runs on goroutines of its own, and the
// ladder runs at most GOMAXPROCS−1 rung solves at once (planner/autopilot.SolverSlots), the
// prefetch yielding to a Solve between rungs and sharing the rung both want; so one P is
// always left to the HTTP handlers and the driver, which would otherwise wait behind a busy
// solver for the scheduler's 10 ms time slice. With GOMAXPROCS 1 there is no P to spare.
func BenchmarkAutopilotResolveP99(b *testing.B) {
	p := loadPlan(b, "one-gpu.json")
	demo := loadPlan(b, "demo-plan.json")
	rate := ppipesec.PlanOf(p).Models[0].ThroughputRPS
	if _, err := ppipeResolve(context.Background(), demo); errors.Is(err, solver.ErrBackendUnavailable) {
		b.Skip("no HiGHS backend: ", err)
	} else if err != nil {
		b.Fatal(err)
	}
	_, ts := testServer(b, serve.Options{Plan: p})
	url := ts.URL + "/v2/models/m1/infer"
	gap := time.Duration(float64(time.Second) / (0.5 * rate))
	// burst returns each answer's latency as the server measured it (its timing.latency_us:
	// socket arrival to answer, the request path) and as the client saw it (which adds the
	// in-process client's own scheduling).
	burst := func() (srv, cli []float64) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := time.Now()
		for k := range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t0 := time.Now()
				resp, err := http.Post(url, "application/json", strings.NewReader(inferBody(1)))
				if err != nil {
					return
				}
				var ans struct {
					Timing kserve.Timing `json:"timing"`
				}
				err = json.NewDecoder(resp.Body).Decode(&ans)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					return
				}
				mu.Lock()
				cli = append(cli, float64(time.Since(t0).Microseconds())/1e3)
				srv = append(srv, float64(ans.Timing.LatencyUs)/1e3)
				mu.Unlock()
			}()
			time.Sleep(time.Until(start.Add(time.Duration(k+1) * gap)))
		}
		wg.Wait()
		return srv, cli
	}
	var idle, busy, idleCli, busyCli []float64
	var solved int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for phase := range 2 {
			if (phase+i)%2 == 0 {
				s, c := burst()
				idle, idleCli = append(idle, s...), append(idleCli, c...)
				continue
			}
			stop := backgroundResolve(b, demo)
			s, c := burst()
			busy, busyCli = append(busy, s...), append(busyCli, c...)
			n := stop()
			if n == 0 {
				b.Fatal("no rung was solved during the resolving phase")
			}
			solved += n
		}
	}
	b.StopTimer()
	pi, pb := p99(idle), p99(busy)
	b.ReportMetric(pi, "p99-idle-ms")
	b.ReportMetric(pb, "p99-resolving-ms")
	b.ReportMetric(pb/pi, "p99-ratio")
	ci, cb := p99(idleCli), p99(busyCli)
	b.ReportMetric(ci, "p99-client-idle-ms")
	b.ReportMetric(cb, "p99-client-resolving-ms")
	b.ReportMetric(float64(solved)/float64(b.N), "rungs/phase")
}

func p99(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	sort.Float64s(x)
	return x[len(x)*99/100]
}
