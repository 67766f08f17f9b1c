// Package serve is the wall-clock driver of the runtime: `plan serve` runs the same
// deterministic policies that `sim` drives in virtual time (DESIGN.md, "One policy, two
// clocks"). One goroutine owns the engine and receives every event on channels — arrivals
// from HTTP handlers, hop completions from workers, timers — reads the monotonic clock once
// per event and performs the engine's effects without blocking: hops go to an Executor
// (emulated timers, ONNX Runtime sessions, or remote KServe v2 endpoints), transfers and
// policy timers go to one timer heap.
//
// The HTTP API is KServe v2 JSON (POST /v2/models/{model}/infer, health and model metadata),
// plus GET /metrics (Prometheus text format) and GET/PUT /v1/plan. Every accepted request
// gets exactly one answer: 200 with the output and a latency breakdown, or 503 naming the
// drop reason and stage. A new plan is loaded with PPipe's migration (preload, pause intake,
// flush in-flight work, switch, resume); shutdown drains within a deadline and answers what
// is left with 503.
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/serve/internal/connlimit"
	"github.com/plan-dev/plan/serve/kserve"
	"github.com/plan-dev/plan/serve/worker"
)

// Options configure a Server.
type Options struct {
	// Plan is the plan to serve.
	Plan *formats.Plan
	// Deploy turns a plan into the deployment it describes and names the plan's default
	// policy (the system registry's deployer for the plan's section); it is called at start
	// and on every reload, so a reloaded plan may belong to another system.
	Deploy func(*formats.Plan) (*dataplane.Deployment, string, error)
	// Sections are the registered systems' plan sections (the system registry's), so PUT
	// /v1/plan takes a plan of any registered system and runs its system's checks. nil: PUT
	// /v1/plan refuses every plan (500); no other set stands in for the registry's.
	Sections *formats.SectionSet
	// Policies is the registry policies are built from.
	Policies *dataplane.Registry
	// Policy picks the runtime policy (Policy.Policy empty = the plan's default).
	Policy dataplane.Config
	// NewExecutor builds workers; nil means emulated workers.
	NewExecutor worker.ExecutorFactory
	// Jitter is the emulated workers' (and transfers') relative noise; Seed seeds it.
	Jitter float64
	Seed   uint64
	// MaxBody bounds an infer request body (default 16 MiB).
	MaxBody int64
	// DrainTimeout bounds graceful shutdown (default 10 s).
	DrainTimeout time.Duration
	// FlushTimeout bounds a migration's flush (default 2 × the largest SLO + 100 ms).
	FlushTimeout time.Duration
	// MaxInFlight bounds the decoded requests inside the server at once (default 4096);
	// beyond it requests are refused at the door with 503 "overload", so a server that
	// cannot keep up sheds load instead of piling up goroutines and memory. A request takes
	// its slot only once its body is read: a slow client holds none.
	MaxInFlight int
	// HeaderTimeout bounds reading a request's headers (default 5 s), BodyTimeout reading its
	// body (default 5 s: 408 after it), WriteTimeout writing the answer (default 10 s), and
	// IdleTimeout how long a keep-alive connection may sit idle (default 60 s).
	HeaderTimeout, BodyTimeout, WriteTimeout, IdleTimeout time.Duration
	// InputShape is the per-sample input shape emulated models declare (-1 = any size);
	// default [-1]: any flat vector, carried through as the output.
	InputShape []int64
	// Frontends are the systems' own APIs registered beside the KServe v2 API.
	Frontends []Frontend
	// AdminToken, when set, lets a request carrying "Authorization: Bearer AdminToken"
	// (compared in constant time) use the state-changing endpoints (PUT /v1/plan, POST
	// /v1/workers/state) on any listener; without it they answer only on a loopback
	// listener.
	AdminToken string
	// MaxConns and MaxConnsPerIP cap Serve's open connections in total and per client
	// address (0 = from the descriptor limit: connlimit.Caps); connections past a cap are closed
	// at once, and the last few under the total cap answer only health checks.
	MaxConns, MaxConnsPerIP int
	// MetricsLegacy adds the LLM families vLLM removed that older consumers still read
	// (vllm:gpu_cache_usage_perc, vllm:time_per_output_token_seconds; drop-in §1 (c)).
	MetricsLegacy bool
	Log           *slog.Logger
}

