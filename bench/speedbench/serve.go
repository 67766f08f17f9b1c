package speedbench

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/ppipe"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/base/quantile"
	"github.com/plan-dev/plan/internal/base/simbench"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/serve/load"
	"github.com/plan-dev/plan/sim"
)

// wideModel is the one model of testdata/serve/wide.json (32 emulated L4s, 2 ms per request,
// SLO 50 ms: the GPUs never bind, so serve against the floor is the HTTP and driver overhead).
const wideModel = "w"

// inSLO is the attainment a rate must reach to count as sustained (bench-serve.sh's rule).
const inSLO = 0.99

// The rate ladders and windows: serve/load/bench-serve.sh's FLOOR_RATES at 10 s, and a
// shorter ladder for --quick.
var (
	serveRates      = []int{1000, 2000, 3000, 4000, 6000}
	serveRatesQuick = []int{500, 1000, 2000, 3000}
)

const (
	serveWindow      = 10 * time.Second
	serveWindowQuick = 2 * time.Second
)

// cpuPairs is how many more windows of each server, alternated, the CPU row measures at its
// rate after the ladder: a single window's CPU per request swings ±15% on a 2-core VM (the
// Go runtime's monitor thread sleeps and is woken by a system call at random points of the
// load), so the row compares medians.
const cpuPairs = 4

// servePoint is one server at one rate.
type servePoint struct {
	rate       int
	attainment float64
	requests   int64
	cpuPerReq  time.Duration
}

// serveRun is the ladder on both servers, run once for both rows, and the CPU row's extra
// windows at its rate (cpuFloor, cpuOurs: the ladder's window at that rate first).
type serveRun struct {
	floor, ours       []servePoint
	window            time.Duration
	cpuAt             int
	cpuFloor, cpuOurs []time.Duration
}

func serveMeasures() []measure {
	var run *serveRun
	get := func(ctx context.Context, o *Command, env benchapi.Env) (*serveRun, error) {
		if run != nil {
			return run, nil
		}
		r, err := runServe(ctx, o, env.Sections)
		if err == nil {
			run = r
		}
		return r, err
	}
	return []measure{
		{name: "serve-rate", group: "serve", run: func(ctx context.Context, o *Command, env benchapi.Env) (Row, error) {
			r, err := get(ctx, o, env)
			if err != nil {
				return Row{}, err
			}
			return r.rateRow(), nil
		}},
		{name: "serve-cpu", group: "serve", run: func(ctx context.Context, o *Command, env benchapi.Env) (Row, error) {
			r, err := get(ctx, o, env)
			if err != nil {
				return Row{}, err
			}
			return r.cpuRow(), nil
		}},
	}
}

// wideDeploy is what `plan serve` deploys a PPipe plan with (the system registry's
// deployer for the ppipe section).
func wideDeploy(p *formats.Plan) (*dataplane.Deployment, string, error) {
	d, err := ppipe.FromPlan(p)
	return d, ppipe.DefaultPolicy, err
}

// runServe drives the floor and plan serve, interleaved rate by rate so that both see the
// same machine, each on a fresh server on 127.0.0.1 (httptest listens on loopback only).
// secs are the registry's sections (benchapi.Env.Sections): the plan, the floor's and the one
// plan load fetches from each server are read with them.
func runServe(ctx context.Context, o *Command, secs *formats.SectionSet) (*serveRun, error) {
	raw, err := embedded("wide.json")
	if err != nil {
		return nil, err
	}
	plan, err := formats.DecodeInto[*formats.Plan]("wide.json", raw, secs)
	if err != nil {
		return nil, err
	}
	floor, err := load.FloorHandler("wide.json", raw, secs)
	if err != nil {
		return nil, err
	}
	rates, window := serveRates, serveWindow
	if o.quick {
		rates, window = serveRatesQuick, serveWindowQuick
	}
	if len(o.serveRates) > 0 {
		rates = o.serveRates
	}
	if o.serveWindow > 0 {
		window = o.serveWindow
	}
	run := &serveRun{window: window}
	pair := func(rate int) (f, s servePoint, err error) {
		if f, err = drive(ctx, floor, nil, secs, rate, window); err != nil {
			return f, s, fmt.Errorf("floor at %d/s: %w", rate, err)
		}
		srv, err := serve.New(serve.Options{Plan: plan, Deploy: wideDeploy, Sections: secs, Policies: ppipe.Registry()})
		if err != nil {
			return f, s, err
		}
		if s, err = drive(ctx, srv, srv, secs, rate, window); err != nil {
			return f, s, fmt.Errorf("plan serve at %d/s: %w", rate, err)
		}
		return f, s, nil
	}
	for _, rate := range rates {
		f, s, err := pair(rate)
		if err != nil {
			return nil, err
		}
		run.floor = append(run.floor, f)
		run.ours = append(run.ours, s)
	}
	i := run.cpuIndex()
	run.cpuAt = run.floor[i].rate
	run.cpuFloor = []time.Duration{run.floor[i].cpuPerReq}
	run.cpuOurs = []time.Duration{run.ours[i].cpuPerReq}
	for k := 0; k < cpuPairs; k++ {
		f, s, err := pair(run.cpuAt)
		if err != nil {
			return nil, err
		}
		run.cpuFloor = append(run.cpuFloor, f.cpuPerReq)
		run.cpuOurs = append(run.cpuOurs, s.cpuPerReq)
	}
	return run, nil
}

