package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/serve"
	serveap "github.com/plan-dev/plan/serve/autopilot"
	"github.com/plan-dev/plan/serve/kservegrpc"
	"github.com/plan-dev/plan/serve/worker"
)

type serveOptions struct {
	addr         string
	workers      string
	endpoints    string
	model        string
	device       string
	threads      int
	policy       string
	params       []string
	jitter       float64
	seed         uint64
	maxBody      string
	drainTimeout time.Duration
	flushTimeout time.Duration
	inputShape   string
	maxInFlight  int
	// grpcAddr also serves the KServe v2 gRPC protocol (serve/kservegrpc); "" = off.
	grpcAddr string
	// HTTP timeouts against slow or idle clients.
	headerTimeout, bodyTimeout, writeTimeout, idleTimeout time.Duration
	// frontends are the systems' own APIs (their flags are registered on the command).
	frontends []serve.Frontend
	// adminAddr is the admin listener ("" = the admin endpoints answer on --addr while it
	// is loopback); adminToken opens them on every listener.
	adminAddr, adminToken string
	// maxConns and maxConnsPerIP cap open connections (0 = from the descriptor limit).
	maxConns, maxConnsPerIP int
	// metricsLegacy: /metrics also has vLLM's removed names (serve.Options.MetricsLegacy).
	metricsLegacy bool
	// autopilot re-plans as the load moves.
	autopilot autopilotFlags
}

// serveHook, when set (tests), is called with the running server and its address.
var serveHook func(s *serve.Server, addr string)

// serveRoutesHelp lists every route a server registers: the core routes, then each system's
// front ends' (a reload may move the server to another system's plan, so all are registered),
// from the tables their registration uses.
func serveRoutesHelp(app *App) string {
	var b strings.Builder
	b.WriteString("Routes (every plan):\n")
	w := 0
	docs := serve.CoreRoutes()
	type sysRoutes struct {
		name string
		docs []serve.RouteDoc
	}
	var per []sysRoutes
	for _, sys := range app.Systems.Systems() {
		for _, f := range sys.Frontends {
			if fr, ok := f().(serve.FrontendRoutes); ok {
				per = append(per, sysRoutes{sys.Name, fr.RouteDocs()})
			}
		}
	}
	for _, d := range docs {
		w = max(w, len(d.Pattern))
	}
	for _, p := range per {
		for _, d := range p.docs {
			w = max(w, len(d.Pattern))
		}
	}
	for _, d := range docs {
		fmt.Fprintf(&b, "  %-*s  %s\n", w, d.Pattern, d.Doc)
	}
	for _, p := range per {
		fmt.Fprintf(&b, "Routes of %s plans:\n", p.name)
		for _, d := range p.docs {
			fmt.Fprintf(&b, "  %-*s  %s\n", w, d.Pattern, d.Doc)
		}
	}
	return b.String()
}