// Server serves one plan at a time over HTTP.
type Server struct {
	opts     Options
	clk      worker.Clock
	d        *driver
	m        *metrics
	mux      *http.ServeMux
	closing  atomic.Bool
	active   atomic.Pointer[generation]
	inflight atomic.Int64
	metricsH http.Handler
	// arrivals counts infer requests at the door (the idle monitor's signal).
	arrivals atomic.Int64
	// observe, when set, sees every request for a served model at its arrival (the
	// autopilot's observer: SetArrivalObserver).
	observe atomic.Pointer[ArrivalObserver]
	// limits are the body limits of the routes other than infer (bodyLimits); admin the
	// state-changing routes (adminRoutes).
	limits map[string]int64
	admin  map[string]bool
	// adminSeparate is set once an admin listener serves (ServeAdmin): the data listeners
	// then refuse the admin routes (without the token) even on loopback.
	adminSeparate atomic.Bool
	// noWorker is set while every worker of the served plan is marked down: readiness is
	// false (SetWorkerDown).
	noWorker atomic.Bool
	// lastLimiter is the connection limiter of the last listener Serve started (tests).
	lastLimiter atomic.Pointer[connlimit.Listener]
}

// New validates the plan, builds the deployment and the workers, and starts the driver.
// Errors from the plan (formats.ErrorList with field paths) mean bad input.
func New(opts Options) (*Server, error) {
	if opts.Deploy == nil || opts.Policies == nil {
		return nil, errors.New("serve: Options.Deploy and Options.Policies are required")
	}
	if opts.Plan == nil {
		return nil, errors.New("serve: no plan")
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = 16 << 20
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 4096
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 10 * time.Second
	}
	for _, t := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&opts.HeaderTimeout, 5 * time.Second}, {&opts.BodyTimeout, 5 * time.Second}, {&opts.WriteTimeout, 10 * time.Second}, {&opts.IdleTimeout, 60 * time.Second}} {
		if *t.v <= 0 {
			*t.v = t.def
		}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if len(opts.InputShape) == 0 {
		opts.InputShape = []int64{-1}
	}
	s := &Server{opts: opts, clk: worker.NewClock(), m: newMetrics()}
	s.m.legacy = opts.MetricsLegacy
	s.metricsH = s.m.handler()
	if s.opts.NewExecutor == nil {
		s.opts.NewExecutor = func(clk worker.Clock, _ *dataplane.Deployment, _ *formats.Plan) (worker.Executor, error) {
			return worker.NewEmulated(clk, opts.Jitter, opts.Seed), nil
		}
	}
	g, err := s.prepare(opts.Plan)
	if err != nil {
		return nil, err
	}
	s.d = newDriver(s.clk, opts.Log, s.m, opts.Jitter, opts.Seed+1)
	s.d.flushFor = s.flushTimeout(g)
	s.d.onSwitch = func(g *generation) {
		s.active.Store(g)
		s.noWorker.Store(false) // a fresh engine: every worker up
		s.d.flushFor = s.flushTimeout(g)
	}
	go s.d.run(g)
	// The first switch happens on the driver goroutine; wait for it so Handler sees the models.
	s.d.do(func() {})
	s.routes()
	s.limits, s.admin = s.bodyLimits(), s.adminRoutes()
	go s.releaseWhenIdle(time.Second, 3)
	return s, nil
}

