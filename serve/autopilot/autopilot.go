// Package autopilot is the front end of `plan serve --autopilot`: the loop of
// dataplane/autopilot (observe, forecast, re-solve, switch) run on the server's clock, its
// routes (GET /v1/autopilot, GET /v1/autopilot/plan) and metrics. It watches the server
// through serve.Server's exported API (arrivals, the active plan, Reload) and switches plans
// through the server's reload path, as an operator's PUT /v1/plan does.
package autopilot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plan-dev/plan/dataplane"
	ap "github.com/plan-dev/plan/dataplane/autopilot"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/serve/kserve"
)

// Options configure `plan serve --autopilot`.
type Options struct {
	Loop ap.Config
	// Solver re-plans for a demand; it is called on the autopilot's own goroutine, one solve
	// at a time, never on the request path.
	Solver ap.Solver
	// Describe turns the served plan into the loop's candidate (its digest must be
	// formats.Digest's, the server's).
	Describe func(p *formats.Plan) (ap.Candidate, error)
	// Apps are the models in the loop's order.
	Apps []string
	// SolveTimeout bounds one re-solve (default 60 s).
	SolveTimeout time.Duration
}

// Prefetcher is a Solver that solves ahead: PrefetchAround solves what a re-solve from the
// served plan c would ask for first (planner/autopilot.Ladder: the neighbouring rungs), so
// that a step up finds it cached and switches at once, as `plan simulate` (which solves in
// zero virtual time) does. The autopilot calls it on a goroutine of its own at start and
// after every switch; it must stop when ctx ends and yield to Solve.
type Prefetcher interface {
	PrefetchAround(ctx context.Context, c ap.Candidate) (int, error)
}

// Autopilot is the front end of the autopilot loop (serve.Frontend): GET /v1/autopilot
// (admin-guarded: the status names plans and rates) and the loop's goroutine, which ticks
// once per window on the server's clock, re-solves in the background when the loop asks and
// switches through Server.Reload (PPipe's migration: the new plan's workers are built before intake pauses;
// admitted requests finish on the old generation, held ones are fed to the new).
type Autopilot struct {
	opts Options
	s    *serve.Server

	mu   sync.Mutex
	loop *ap.Autopilot
	apps map[string]int
	stop chan struct{}
	wg   sync.WaitGroup
	// endPrefetch cancels the prefetch under way (a newer switch supersedes it).
	endPrefetch context.CancelFunc

	switches    prometheus.Counter
	resolveSecs prometheus.Histogram
	mape, fc    *prometheus.GaugeVec
	overBudget  prometheus.Gauge
}

// New returns the front end; Start starts the loop once the server runs.
func New(o Options) *Autopilot {
	if o.SolveTimeout <= 0 {
		o.SolveTimeout = 60 * time.Second
	}
	return &Autopilot{opts: o}
}

// Routes implements serve.Frontend.
func (a *Autopilot) Routes(s *serve.Server, mux *http.ServeMux) {
	a.s = s
	mux.HandleFunc("GET /v1/autopilot", a.handleStatus)
	mux.HandleFunc("GET /v1/autopilot/plan", a.handleRecommended)
}

// AdminRoutes implements serve.AdminRouter.
func (a *Autopilot) AdminRoutes() []string {
	return []string{"GET /v1/autopilot", "GET /v1/autopilot/plan"}
}