func newServeCmd(app *App) *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve [PLAN]",
		Short: "Serve a plan over HTTP (KServe v2) with emulated, ONNX Runtime or remote workers",
		Long: `serve runs a plan for real: the same runtime policies that 'plan simulate' drives in
virtual time, driven by the wall clock. Clients POST /v2/models/{model}/infer (KServe v2
JSON); every answer carries the end-to-end latency and its breakdown (batch wait, queue,
per-stage execution, transfer). A request the policy drops gets 503 with the reason and the
stage, and Retry-After.

Workers: emulated (default) wait each stage's profiled latency (--jitter adds seeded noise)
and carry the input through as the output, so any flat FP32 vector is accepted unless
--input-shape declares one; onnx runs each partition's block subgraph of --model with ONNX
Runtime and passes feature maps between stages as fp16 (a cascade plan: each stage runs its
whole model, MODEL.onnx in the --model directory, and forwards by the output's certainty);
remote sends each stage to a KServe
v2 / Triton endpoint listed in --endpoints (checked at start).

` + serveRoutesHelp(app) + `
The state-changing endpoints (PUT /v1/plan, POST /v1/workers/state) answer on --admin-addr
(loopback by default: give it as 127.0.0.1:PORT), or on --addr while it is a loopback
address and no --admin-addr is given, or anywhere to "Authorization: Bearer TOKEN" with
--admin-token (PLAN_ADMIN_TOKEN); elsewhere 401/403. Binding --addr or --grpc-addr to a
non-loopback address (0.0.0.0, :PORT, a public IP) prints a warning.

SIGHUP re-reads PLAN and migrates to it as PPipe does (preload, pause intake, flush
in-flight work, switch, resume). SIGINT/SIGTERM stop intake, let in-flight requests finish
within --drain-timeout, answer the rest with 503 and exit 0.

PLAN defaults to ./plan.json.`,
		Example: `  plan serve plan.json
  plan serve plan.json --addr 127.0.0.1:9000 --jitter 0.05 --seed 7
  plan serve plan.json --workers onnx --model model.onnx --device cpu
  plan serve tiny.json --workers onnx --model testdata/cascade/onnx   # a cascade: one MODEL.onnx per model
  plan serve plan.json --workers remote --endpoints endpoints.yaml
  curl -s localhost:8080/v2/models/demo/infer \
    -d '{"inputs":[{"name":"input","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}'
  kill -HUP $(pidof plan)     # reload plan.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(cmd, app, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:8080", "listen address (loopback by default)")
	f.StringVar(&o.grpcAddr, "grpc-addr", "", "also serve the KServe v2 gRPC protocol on this address, e.g. 127.0.0.1:8001, with grpc.health.v1 (SERVING while ready) and server reflection (default off)")
	f.StringVar(&o.workers, "workers", "emulated", "worker kind: emulated, onnx or remote")
	f.StringVar(&o.endpoints, "endpoints", "", "remote workers: YAML/JSON file mapping stages to KServe v2 endpoints")
	f.StringVar(&o.model, "model", "", "onnx workers: the ONNX model the plan's profile was made from (a cascade plan: a directory holding MODEL.onnx for each model)")
	f.StringVar(&o.device, "device", "cpu", "onnx workers: cpu or cuda:N")
	f.IntVar(&o.threads, "threads", 1, "onnx workers: intra-op threads per session")
	f.StringVar(&o.policy, "policy", "", "runtime policy (default: the plan's own): "+run.PolicyNames(app.Systems))
	f.StringSliceVar(&o.params, "param", nil, "policy parameter KEY=VALUE (repeatable)")
	f.Float64Var(&o.jitter, "jitter", 0, "emulated workers: relative uniform jitter on execution and transfer times (0.05 = ±5%)")
	f.Uint64Var(&o.seed, "seed", 1, "random seed of the jitter")
	f.StringVar(&o.maxBody, "max-body", "16MiB", "largest infer request body (bytes, or with KiB/MiB/GiB)")
	f.DurationVar(&o.drainTimeout, "drain-timeout", 10*time.Second, "on SIGINT/SIGTERM, how long in-flight requests may take")
	f.DurationVar(&o.flushTimeout, "flush-timeout", 0, "on reload, how long the old plan may take to flush (0 = 2 × the largest SLO + 100ms)")
	f.IntVar(&o.maxInFlight, "max-inflight", 4096, "decoded requests held at once; beyond it new ones get 503 \"overload\" at intake")
	f.DurationVar(&o.headerTimeout, "header-timeout", 5*time.Second, "longest a client may take to send a request's headers")
	f.DurationVar(&o.bodyTimeout, "body-timeout", 5*time.Second, "longest a client may take to send a request's body, on every route (408 after it; a slow body holds no --max-inflight slot)")
	f.DurationVar(&o.writeTimeout, "write-timeout", 10*time.Second, "longest writing an answer may take")
	f.DurationVar(&o.idleTimeout, "idle-timeout", 60*time.Second, "how long a keep-alive connection may stay idle")
	f.StringVar(&o.adminAddr, "admin-addr", "", "listener for the state-changing endpoints (PUT /v1/plan, POST /v1/workers/state), e.g. 127.0.0.1:8081 (default: on --addr while it is loopback)")
	f.StringVar(&o.adminToken, "admin-token", "", "bearer token that opens the state-changing endpoints on every listener (or PLAN_ADMIN_TOKEN)")
	f.IntVar(&o.maxConns, "max-conns", 0, "open connections per listener (0 = three quarters of the descriptor limit); the last few answer only health checks")
	f.IntVar(&o.maxConnsPerIP, "max-conns-per-ip", 0, "open connections per client address (0 = a quarter of --max-conns)")
	f.BoolVar(&o.metricsLegacy, "metrics-legacy", false, "/metrics also exports the LLM names vLLM removed that older dashboards and AIBrix read (vllm:gpu_cache_usage_perc, vllm:time_per_output_token_seconds)")
	f.StringVar(&o.inputShape, "input-shape", "", "emulated workers: per-sample input shape to enforce, e.g. 3,224,224 (-1 = any)")
	addAutopilotFlags(f, &o.autopilot)
	o.frontends = app.Systems.Frontends()
	for _, fe := range o.frontends {
		if ff, ok := fe.(serve.FrontendFlags); ok {
			ff.Flags(f)
		}
	}
	return cmd
}

// parseSize parses "1048576", "64KiB", "16MiB", "1GiB" (also KB/MB/GB as powers of 1000).
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("must be a positive size such as 1048576 or 16MiB")
	}
	return n * mult, nil
}

func parseShape(s string) ([]int64, error) {
	if s == "" {
		return nil, nil
	}
	var out []int64
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil || v == 0 || v < -1 {
			return nil, fmt.Errorf("%q: dimensions must be positive integers or -1", p)
		}
		out = append(out, v)
	}
	return out, nil
}

func runServe(cmd *cobra.Command, app *App, o *serveOptions, args []string) error {
	path, err := run.ResolvePlanArg(args)
	if err != nil {
		return err
	}
	opts, pilot, closeWorkers, err := newServeOptions(cmd, app, o, path)
	if err != nil {
		return err
	}
	defer closeWorkers()
	s, err := serve.New(opts)
	if err != nil {
		// The plan was valid on its own; what fails here is the plan against the workers
		// (a missing model file, an endpoint that does not answer): bad input, exit 2.
		// Errors that already name the endpoints file are about that file.
		if o.workers == "remote" && strings.HasPrefix(err.Error(), filepath.Base(o.endpoints)+": ") {
			return run.UsageError(err)
		}
		return run.UsageError(fmt.Errorf("%s: %w", filepath.Base(path), err))
	}
	if pilot != nil {
		if err := pilot.Start(); err != nil {
			_ = s.Shutdown(context.Background())
			return run.UsageErrorf("--autopilot: %v", err)
		}
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		_ = s.Shutdown(context.Background())
		return run.UsageErrorf("--addr %s: %v", o.addr, err)
	}
	app.Log.Info("serving", "plan", path, "digest", s.ActiveDigest(), "workers", o.workers, "addr", "http://"+ln.Addr().String())
	warnPublic(app, "--addr", o.addr)
	warnPublic(app, "--grpc-addr", o.grpcAddr)
	if o.adminAddr != "" {
		wait, err := serveAdmin(cmd.Context(), app, s, o.adminAddr)
		if err != nil {
			_ = ln.Close()
			_ = s.Shutdown(context.Background())
			return err
		}
		defer wait()
	}
	if o.grpcAddr != "" {
		gaddr, stopGRPC, err := kservegrpc.Start(cmd.Context(), s, o.grpcAddr)
		if err != nil {
			_ = ln.Close()
			_ = s.Shutdown(context.Background())
			return run.UsageErrorf("--grpc-addr %s: %v", o.grpcAddr, err)
		}
		defer stopGRPC()
		app.Log.Info("serving gRPC", "addr", gaddr)
	}
	ctx := cmd.Context()
	stopHup := reloadOnHUP(ctx, app, s, path)
	if serveHook != nil {
		serveHook(s, ln.Addr().String())
	}
	err = s.Serve(ctx, ln)
	stopHup()
	if err != nil {
		return err
	}
	app.Log.Info("stopped", "addr", ln.Addr().String())
	return nil
}

// newServeOptions checks serve's flags and turns them and the plan at path into the
// server's options, refusing bad input (exit 2) before anything listens. The plan is read
// and deployed once, by loadPlanDeploymentPolicy (simulate and check read plans the same
// way); --policy and --autopilot are checked against that deployment, and the server
// deploys it, and every plan it reloads, with the same registry deployer (Options.Deploy).
// The returned function releases the workers' connections.
func newServeOptions(cmd *cobra.Command, app *App, o *serveOptions, path string) (serve.Options, *serveap.Autopilot, func(), error) {
	var none serve.Options
	plan, dep, def, err := run.LoadPlanDeploymentPolicy(app.Systems, path)
	if err != nil {
		return none, nil, nil, err
	}
	maxBody, err := parseSize(o.maxBody)
	if err != nil {
		return none, nil, nil, run.UsageErrorf("--max-body %q: %v", o.maxBody, err)
	}
	if err := checkServeLimits(o); err != nil {
		return none, nil, nil, err
	}
	// Front ends check their own flags and take defaults from the address (the batch
	// queue's per-server directory, a --queue-url that is not a NATS URL).
	for _, fe := range o.frontends {
		if c, ok := fe.(interface{ Configure(addr string) error }); ok {
			if err := c.Configure(o.addr); err != nil {
				return none, nil, nil, run.UsageError(err)
			}
		}
	}
	shape, err := parseShape(o.inputShape)
	if err != nil {
		return none, nil, nil, run.UsageErrorf("--input-shape: %v", err)
	}
	params, err := run.ParseParams(o.params)
	if err != nil {
		return none, nil, nil, err
	}
	pcfg := dataplane.Config{Policy: o.policy, Params: params}
	reg := app.Systems.Policies()
	if _, err := reg.New(dep, pcfg, def); err != nil {
		return none, nil, nil, run.UsageErrorf("--policy: %s: %v", path, err)
	}
	opts := serve.Options{
		Plan: plan, Deploy: app.Systems.Deploy, Sections: app.Systems.Sections(), Policies: reg, Policy: pcfg, Jitter: o.jitter, Seed: o.seed, MaxBody: maxBody,
		DrainTimeout: o.drainTimeout, FlushTimeout: o.flushTimeout, InputShape: shape, Log: app.Log,
		MaxInFlight: o.maxInFlight, HeaderTimeout: o.headerTimeout, BodyTimeout: o.bodyTimeout,
		WriteTimeout: o.writeTimeout, IdleTimeout: o.idleTimeout, Frontends: o.frontends,
		AdminToken: o.adminToken, MaxConns: o.maxConns, MaxConnsPerIP: o.maxConnsPerIP,
		MetricsLegacy: o.metricsLegacy,
	}
	pilot, err := serveAutopilot(cmd, app, o, plan, dep, &opts)
	if err != nil {
		return none, nil, nil, err
	}
	closeWorkers, err := workerFactory(o, &opts, app)
	if err != nil {
		return none, nil, nil, err
	}
	if shape != nil && o.workers != "emulated" {
		closeWorkers()
		return none, nil, nil, run.UsageErrorf("--input-shape applies to emulated workers only (onnx and remote take the model's)")
	}
	return opts, pilot, closeWorkers, nil
}

// checkServeLimits refuses serve's timeouts, jitter and connection limits out of range.
func checkServeLimits(o *serveOptions) error {
	if o.drainTimeout < 0 || o.flushTimeout < 0 {
		return run.UsageErrorf("--drain-timeout and --flush-timeout must be >= 0")
	}
	if !(o.jitter >= 0 && o.jitter < 1) {
		return run.UsageErrorf("--jitter: %g: must be in [0, 1)", o.jitter)
	}
	if o.headerTimeout <= 0 || o.bodyTimeout <= 0 || o.writeTimeout <= 0 || o.idleTimeout <= 0 {
		return run.UsageErrorf("--header-timeout, --body-timeout, --write-timeout and --idle-timeout must be > 0")
	}
	if o.maxInFlight < 1 {
		return run.UsageErrorf("--max-inflight: %d: must be >= 1", o.maxInFlight)
	}
	if o.maxConns < 0 || o.maxConnsPerIP < 0 {
		return run.UsageErrorf("--max-conns and --max-conns-per-ip must be >= 0")
	}
	return nil
}

// reloadOnHUP reloads the plan file on every SIGHUP until the returned function is called
// (it returns once no reload runs). cli.Run cancels the context on SIGINT/SIGTERM.
func reloadOnHUP(ctx context.Context, app *App, s *serve.Server, path string) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	stopHup := make(chan struct{})
	hupDone := make(chan struct{})
	go func() {
		defer close(hupDone)
		for {
			select {
			case <-stopHup:
				return
			case <-hup:
				reloadFromFile(ctx, app, s, path)
			}
		}
	}()
	return func() {
		close(stopHup)
		<-hupDone
		signal.Stop(hup)
	}
}

// workerFactory sets opts.NewExecutor for --workers; the returned function releases what it
// opened (the gRPC stage client of remote workers).
func workerFactory(o *serveOptions, opts *serve.Options, app *App) (func(), error) {
	switch o.workers {
	case "emulated":
		if o.endpoints != "" || o.model != "" {
			return nil, run.UsageErrorf("--endpoints and --model need --workers remote or onnx")
		}
	case "remote":
		if o.endpoints == "" {
			return nil, run.UsageErrorf("--workers remote needs --endpoints FILE")
		}
		eps, err := worker.ReadEndpoints(o.endpoints)
		if err != nil {
			return nil, run.UsageError(err)
		}
		// grpc:// endpoints speak KServe v2 gRPC (Triton's port 8001).
		sc := kservegrpc.NewStageClient()
		eps.SetTransport("grpc", sc)
		opts.NewExecutor = worker.RemoteFactory(eps, nil)
		return func() { _ = sc.Close() }, nil
	case "onnx":
		if o.model == "" {
			return nil, run.UsageErrorf("--workers onnx needs --model FILE.onnx")
		}
		opts.NewExecutor = worker.ONNXFactory(worker.ONNXOptions{Model: o.model, Device: o.device, Threads: o.threads, Cuts: app.Systems.ONNXCuts})
	default:
		return nil, run.UsageErrorf("--workers %q: must be emulated, onnx or remote", o.workers)
	}
	return func() {}, nil
}

// serveAdmin starts the admin listener (--admin-addr); the returned function waits for it
// to stop (after the server's drain).
func serveAdmin(ctx context.Context, app *App, s *serve.Server, addr string) (func(), error) {
	aln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, run.UsageErrorf("--admin-addr %s: %v", addr, err)
	}
	warnPublic(app, "--admin-addr", addr)
	done := make(chan error, 1)
	go func() { done <- s.ServeAdmin(ctx, aln) }()
	app.Log.Info("serving admin", "addr", "http://"+aln.Addr().String())
	return func() { <-done }, nil
}

// warnPublic warns on stderr when flag binds addr to a non-loopback address: every client
// that can reach the machine can then use the API.
func warnPublic(app *App, flag, addr string) {
	if addr == "" || serve.IsLoopback(addr) {
		return
	}
	fmt.Fprintf(app.Err, "warning: %s %s listens on every interface or a public address: anyone who can reach it can send requests (keep it on 127.0.0.1 behind a proxy, or firewall it)\n", flag, addr)
}

// reloadFromFile re-reads the plan and migrates to it; a bad plan is logged and the old one
// keeps serving.
func reloadFromFile(ctx context.Context, app *App, s *serve.Server, path string) {
	p, err := formats.ReadIntoWith[*formats.Plan](path, app.Systems.Sections())
	if err != nil {
		app.Log.Error("SIGHUP: not reloading", "err", err)
		return
	}
	start := time.Now()
	if err := s.Reload(ctx, p); err != nil {
		app.Log.Error("SIGHUP: reload failed, the old plan keeps serving", "plan", path, "err", err)
		return
	}
	app.Log.Info("SIGHUP: plan reloaded", "plan", path, "digest", s.ActiveDigest(), "took", time.Since(start).Round(time.Microsecond))
}