// releaseWhenIdle hands the heap's free pages back to the operating system once the server
// has been idle for idle ticks after serving: Go's background scavenger returns them over
// minutes, so without this a burst of load would leave the process's RSS high long after.
// It costs one forced GC per burst.
func (s *Server) releaseWhenIdle(tick time.Duration, idle int) {
	t := time.NewTicker(tick)
	defer t.Stop()
	last, quiet, dirty := s.arrivals.Load(), 0, false
	for {
		select {
		case <-s.d.stopped:
			return
		case <-t.C:
		}
		n := s.arrivals.Load()
		switch {
		case n != last:
			last, quiet, dirty = n, 0, true
		case dirty:
			if quiet++; quiet >= idle {
				// A fresh engine lets the old one's tables and arenas go (sized for the
				// burst), then two collections: objects in sync.Pools (net/http's per-connection
				// buffers, thousands after a burst) survive one GC in the pools' victim
				// cache and would pin their spans.
				s.d.do(s.d.rotateIfIdle)
				runtime.GC()
				runtime.GC()
				debug.FreeOSMemory()
				dirty = false
			}
		}
	}
}

func (s *Server) flushTimeout(g *generation) dataplane.Time {
	if s.opts.FlushTimeout > 0 {
		return dataplane.Time(s.opts.FlushTimeout / time.Microsecond)
	}
	var slo dataplane.Time
	for _, a := range g.dep.Apps {
		slo = max(slo, a.SLO)
	}
	return 2*slo + 100*dataplane.Millisecond
}

// prepare is the preload step: deployment, workers (sessions, connections), specs.
func (s *Server) prepare(p *formats.Plan) (*generation, error) {
	dep, def, err := s.opts.Deploy(p)
	if err != nil {
		return nil, err
	}
	pcfg := s.opts.Policy
	if pcfg.Policy == "" {
		pcfg.Policy = def
	}
	ex, err := s.opts.NewExecutor(s.clk, dep, p)
	if err != nil {
		return nil, err
	}
	tr := &tracker{Executor: ex, log: s.opts.Log}
	specs := make([]modelSpec, len(dep.Apps))
	sp, hasSpec := ex.(worker.SpecProvider)
	for i, a := range dep.Apps {
		ms := modelSpec{name: a.Name, sloUs: int64(a.SLO), rateRPS: a.RateRPS, series: s.m.model(a.Name)}
		if hasSpec {
			ms.in, ms.out = sp.Spec(dataplane.AppID(i))
		} else {
			shape := append([]int64{-1}, s.opts.InputShape...)
			ms.in = kserve.TensorSpec{Name: "input", Datatype: "FP32", Shape: shape}
			ms.out = kserve.TensorSpec{Name: "output", Datatype: "FP32", Shape: shape}
		}
		specs[i] = ms
	}
	g, err := prepare(p, dep, pcfg, s.opts.Policies, tr, specs)
	if err != nil {
		tr.retire()
		return nil, err
	}
	return g, nil
}

// ErrReloadBusy is returned by Reload while another migration runs.
var ErrReloadBusy = errors.New("a plan reload is already in progress")

// Reload migrates to plan p: preload (here, on the caller's goroutine), then pause intake,
// flush the old plan's in-flight requests, switch and resume (on the driver). It returns
// when the new plan serves. Plan errors are returned before anything pauses.
func (s *Server) Reload(ctx context.Context, p *formats.Plan) error {
	if s.closing.Load() {
		return errors.New("the server is shutting down")
	}
	g, err := s.prepare(p)
	if err != nil {
		return err
	}
	r := &reloadReq{next: g, reply: make(chan error, 1)}
	if !s.d.do(func() { s.d.startMigration(r) }) {
		g.exec.retire()
		return errors.New("the server is shutting down")
	}
	answer := func(err error) error {
		if errors.Is(err, ErrReloadBusy) {
			g.exec.retire()
			return ErrReloadBusy
		}
		return err
	}
	select {
	case err := <-r.reply:
		return answer(err)
	case <-ctx.Done():
		return ctx.Err() // the migration goes on; the caller stopped waiting
	case <-s.d.stopped:
		// A switch that completed just before the driver stopped has its answer waiting:
		// select picks among ready cases at random, and "shutting down" would then report
		// a plan that serves as not loaded.
		select {
		case err := <-r.reply:
			return answer(err)
		default:
			return errors.New("the server is shutting down")
		}
	}
}

