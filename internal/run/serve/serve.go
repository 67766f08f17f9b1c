// Package serve is the work of `plan serve`: it reads and deploys the plan, turns the
// options into the server's (serve.Options: limits, workers, policy, the systems' front
// ends and the autopilot), listens on the data, admin and gRPC addresses, reloads the plan
// on SIGHUP and serves until the context ends (SIGINT/SIGTERM: drain, then exit 0).
package serve

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

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
	runap "github.com/plan-dev/plan/internal/run/autopilot"
	planserve "github.com/plan-dev/plan/serve"
	serveap "github.com/plan-dev/plan/serve/autopilot"
	"github.com/plan-dev/plan/serve/kservegrpc"
	"github.com/plan-dev/plan/serve/worker"
)

// Args are `plan serve`'s inputs; the defaults named are the flags'.
type Args struct {
	// Systems is the registry the plan is deployed with, and every plan reloaded.
	Systems *systems.Registry
	// PlanArgs are the positional arguments: PLAN, or none for ./plan.json.
	PlanArgs []string
	// Addr is --addr, the HTTP listen address (default 127.0.0.1:8080).
	Addr string
	// GRPCAddr is --grpc-addr: also serve KServe v2 gRPC there ("" = off, the default).
	GRPCAddr string
	// Workers is --workers: emulated (default), onnx or remote.
	Workers string
	// Endpoints is --endpoints, remote workers' stage-to-endpoint file.
	Endpoints string
	// Model is --model, onnx workers' ONNX model (a cascade: a directory of MODEL.onnx).
	Model string
	// Device is --device, onnx workers' cpu (default) or cuda:N; Threads --threads, their
	// intra-op threads per session (default 1).
	Device  string
	Threads int
	// Policy is --policy ("" = the plan's own); Params --param KEY=VALUE.
	Policy string
	Params []string
	// Jitter is --jitter, emulated workers' relative jitter (default 0); Seed --seed its
	// random seed (default 1).
	Jitter float64
	Seed   uint64
	// MaxBody is --max-body, the largest infer body: bytes or with KiB/MiB/GiB (default 16MiB).
	MaxBody string
	// DrainTimeout is --drain-timeout (default 10s); FlushTimeout --flush-timeout (0 = 2 ×
	// the largest SLO + 100ms, the default).
	DrainTimeout, FlushTimeout time.Duration
	// InputShape is --input-shape, emulated workers' per-sample shape ("" = any flat vector).
	InputShape string
	// MaxInFlight is --max-inflight, decoded requests held at once (default 4096).
	MaxInFlight int
	// HeaderTimeout, BodyTimeout, WriteTimeout and IdleTimeout are the HTTP timeouts
	// (defaults 5s, 5s, 10s, 60s).
	HeaderTimeout, BodyTimeout, WriteTimeout, IdleTimeout time.Duration
	// Frontends are the systems' own APIs, their flags already parsed.
	Frontends []planserve.Frontend
	// AdminAddr is --admin-addr ("" = the admin endpoints answer on Addr while it is
	// loopback); AdminToken --admin-token opens them on every listener.
	AdminAddr, AdminToken string
	// MaxConns and MaxConnsPerIP are --max-conns and --max-conns-per-ip (0 = from the
	// descriptor limit).
	MaxConns, MaxConnsPerIP int
	// MetricsLegacy is --metrics-legacy: /metrics also has vLLM's removed names.
	MetricsLegacy bool
	// Autopilot are the --autopilot options.
	Autopilot runap.Flags
	// Given are the names of the flags set on the command line (the --autopilot-* checks).
	Given []string
	// Ready, when set (tests), is called with the running server and its address.
	Ready func(s *planserve.Server, addr string)
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

func Run(ctx context.Context, a Args, io *run.IO) error {
	path, err := run.ResolvePlanArg(a.PlanArgs)
	if err != nil {
		return err
	}
	opts, pilot, closeWorkers, err := newOptions(a, io, path)
	if err != nil {
		return err
	}
	defer closeWorkers()
	s, err := planserve.New(opts)
	if err != nil {
		// The plan was valid on its own; what fails here is the plan against the workers
		// (a missing model file, an endpoint that does not answer): bad input, exit 2.
		// Errors that already name the endpoints file are about that file.
		if a.Workers == "remote" && strings.HasPrefix(err.Error(), filepath.Base(a.Endpoints)+": ") {
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
	ln, err := net.Listen("tcp", a.Addr)
	if err != nil {
		_ = s.Shutdown(context.Background())
		return run.UsageErrorf("--addr %s: %v", a.Addr, err)
	}
	io.Log.Info("serving", "plan", path, "digest", s.ActiveDigest(), "workers", a.Workers, "addr", "http://"+ln.Addr().String())
	WarnPublic(io, "--addr", a.Addr)
	WarnPublic(io, "--grpc-addr", a.GRPCAddr)
	if a.AdminAddr != "" {
		wait, err := serveAdmin(ctx, io, s, a.AdminAddr)
		if err != nil {
			_ = ln.Close()
			_ = s.Shutdown(context.Background())
			return err
		}
		defer wait()
	}
	if a.GRPCAddr != "" {
		gaddr, stopGRPC, err := kservegrpc.Start(ctx, s, a.GRPCAddr)
		if err != nil {
			_ = ln.Close()
			_ = s.Shutdown(context.Background())
			return run.UsageErrorf("--grpc-addr %s: %v", a.GRPCAddr, err)
		}
		defer stopGRPC()
		io.Log.Info("serving gRPC", "addr", gaddr)
	}
	stopHup := reloadOnHUP(ctx, io, a.Systems, s, path)
	if a.Ready != nil {
		a.Ready(s, ln.Addr().String())
	}
	err = s.Serve(ctx, ln)
	stopHup()
	if err != nil {
		return err
	}
	io.Log.Info("stopped", "addr", ln.Addr().String())
	return nil
}

// newOptions checks serve's flags and turns them and the plan at path into the
// server's options, refusing bad input (exit 2) before anything listens. The plan is read
// and deployed once, by run.LoadPlanDeploymentPolicy (simulate and check read plans the same
// way); --policy and --autopilot are checked against that deployment, and the server
// deploys it, and every plan it reloads, with the same registry deployer (Options.Deploy).
// The returned function releases the workers' connections.
func newOptions(a Args, io *run.IO, path string) (planserve.Options, *serveap.Autopilot, func(), error) {
	var none planserve.Options
	plan, dep, def, err := run.LoadPlanDeploymentPolicy(a.Systems, path)
	if err != nil {
		return none, nil, nil, err
	}
	run.WarnStale(io, a.Systems, path, plan)
	maxBody, err := parseSize(a.MaxBody)
	if err != nil {
		return none, nil, nil, run.UsageErrorf("--max-body %q: %v", a.MaxBody, err)
	}
	if err := checkLimits(&a); err != nil {
		return none, nil, nil, err
	}
	// Front ends check their own flags and take defaults from the address (the batch
	// queue's per-server directory, a --queue-url that is not a NATS URL).
	for _, fe := range a.Frontends {
		if c, ok := fe.(interface{ Configure(addr string) error }); ok {
			if err := c.Configure(a.Addr); err != nil {
				return none, nil, nil, run.UsageError(err)
			}
		}
	}
	shape, err := parseShape(a.InputShape)
	if err != nil {
		return none, nil, nil, run.UsageErrorf("--input-shape: %v", err)
	}
	params, err := run.ParseParams(a.Params)
	if err != nil {
		return none, nil, nil, err
	}
	pcfg := dataplane.Config{Policy: a.Policy, Params: params}
	reg := a.Systems.Policies()
	if _, err := reg.New(dep, pcfg, def); err != nil {
		return none, nil, nil, run.UsageErrorf("--policy: %s: %v", path, err)
	}
	opts := planserve.Options{
		Plan: plan, Deploy: a.Systems.Deploy, Sections: a.Systems.Sections(), Policies: reg, Policy: pcfg, Jitter: a.Jitter, Seed: a.Seed, MaxBody: maxBody,
		DrainTimeout: a.DrainTimeout, FlushTimeout: a.FlushTimeout, InputShape: shape, Log: io.Log,
		MaxInFlight: a.MaxInFlight, HeaderTimeout: a.HeaderTimeout, BodyTimeout: a.BodyTimeout,
		WriteTimeout: a.WriteTimeout, IdleTimeout: a.IdleTimeout, Frontends: a.Frontends,
		AdminToken: a.AdminToken, MaxConns: a.MaxConns, MaxConnsPerIP: a.MaxConnsPerIP,
		MetricsLegacy: a.MetricsLegacy,
	}
	pilot, err := runap.ForServe(a.Systems, a.Autopilot, a.Given, plan, dep, &opts)
	if err != nil {
		return none, nil, nil, err
	}
	closeWorkers, err := workerFactory(&a, &opts)
	if err != nil {
		return none, nil, nil, err
	}
	if shape != nil && a.Workers != "emulated" {
		closeWorkers()
		return none, nil, nil, run.UsageErrorf("--input-shape applies to emulated workers only (onnx and remote take the model's)")
	}
	return opts, pilot, closeWorkers, nil
}

// checkLimits refuses serve's timeouts, jitter and connection limits out of range.
func checkLimits(a *Args) error {
	if a.DrainTimeout < 0 || a.FlushTimeout < 0 {
		return run.UsageErrorf("--drain-timeout and --flush-timeout must be >= 0")
	}
	if !(a.Jitter >= 0 && a.Jitter < 1) {
		return run.UsageErrorf("--jitter: %g: must be in [0, 1)", a.Jitter)
	}
	if a.HeaderTimeout <= 0 || a.BodyTimeout <= 0 || a.WriteTimeout <= 0 || a.IdleTimeout <= 0 {
		return run.UsageErrorf("--header-timeout, --body-timeout, --write-timeout and --idle-timeout must be > 0")
	}
	if a.MaxInFlight < 1 {
		return run.UsageErrorf("--max-inflight: %d: must be >= 1", a.MaxInFlight)
	}
	if a.MaxConns < 0 || a.MaxConnsPerIP < 0 {
		return run.UsageErrorf("--max-conns and --max-conns-per-ip must be >= 0")
	}
	return nil
}

// reloadOnHUP reloads the plan file on every SIGHUP until the returned function is called
// (it returns once no reload runs). cli.Run cancels the context on SIGINT/SIGTERM.
func reloadOnHUP(ctx context.Context, io *run.IO, reg *systems.Registry, s *planserve.Server, path string) (stop func()) {
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
				reloadFromFile(ctx, io, reg, s, path)
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
func workerFactory(a *Args, opts *planserve.Options) (func(), error) {
	switch a.Workers {
	case "emulated":
		if a.Endpoints != "" || a.Model != "" {
			return nil, run.UsageErrorf("--endpoints and --model need --workers remote or onnx")
		}
	case "remote":
		if a.Endpoints == "" {
			return nil, run.UsageErrorf("--workers remote needs --endpoints FILE")
		}
		eps, err := worker.ReadEndpoints(a.Endpoints)
		if err != nil {
			return nil, run.UsageError(err)
		}
		// grpc:// endpoints speak KServe v2 gRPC (Triton's port 8001).
		sc := kservegrpc.NewStageClient()
		eps.SetTransport("grpc", sc)
		opts.NewExecutor = worker.RemoteFactory(eps, nil)
		return func() { _ = sc.Close() }, nil
	case "onnx":
		if a.Model == "" {
			return nil, run.UsageErrorf("--workers onnx needs --model FILE.onnx")
		}
		opts.NewExecutor = worker.ONNXFactory(worker.ONNXOptions{Model: a.Model, Device: a.Device, Threads: a.Threads, Cuts: a.Systems.ONNXCuts})
	default:
		return nil, run.UsageErrorf("--workers %q: must be emulated, onnx or remote", a.Workers)
	}
	return func() {}, nil
}

// serveAdmin starts the admin listener (--admin-addr); the returned function waits for it
// to stop (after the server's drain).
func serveAdmin(ctx context.Context, io *run.IO, s *planserve.Server, addr string) (func(), error) {
	aln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, run.UsageErrorf("--admin-addr %s: %v", addr, err)
	}
	WarnPublic(io, "--admin-addr", addr)
	done := make(chan error, 1)
	go func() { done <- s.ServeAdmin(ctx, aln) }()
	io.Log.Info("serving admin", "addr", "http://"+aln.Addr().String())
	return func() { <-done }, nil
}

// WarnPublic warns on stderr when flag binds addr to a non-loopback address: every client
// that can reach the machine can then use the API.
func WarnPublic(io *run.IO, flag, addr string) {
	if addr == "" || planserve.IsLoopback(addr) {
		return
	}
	fmt.Fprintf(io.Err, "warning: %s %s listens on every interface or a public address: anyone who can reach it can send requests (keep it on 127.0.0.1 behind a proxy, or firewall it)\n", flag, addr)
}

// reloadFromFile re-reads the plan and migrates to it; a bad plan is logged and the old one
// keeps serving.
func reloadFromFile(ctx context.Context, io *run.IO, reg *systems.Registry, s *planserve.Server, path string) {
	p, err := formats.ReadInto[*formats.Plan](path, reg.Sections())
	if err != nil {
		io.Log.Error("SIGHUP: not reloading", "err", err)
		return
	}
	start := time.Now()
	if err := s.Reload(ctx, p); err != nil {
		io.Log.Error("SIGHUP: reload failed, the old plan keeps serving", "plan", path, "err", err)
		return
	}
	io.Log.Info("SIGHUP: plan reloaded", "plan", path, "digest", s.ActiveDigest(), "took", time.Since(start).Round(time.Microsecond))
}