// handleRecommended returns the plan advise mode recommends, for `plan export` and a
// deployment pipeline of the user's own.
func (a *Autopilot) handleRecommended(w http.ResponseWriter, _ *http.Request) {
	p := a.Recommended()
	if p == nil {
		writeJSON(w, http.StatusNotFound, kserve.ErrorResponse{Error: "no recommended plan (the autopilot recommends in advise mode, once the load leaves the served plan's band)"})
		return
	}
	b, err := formats.Marshal(p)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, kserve.ErrorResponse{Error: err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// Status is the body of GET /v1/autopilot.
type Status struct {
	ap.Status
	Apps []string `json:"apps"`
	// Note says, in words, what an operator must know (over budget, advise only).
	Note string `json:"note,omitempty"`
}

func (a *Autopilot) handleStatus(w http.ResponseWriter, _ *http.Request) {
	a.mu.Lock()
	loop := a.loop
	a.mu.Unlock()
	if loop == nil {
		writeJSON(w, http.StatusServiceUnavailable, kserve.ErrorResponse{Error: "the autopilot has not started"})
		return
	}
	st := Status{Status: loop.Status(), Apps: a.opts.Apps}
	switch {
	case st.OverBudget:
		st.Note = fmt.Sprintf("the load needs more GPUs than the budget (%d): serving at the best plan within it", loop.Config().GPUBudget)
	case st.Mode == ap.Advise && st.Recommend != nil:
		st.Note = "advise mode: the recommended plan is not applied; GET /v1/autopilot/plan returns it"
	}
	writeJSON(w, http.StatusOK, st)
}

// Start builds the loop for the plan being served and starts its goroutine.
func (a *Autopilot) Start() error {
	if a.s == nil {
		return errors.New("serve: the autopilot is not a front end of the server (Options.Frontends)")
	}
	if a.opts.Solver == nil || a.opts.Describe == nil {
		return errors.New("serve: autopilot without a solver or a describer")
	}
	a.mu.Lock()
	started := a.loop != nil
	a.mu.Unlock()
	if started {
		return errors.New("serve: the autopilot has started already")
	}
	plan, digest := a.s.ActivePlan()
	cur, err := a.opts.Describe(plan)
	if err != nil {
		return err
	}
	cur.Digest = digest
	loop, err := ap.New(a.opts.Loop, len(a.opts.Apps), cur, installer{a.s}, a.s.Clock().Now())
	if err != nil {
		return err
	}
	a.apps = map[string]int{}
	for i, n := range a.opts.Apps {
		a.apps[n] = i
	}
	a.register()
	a.mu.Lock()
	a.loop, a.stop = loop, make(chan struct{})
	a.mu.Unlock()
	apps := a.apps
	if a.s.Closing() {
		return errors.New("serve: the server has stopped")
	}
	a.s.SetArrivalObserver(func(at dataplane.Time, model string, x dataplane.Attrs) {
		if i, ok := apps[model]; ok {
			loop.Admit(at, i, int64(x.InTokens)+int64(x.OutTokens))
		}
	})
	a.wg.Add(1)
	go a.run(loop, a.stop)
	a.prefetch(cur)
	a.s.Logger().Info("autopilot started", "mode", loop.Config().Mode, "window", time.Duration(loop.Config().Window)*time.Microsecond, "plan", cur.Digest, "gpus", cur.GPUs)
	return nil
}

func (a *Autopilot) register() {
	a.switches = prometheus.NewCounter(prometheus.CounterOpts{Name: "plan_autopilot_switches_total", Help: "Plan switches the autopilot made."})
	a.resolveSecs = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "plan_autopilot_resolve_seconds",
		Help: "Wall time of the autopilot's background re-solves.", Buckets: []float64{0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120}})
	a.mape = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "plan_autopilot_forecast_mape",
		Help: "Mean absolute percentage error of the autopilot's one-window-ahead rate forecasts."}, []string{"model"})
	a.fc = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "plan_autopilot_forecast_rps",
		Help: "The rate the autopilot plans for: the highest forecast of the next horizon windows."}, []string{"model"})
	a.overBudget = prometheus.NewGauge(prometheus.GaugeOpts{Name: "plan_autopilot_over_budget",
		Help: "1 while the load needs more GPUs than the autopilot's budget (serving at the best plan within it)."})
	a.s.MustRegister(a.switches, a.resolveSecs, a.mape, a.fc, a.overBudget)
}

// run ticks the loop once per window; a due re-solve runs on a goroutine of its own so
// that ticks (and the observer's windows) keep their pace while it solves.
func (a *Autopilot) run(loop *ap.Autopilot, stop chan struct{}) {
	defer a.wg.Done()
	t := time.NewTicker(time.Duration(loop.Config().Window) * time.Microsecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		a.adopt(loop)
		d := loop.Tick(a.s.Clock().Now())
		st := loop.Status()
		for i, n := range a.opts.Apps {
			a.mape.WithLabelValues(n).Set(st.MAPE[i])
			a.fc.WithLabelValues(n).Set(st.Forecast[i])
		}
		if d == nil {
			continue
		}
		a.wg.Add(1)
		go a.resolve(loop, *d, stop)
	}
}