// Shutdown stops intake (readiness turns 503 at once; new requests get 503 "shutdown"), lets
// in-flight requests finish within DrainTimeout, answers the rest with 503 and stops the
// driver. It returns when every accepted request was answered (or ctx ends).
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	s.m.setReady(false)
	deadline := time.Now().Add(s.opts.DrainTimeout)
	s.d.do(func() { s.d.startDrain(deadline) })
	select {
	case <-s.d.stopped:
	case <-ctx.Done():
		return ctx.Err()
	}
	var errs []error
	for _, f := range s.opts.Frontends {
		if c, ok := f.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// Done is closed when the driver stopped.
func (s *Server) Done() <-chan struct{} { return s.d.stopped }

// HTTPServer returns the http.Server Serve runs: the handler with the header, idle and
// (per request) body and write timeouts, so that a slow or idle client cannot hold a
// connection's resources for long.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{Handler: s, ReadHeaderTimeout: s.opts.HeaderTimeout, IdleTimeout: s.opts.IdleTimeout,
		MaxHeaderBytes: 64 << 10, ErrorLog: slog.NewLogLogger(s.opts.Log.Handler(), slog.LevelWarn),
		ConnContext: connContext}
}

// Serve runs the HTTP API on ln until ctx ends (or Shutdown was called), then drains:
// readiness turns 503 at once, the listener stays open while requests already admitted
// finish (within DrainTimeout; the rest get 503), and requests arriving meanwhile get 503
// "shutdown" (with Connection: close); then the listener and connections close and Serve
// returns nil.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return s.serve(ctx, ln, false)
}

// ServeAdmin runs the same API on ln as the admin listener (--admin-addr, loopback by
// default): the state-changing endpoints answer there without a token, and no longer on
// the data listeners. It returns as Serve does.
func (s *Server) ServeAdmin(ctx context.Context, ln net.Listener) error {
	s.adminSeparate.Store(true)
	return s.serve(ctx, ln, true)
}

func (s *Server) serve(ctx context.Context, ln net.Listener, admin bool) error {
	hs := s.HTTPServer()
	errc := make(chan error, 1)
	total, perIP, reserve := connlimit.Caps(s.opts.MaxConns, s.opts.MaxConnsPerIP)
	// A connection waiting on its client gives its slot to a new one when the server is
	// full (connlimit.Listener).
	lim := connlimit.New(ln, total, perIP, reserve, true)
	s.lastLimiter.Store(lim)
	go func() { errc <- hs.Serve(stampListener{Listener: lim, clk: s.clk, admin: admin}) }()
	select {
	case err := <-errc:
		_ = s.Shutdown(context.Background())
		return err
	case <-ctx.Done():
	case <-s.d.stopped:
	}
	_ = s.Shutdown(context.Background())
	// Every admitted request is answered (the driver stopped); handlers still writing their
	// answers finish before the connections close.
	hctx, cancel := context.WithTimeout(context.Background(), s.opts.WriteTimeout+time.Second)
	defer cancel()
	err := hs.Shutdown(hctx)
	<-errc
	if err != nil {
		return fmt.Errorf("closing HTTP connections: %w", err)
	}
	return nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sc := stampOf(r)
	if sc != nil {
		// The stamp read so far is this request's arrival; whatever the handler reads (its
		// body) must not become the next request's.
		sc.cur = sc.take()
		if sc.reserved && !healthRoutes[r.URL.Path] {
			// A connection in the reserve kept for health checks: refuse, and free it.
			s.m.reject(http.StatusServiceUnavailable, "connections")
			w.Header().Set("Connection", "close")
			abandonBody(w)
			writeDrop(w, &kserve.DropResponse{Error: "the server holds its most connections (--max-conns): only health checks are answered", Reason: "overload", Stage: "connection"})
			sc.first.Store(0)
			return
		}
	}
	declared := r.Body != nil && r.Body != http.NoBody
	if sc != nil {
		sc.bodyDone = false
		if declared {
			sc.lc.SetPhase(connlimit.Body)
		} else {
			sc.lc.SetPhase(connlimit.Handler)
		}
	}
	if isInfer(r) {
		s.mux.ServeHTTP(w, r)
		if declared && sc != nil && !sc.bodyDone {
			// Answered without its body (an unknown model, a refusal): net/http would drain
			// the body after the handler with no deadline, at the client's pace.
			abandonBody(w)
		}
	} else {
		s.serveGuarded(w, r)
	}
	if sc != nil {
		sc.first.Store(0)
		// The answer is flushed, then the connection waits for its next request: an idle
		// connection, which a connection needing the slot may take (connlimit.Listener).
		sc.lc.SetPhase(connlimit.Waiting)
	}
}

