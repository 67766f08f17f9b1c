package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/internal/base/optflag"
	"github.com/plan-dev/plan/internal/run"
	runserve "github.com/plan-dev/plan/internal/run/serve"
	"github.com/plan-dev/plan/serve"
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

` + runserve.RoutesHelp(app.Systems) + `
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
		if fo, ok := fe.(serve.FrontendOptions); ok {
			optflag.Bind(f, fo.Options())
		}
	}
	return cmd
}

// runServe is `plan serve` (internal/run/serve).
func runServe(cmd *cobra.Command, app *App, o *serveOptions, args []string) error {
	return runserve.Run(cmdContext(cmd), runserve.Args{Systems: app.Systems, PlanArgs: args, Addr: o.addr, GRPCAddr: o.grpcAddr,
		Workers: o.workers, Endpoints: o.endpoints, Model: o.model, Device: o.device, Threads: o.threads,
		Policy: o.policy, Params: o.params, Jitter: o.jitter, Seed: o.seed, MaxBody: o.maxBody,
		DrainTimeout: o.drainTimeout, FlushTimeout: o.flushTimeout, InputShape: o.inputShape, MaxInFlight: o.maxInFlight,
		HeaderTimeout: o.headerTimeout, BodyTimeout: o.bodyTimeout, WriteTimeout: o.writeTimeout, IdleTimeout: o.idleTimeout,
		Frontends: o.frontends, AdminAddr: o.adminAddr, AdminToken: o.adminToken, MaxConns: o.maxConns, MaxConnsPerIP: o.maxConnsPerIP,
		MetricsLegacy: o.metricsLegacy, Autopilot: o.autopilot.Flags, Given: givenFlags(cmd), Ready: serveHook}, &app.IO)
}