// adopt follows a plan an operator installed (PUT /v1/plan, SIGHUP): the loop's band is
// the served plan's. A switch of the loop's own is in flight while a re-solve is: then
// the digests differ only until Resolved returns.
func (a *Autopilot) adopt(loop *ap.Autopilot) {
	plan, digest := a.s.ActivePlan()
	if digest == loop.Current() || loop.Status().Solving {
		return
	}
	c, err := a.opts.Describe(plan)
	if err != nil {
		a.s.Logger().Warn("autopilot: describing the served plan", "digest", digest, "err", err)
		return
	}
	c.Digest = digest
	loop.Adopt(a.s.Clock().Now(), c)
	a.prefetch(c)
}

// solveContext is a re-solve's context: it ends after SolveTimeout or when the autopilot
// stops.
func (a *Autopilot) solveContext(stop chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), a.opts.SolveTimeout)
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// prefetch starts solving ahead around the served plan c (Prefetcher), replacing the
// prefetch under way: one at a time, bounded by SolveTimeout, ended by Close.
func (a *Autopilot) prefetch(c ap.Candidate) {
	pf, ok := a.opts.Solver.(Prefetcher)
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stop == nil {
		return
	}
	if a.endPrefetch != nil {
		a.endPrefetch()
	}
	ctx, cancel := a.solveContext(a.stop)
	a.endPrefetch = cancel
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer cancel()
		t0 := time.Now()
		n, err := pf.PrefetchAround(ctx, c)
		if n > 0 || (err != nil && ctx.Err() == nil) {
			a.s.Logger().Debug("autopilot: prefetched", "around", c.Digest, "gpus", c.GPUs, "solved", n, "took", time.Since(t0).Round(time.Millisecond), "err", err)
		}
	}()
}

func (a *Autopilot) resolve(loop *ap.Autopilot, d ap.Demand, stop chan struct{}) {
	defer a.wg.Done()
	ctx, cancel := a.solveContext(stop)
	defer cancel()
	t0 := time.Now()
	c, err := a.opts.Solver.Solve(ctx, d)
	a.resolveSecs.Observe(time.Since(t0).Seconds())
	if err == nil {
		// The loop compares digests: the served plan's is formats.Digest of the plan.
		if p, ok := c.Plan.(*formats.Plan); ok {
			if dg, derr := formats.Digest(p); derr == nil {
				c.Digest = dg
			}
		}
	}
	dec := loop.Resolved(a.s.Clock().Now(), c, err)
	log := a.s.Logger()
	args := []any{"action", dec.Action, "from", dec.From, "to", dec.To, "gpus", dec.GPUs, "forecast_rps", dec.Forecast, "why", dec.Why, "solve", time.Since(t0).Round(time.Millisecond)}
	over := dec.Action == "over-budget" || c.OverBudget
	switch {
	case dec.Action == "error" || over:
		log.Warn("autopilot", args...)
	default:
		log.Info("autopilot", args...)
	}
	if dec.Action == "switch" {
		a.switches.Inc()
		a.prefetch(c)
	}
	if err == nil {
		a.overBudget.Set(map[bool]float64{false: 0, true: 1}[over])
	}
}

// Recommended returns the plan advise mode recommends (nil: none yet).
func (a *Autopilot) Recommended() *formats.Plan {
	a.mu.Lock()
	loop := a.loop
	a.mu.Unlock()
	if loop == nil {
		return nil
	}
	if r := loop.Status().Recommend; r != nil {
		p, _ := r.Plan.(*formats.Plan)
		return p
	}
	return nil
}

// Close implements io.Closer: Shutdown stops the loop after the drain.
func (a *Autopilot) Close() error {
	a.mu.Lock()
	if a.stop != nil {
		close(a.stop)
		a.stop = nil
		a.s.SetArrivalObserver(nil)
	}
	a.mu.Unlock()
	a.wg.Wait()
	return nil
}

// installer switches plans through the server's reload path.
type installer struct{ s *serve.Server }

func (i installer) Install(_ dataplane.Time, c ap.Candidate) error {
	p, ok := c.Plan.(*formats.Plan)
	if !ok || p == nil {
		return errors.New("the candidate carries no plan")
	}
	return i.s.Reload(context.Background(), p)
}

// writeJSON answers v as JSON with a newline, as the server's own routes do (Content-Type
// and Content-Length set; a value that does not encode is a 500 naming the error).
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b, _ = json.Marshal(kserve.ErrorResponse{Error: "encoding the response: " + err.Error()})
	}
	b = append(b, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