// coreRoutes are the routes every server registers, whatever the plan's system: the table
// that routes() registers and CoreRoutes() documents, so `plan serve --help` lists exactly
// what is served. The handlers are method values: building the table on a
// zero Server (for the documentation) calls none of them.
func (s *Server) coreRoutes() []route {
	return []route{
		{RouteDoc{"POST /v2/models/{model}/infer", "run one request (KServe v2 JSON)"}, s.handleInfer},
		{RouteDoc{"GET /v2/models/{model}", "the model's metadata"}, s.handleModel},
		{RouteDoc{"GET /v2/models/{model}/ready", "whether the model is served"}, s.handleModelReady},
		{RouteDoc{"POST /v2/models/{model}/versions/{version}/infer", "the same, version " + kserve.ModelVersion + " only (others 404)"}, s.versioned(s.handleInfer)},
		{RouteDoc{"GET /v2/models/{model}/versions/{version}", "the same, version " + kserve.ModelVersion + " only (others 404)"}, s.versioned(s.handleModel)},
		{RouteDoc{"GET /v2/models/{model}/versions/{version}/ready", "the same, version " + kserve.ModelVersion + " only (others 404)"}, s.versioned(s.handleModelReady)},
		{RouteDoc{"GET /v2/health/live", "liveness"}, func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, 200, map[string]bool{"live": true})
		}},
		{RouteDoc{"GET /v2/health/ready", "readiness"}, s.handleReady},
		{RouteDoc{"GET /v2", "server metadata"}, func(w http.ResponseWriter, _ *http.Request) {
			// Triton lists the binary tensor data extension there; its clients read it.
			writeJSON(w, 200, map[string]any{"name": "plan", "version": "v2", "extensions": []string{kserve.BinaryExtension}})
		}},
		{RouteDoc{"GET /metrics", "Prometheus metrics"}, s.handleMetrics},
		{RouteDoc{"GET /v1/plan", "the active plan"}, s.handleGetPlan},
		{RouteDoc{"PUT /v1/plan", "load a new plan (admin)"}, s.handlePutPlan},
		{RouteDoc{"POST /v1/workers/state", "set a worker's state (admin)"}, s.handleWorkerState},
	}
}

// route is a documented route and its handler.
type route struct {
	RouteDoc
	h http.HandlerFunc
}

// RouteDoc is one HTTP route ("METHOD /path") and what it does, for `plan serve --help`.
type RouteDoc struct{ Pattern, Doc string }

// FrontendRoutes is implemented by a Frontend that lists the routes its Routes registers,
// for `plan serve --help`.
type FrontendRoutes interface {
	RouteDocs() []RouteDoc
}

// CoreRoutes lists the routes every server registers, before any front end's.
func CoreRoutes() []RouteDoc {
	var out []RouteDoc
	for _, r := range (&Server{}).coreRoutes() {
		out = append(out, r.RouteDoc)
	}
	return out
}