// drive offers rate req/s of wideModel to h for window (Poisson, seeded) and measures the
// attainment and the process's CPU per request; s, when set, is shut down after.
func drive(ctx context.Context, h http.Handler, s *serve.Server, secs *formats.SectionSet, rate int, window time.Duration) (servePoint, error) {
	ts := httptest.NewServer(h)
	defer ts.Close()
	if s != nil {
		defer func() { _ = s.Shutdown(context.Background()) }()
	}
	spec, _ := sim.ParseArrival("poisson")
	cpu0 := simbench.CPUTime()
	res, err := load.Run(ctx, load.Options{URL: ts.URL, Model: wideModel, Rate: float64(rate), Duration: window,
		Arrival: spec, Seed: 1, Deploy: wideDeploy, Sections: secs})
	cpu := simbench.CPUTime() - cpu0
	if err != nil {
		return servePoint{}, err
	}
	t := res.Report.Points[0].Total
	p := servePoint{rate: rate, attainment: t.Attainment, requests: t.Requests}
	if n := len(res.Samples); n > 0 {
		p.cpuPerReq = cpu / time.Duration(n)
	}
	return p, nil
}

// maxInSLO is the highest rate of the ladder sustained at >= 99% attainment (0: none).
func maxInSLO(ps []servePoint) int {
	best := 0
	for _, p := range ps {
		if p.requests > 0 && p.attainment >= inSLO {
			best = max(best, p.rate)
		}
	}
	return best
}

func (r *serveRun) ladder() string {
	return fmt.Sprintf("ladder %d..%d/s, %v each", r.floor[0].rate, r.floor[len(r.floor)-1].rate, r.window)
}

func (r *serveRun) rateRow() Row {
	ours, floor := maxInSLO(r.ours), maxInSLO(r.floor)
	note := fmt.Sprintf("max rate at >= 99%% attainment on wide.json, %s", r.ladder())
	top := r.floor[len(r.floor)-1].rate
	if ours == top && floor == top {
		note += "; both sustain the ladder's top: the ratio is a lower bound"
	}
	if floor == 0 {
		note += "; the floor sustains no rate of the ladder: no ratio"
	}
	return row("serve-rate", "req/s", "(net/http floor)", float64(ours), float64(floor), target{atLeast: true, bound: 1.0}, note)
}

// cpuIndex is the ladder's highest rate both servers sustain (the lowest when they share
// none: CPU per request is then measured past a saturation).
func (r *serveRun) cpuIndex() int {
	i := 0
	for j := range r.floor {
		if r.floor[j].attainment >= inSLO && r.ours[j].attainment >= inSLO {
			i = j
		}
	}
	return i
}

// cpuRow compares the median CPU per request of each server's windows at cpuAt.
func (r *serveRun) cpuRow() Row {
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	lo, hi := math.Inf(1), 0.0
	for k := range r.cpuOurs {
		if q := us(r.cpuOurs[k]) / us(r.cpuFloor[k]); ok(q) {
			lo, hi = min(lo, q), max(hi, q)
		}
	}
	note := fmt.Sprintf("process CPU (server and load generator) per request at %d/s: medians of %d alternated %v windows each (pairs' ratios %.3f–%.3f)",
		r.cpuAt, len(r.cpuOurs), r.window, lo, hi)
	return row("serve-cpu", "µs/req", "(net/http floor)", us(median(r.cpuOurs)), us(median(r.cpuFloor)), target{bound: 1.1}, note)
}

// median is xs's median (internal/base/quantile's p50: the mean of the middle two for an even
// count); xs is not changed.
func median(xs []time.Duration) time.Duration {
	f := make([]float64, len(xs))
	for i, x := range xs {
		f[i] = float64(x)
	}
	return time.Duration(quantile.Of(f, 50))
}