func (s *Server) routes() {
	m := http.NewServeMux()
	for _, r := range s.coreRoutes() {
		m.HandleFunc(r.Pattern, r.h)
	}
	for _, f := range s.opts.Frontends {
		f.Routes(s, m)
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// The catch-all answers every method, so the mux's own 405 never fires: tell a wrong
		// method on a known path (GET …/infer) from an unknown path here.
		var allow []string
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut} {
			if method == r.Method {
				continue
			}
			probe := r.Clone(r.Context())
			probe.Method = method
			if _, pattern := m.Handler(probe); pattern != "/" && pattern != "" {
				allow = append(allow, method)
			}
		}
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeJSON(w, http.StatusMethodNotAllowed, kserve.ErrorResponse{Error: fmt.Sprintf("method %s not allowed on %s (allowed: %s)", formats.EchoName(r.Method), formats.EchoName(r.URL.Path), strings.Join(allow, ", "))})
			return
		}
		writeJSON(w, 404, kserve.ErrorResponse{Error: fmt.Sprintf("no such endpoint: %s %s", formats.EchoName(r.Method), formats.EchoName(r.URL.Path))})
	})
	s.mux = m
}

func (s *Server) model(name string) (*modelSpec, *generation, bool) {
	g := s.active.Load()
	if g == nil {
		return nil, nil, false
	}
	if a, ok := g.apps[name]; ok {
		return &g.specs[a], g, true
	}
	return nil, g, false
}

// unknownModel counts and answers 404 for a model the plan does not serve.
func (s *Server) unknownModel(w http.ResponseWriter, name string) {
	s.Reject(404, "unknown-model")
	writeUnknownModel(w, name, s.Models())
}

// writeUnknownModel answers 404 for a model the plan does not serve, naming those it does.
func writeUnknownModel(w http.ResponseWriter, name string, models []string) {
	writeJSON(w, 404, kserve.ErrorResponse{Error: fmt.Sprintf("model %s not found: this server serves %s", formats.Echo(name), strings.Join(models, ", "))})
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("model")
	md, ok := s.ModelInfo(name)
	if !ok {
		s.unknownModel(w, name)
		return
	}
	writeJSON(w, 200, &md)
}

func (s *Server) handleModelReady(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("model")
	if _, _, ok := s.Specs(name); !ok {
		s.unknownModel(w, name)
		return
	}
	s.handleReady(w, r)
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if err := s.Readiness(r.Context()); errors.Is(err, errNotReady) {
		writeJSON(w, 503, map[string]bool{"ready": false})
		return
	} else if err != nil {
		writeJSON(w, 503, map[string]any{"ready": false, "error": err.Error()})
		return
	}
	writeJSON(w, 200, map[string]bool{"ready": true})
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	s.d.do(s.d.snapshot)
	s.metricsH.ServeHTTP(w, r)
}

// TimerLateness returns (the upper bound of the histogram bucket of) quantile q of how late
// the driver's timers fired since start: the wall clock's precision on this machine, which
// bounds how closely serve can follow the simulator.
func (s *Server) TimerLateness(q float64) time.Duration {
	return time.Duration(s.m.latenessQuantile(q) * float64(time.Second))
}

// ActiveDigest returns the digest of the plan being served.
func (s *Server) ActiveDigest() string { return s.active.Load().digest }

// WithPolicy runs f on the driver goroutine with the driver's clock and the policy of the
// generation it is running (during a migration, the old one until the switch): the hook
// through which a front end hands a policy what it observes outside the engine, such as
// remote LLM engines' queue gauges (serve/openai, --llm-endpoints). f must not block, and
// any decision it makes waits for the policy's next event. It waits for f and reports
// false when the driver has stopped (f did not run).
func (s *Server) WithPolicy(f func(now dataplane.Time, p dataplane.Policy)) bool {
	return s.d.do(func() { f(s.d.now, s.d.gen.eng.Policy()) })
}
