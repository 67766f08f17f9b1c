// Package load is `plan load`'s work: open-loop load against a running plan serve (or any
// KServe v2 server of a plan's models) reported as 'plan simulate' reports a load point, and,
// with --openai, a benchmark of an OpenAI-compatible server as vLLM's benchmark_serving runs
// one. The load generator itself is serve/load (loadgen here); this package checks the
// command's inputs, runs it and prints its report.
package load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/serve/kservegrpc"
	loadgen "github.com/plan-dev/plan/serve/load"
	"github.com/plan-dev/plan/sim"
)

// Args are `plan load`'s inputs in both modes. A *Set field says the flag was given on the
// command line, where that changes what the run does (a default that differs by mode, a
// flag one mode refuses).
type Args struct {
	// URLs are the positional arguments: the server's base URL, one at most (none with
	// OpenAI).
	URLs []string
	// OpenAI is the OpenAI-compatible server's base URL (--openai or --base-url; default
	// "": the KServe mode).
	OpenAI string
	// BaseURLSet: OpenAI was given as --base-url (errors name that flag).
	BaseURLSet bool
	// Rate is one model's rate in requests/s (--rate; default 0: Load).
	Rate    float64
	RateSet bool
	// RequestRate is --request-rate, vllm bench serve's name of --rate (+Inf: every request
	// at once).
	RequestRate    float64
	RequestRateSet bool
	// Load is every model's multiple of its planned rate (--load; default 1 without Rate).
	Load    float64
	LoadSet bool
	// RateScale replays a Trace file at this multiple of its recorded rate (--rate-scale;
	// default 0: not set).
	RateScale float64
	// Model is the model to load (--model; default every model of the served plan, with
	// OpenAI the server's first).
	Model string
	// Plan is the served plan's file, for a server that does not answer GET /v1/plan
	// (--plan; default none).
	Plan string
	// Duration is the arrival window (--duration; default 10s).
	Duration    time.Duration
	DurationSet bool
	// MaxRequests stops arrivals after this many requests (--max-requests, --num-prompts;
	// default 0: no limit).
	MaxRequests int
	// Trace is the arrival process or trace file (--trace; default "poisson").
	Trace    string
	TraceSet bool
	// Seed seeds the arrival process (--seed; default 1).
	Seed uint64
	// SLO is the latency objective for attainment (--slo; default 0: each model's).
	SLO    time.Duration
	SLOSet bool
	// Timeout is the per-request timeout (--timeout; default 0: 10 × SLO + 5s, with OpenAI
	// 10m).
	Timeout time.Duration
	// GRPC sends the infer requests over KServe v2 gRPC to this HOST:PORT (--grpc; default
	// "": HTTP).
	GRPC    string
	GRPCSet bool
	// GRPCRaw sends tensors in raw_input_contents (--grpc-raw; default false).
	GRPCRaw    bool
	GRPCRawSet bool
	// Warmup: requests arriving in this first part are sent but not counted (--warmup;
	// default plan simulate's rule, with OpenAI 0).
	Warmup    time.Duration
	WarmupSet bool
	// Connections bounds the connections open at once (--connections; default 2048).
	Connections int
	// Headers are sent with every request, each "Name: value" (--header).
	Headers []string
	// APIKey is sent as Authorization: Bearer (--api-key; with OpenAI default
	// $OPENAI_API_KEY); never printed.
	APIKey string
	// MaxFailureRate: a larger share of failed counted requests exits 1
	// (--max-failure-rate; default 0.05).
	MaxFailureRate float64
	// Systems is the system registry a plan file is read and deployed with.
	Systems *systems.Registry

	// The OpenAI mode's own flags.

	// Chat posts to /v1/chat/completions (--chat; default /v1/completions).
	Chat bool
	// Concurrency runs closed loop with this many clients (--concurrency; default 0: open
	// loop).
	Concurrency int
	// InputTokens and OutputTokens are the prompt and max_tokens of requests whose trace
	// entry gives none (--input-tokens, --output-tokens; default 128 each).
	InputTokens, OutputTokens int
	// Strict sends only OpenAI API fields (--openai-strict; default false).
	Strict bool

	// vllm bench serve's options (VLLMSet says which were given).

	// DatasetName and DatasetPath pick the requests from a dataset (--dataset-name,
	// --dataset-path; default none).
	DatasetName, DatasetPath string
	// RandomInputLen, RandomOutputLen and RandomRangeRatio shape --dataset-name random
	// (defaults 1024, 128, 0).
	RandomInputLen, RandomOutputLen int
	RandomRangeRatio                float64
	// ShareGPTOutputLen is every ShareGPT request's output tokens (--sharegpt-output-len;
	// default 0: the answer's).
	ShareGPTOutputLen int
	// DatasetTimestamps replays the dataset's recorded times (--dataset-timestamps).
	DatasetTimestamps bool
	// Burstiness is the gamma inter-arrival shape (--burstiness; default 1: Poisson).
	Burstiness float64
	// MaxConcurrency bounds the requests in flight (--max-concurrency; default 0: none).
	MaxConcurrency int
	// NumWarmups requests are sent before the run, never counted (--num-warmups; default 0).
	NumWarmups int
	// Goodput are the objectives in ms, as ttft:200 (--goodput).
	Goodput []string
	// PercentileMetrics and MetricPercentiles choose what is reported
	// (--percentile-metrics, default "ttft,tpot,itl,e2el"; --metric-percentiles, default
	// "50,90,99").
	PercentileMetrics, MetricPercentiles string
	// SaveResult writes vllm bench serve's result JSON, SaveDetailed with the per-request
	// records (--save-result, --save-detailed).
	SaveResult, SaveDetailed bool
	// ResultDir and ResultFilename place it (--result-dir, default the current directory;
	// --result-filename, default vllm's name).
	ResultDir, ResultFilename string
	// Label is the run's label (--label).
	Label string
	// Metadata are KEY=VALUE pairs recorded in the result (--metadata).
	Metadata []string
	// VLLMSet says which of vllm bench serve's options were given.
	VLLMSet VLLMSet
}

// VLLMSet says which of `vllm bench serve`'s options were given on the command line: a
// KServe run refuses each rather than ignoring it, and the dataset ones need --dataset-name.
type VLLMSet struct {
	// The dataset's (they need --dataset-name).
	DatasetName, DatasetPath, DatasetTimestamps, ShareGPTOutputLen bool
	RandomInputLen, RandomOutputLen, RandomRangeRatio              bool

	// The schedule's and the report's.
	Burstiness, MaxConcurrency, NumWarmups        bool
	Goodput, PercentileMetrics, MetricPercentiles bool

	// The saved result's.
	SaveResult, SaveDetailed, ResultDir, ResultFilename, Label, Metadata bool
}

// given names the options set, flag names in the order errors report them.
func (s VLLMSet) given() []string {
	return setNames([]flagSet{{"dataset-name", s.DatasetName}, {"dataset-path", s.DatasetPath}, {"dataset-timestamps", s.DatasetTimestamps},
		{"burstiness", s.Burstiness}, {"max-concurrency", s.MaxConcurrency}, {"num-warmups", s.NumWarmups}, {"goodput", s.Goodput},
		{"percentile-metrics", s.PercentileMetrics}, {"metric-percentiles", s.MetricPercentiles}, {"save-result", s.SaveResult},
		{"save-detailed", s.SaveDetailed}, {"result-dir", s.ResultDir}, {"result-filename", s.ResultFilename}, {"label", s.Label},
		{"metadata", s.Metadata}, {"random-input-len", s.RandomInputLen}, {"random-output-len", s.RandomOutputLen},
		{"random-range-ratio", s.RandomRangeRatio}, {"sharegpt-output-len", s.ShareGPTOutputLen}})
}

// datasetGiven names the dataset options set (they need --dataset-name).
func (s VLLMSet) datasetGiven() []string {
	return setNames([]flagSet{{"dataset-path", s.DatasetPath}, {"dataset-timestamps", s.DatasetTimestamps},
		{"random-input-len", s.RandomInputLen}, {"random-output-len", s.RandomOutputLen}, {"random-range-ratio", s.RandomRangeRatio},
		{"sharegpt-output-len", s.ShareGPTOutputLen}})
}

type flagSet struct {
	name string
	set  bool
}

func setNames(fs []flagSet) []string {
	var names []string
	for _, f := range fs {
		if f.set {
			names = append(names, f.name)
		}
	}
	return names
}

// Run loads the server: a.OpenAI's with the OpenAI mode, else the one URL of a.URLs.
func Run(ctx context.Context, a Args, io *run.IO) error {
	if len(a.URLs) > 1 {
		return run.UsageErrorf("one URL at most, got %d arguments: %s", len(a.URLs), strings.Join(a.URLs, " "))
	}
	if a.OpenAI != "" {
		if len(a.URLs) > 0 {
			return run.UsageErrorf("give the server either as URL or as --openai URL, not both")
		}
		return runOpenAI(ctx, a, io)
	}
	if len(a.URLs) != 1 {
		return run.UsageErrorf("URL: required (or --openai URL)")
	}
	return runKServe(ctx, a, io, a.URLs[0])
}

// runKServe is the KServe (plan) mode: open-loop load at the simulator's arrivals against a
// plan serve (or any KServe v2 server of a plan's models, with Plan), reported as plan
// simulate reports a load point.
func runKServe(ctx context.Context, a Args, io *run.IO, target string) error {
	base, err := CheckTarget(io.Err, "URL", target)
	if err != nil {
		return err
	}
	header, err := requestHeaders(a.Headers, a.APIKey, false)
	if err != nil {
		return err
	}
	if !(a.MaxFailureRate >= 0 && a.MaxFailureRate <= 1) {
		return run.UsageErrorf("--max-failure-rate: %g: must be in [0, 1]", a.MaxFailureRate)
	}
	if a.RequestRateSet {
		if a.RateSet || math.IsInf(a.RequestRate, 1) {
			return run.UsageErrorf("--request-rate: %g: give --rate or --request-rate, a finite rate (inf is for --openai)", a.RequestRate)
		}
		a.Rate = a.RequestRate
	}
	if given := a.VLLMSet.given(); len(given) > 0 {
		return run.UsageErrorf("--%s: an --openai flag (a plan serve's KServe API takes --rate, --max-requests, --trace)", given[0])
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"rate", a.Rate}, {"load", a.Load}, {"rate-scale", a.RateScale}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return run.UsageErrorf("--%s: %g: must be a finite number > 0", f.name, f.v)
		}
	}
	if a.SLO < 0 {
		return run.UsageErrorf("--slo: %s: must be > 0", a.SLO)
	}
	if a.Timeout < 0 {
		return run.UsageErrorf("--timeout: %s: must be > 0", a.Timeout)
	}
	if a.Rate > 0 && a.Load > 0 {
		return run.UsageErrorf("--rate and --load are exclusive")
	}
	if a.RateScale > 0 && (a.Rate > 0 || a.Load > 0) {
		return run.UsageErrorf("--rate-scale: exclusive with --load and --rate (it sets the rates itself)")
	}
	if a.Rate == 0 && a.Load == 0 && a.RateScale == 0 {
		a.Load = 1
	}
	if a.Duration <= 0 {
		return run.UsageErrorf("--duration: %s: must be > 0", a.Duration)
	}
	if a.MaxRequests < 0 {
		return run.UsageErrorf("--max-requests: %d: must be >= 0", a.MaxRequests)
	}
	if a.Connections < 1 {
		return run.UsageErrorf("--connections: %d: must be >= 1", a.Connections)
	}
	spec, err := sim.ParseTraceFlag(a.Trace)
	if err != nil {
		return run.UsageError(err)
	}
	warmup := time.Duration(-1) // the default rule, over the served plan's SLOs
	if a.WarmupSet {
		if a.Warmup < 0 || a.Warmup >= a.Duration {
			return run.UsageErrorf("--warmup: %s: must be >= 0 and shorter than --duration %s", a.Warmup, a.Duration)
		}
		warmup = a.Warmup
	}
	if span, total, ok := spec.Extent(); ok && a.DurationSet && a.Duration < time.Duration(span)*time.Microsecond {
		// a trace replayed over part of its span: say what is left out (at the recorded rate)
		cut := float64(total) - spec.RecordedBefore(dataplane.Time(a.Duration/time.Microsecond))
		fmt.Fprintf(io.Err, "load: --duration %s cuts the trace %s (%s recorded): its last %s and %.0f of its %d requests (at the recorded rate) are not sent; leave --duration unset to send it whole\n",
			a.Duration, spec.Name, time.Duration(span)*time.Microsecond, time.Duration(span)*time.Microsecond-a.Duration, cut, total)
	}
	if a.RateScale > 0 && spec.Trace == nil {
		return run.UsageErrorf("--rate-scale: needs a Trace file (--trace FILE): %q has no recorded rate", spec.Name)
	}
	var plan *formats.Plan
	if a.Plan != "" {
		if plan, err = formats.ReadInto[*formats.Plan](a.Plan, a.Systems.Sections()); err != nil {
			return run.UsageErrorf("--plan: %v", err)
		}
	}
	opts := loadgen.Options{Warmup: warmup, RateScale: a.RateScale, Deploy: a.Systems.Deploy, Sections: a.Systems.Sections(), Plan: plan,
		URL: base, Model: a.Model, Load: a.Load, Rate: a.Rate, Duration: a.Duration,
		MaxRequests: a.MaxRequests, Arrival: spec, Seed: a.Seed, SLO: a.SLO, Timeout: a.Timeout,
		MaxConns: a.Connections, DurationSet: a.DurationSet, Header: header,
	}
	if a.GRPC != "" {
		if host, port, err := net.SplitHostPort(a.GRPC); err != nil || host == "" || port == "" {
			return run.UsageErrorf("--grpc: %q: must be HOST:PORT", a.GRPC)
		}
		if _, err := CheckTarget(io.Err, "--grpc", "http://"+a.GRPC); err != nil {
			return run.UsageErrorf("--grpc: %q: must be HOST:PORT", a.GRPC)
		}
		conn, err := kservegrpc.Dial(a.GRPC)
		if err != nil {
			return run.UsageErrorf("--grpc %s: %v", a.GRPC, err)
		}
		defer conn.Close()
		opts.Send = kservegrpc.Sender(conn, a.GRPCRaw, false)
	}
	var res *loadgen.Result
	if err := withProgress(io, "answered", func(progress func(sent, n int64)) (err error) {
		opts.Progress = progress
		res, err = loadgen.Run(ctx, opts)
		return err
	}); err != nil {
		return err
	}
	if res.Lag > 10*time.Millisecond {
		io.Logger().Warn("the load generator fell behind its schedule (arrivals were sent late)", "max_lag", res.Lag.Round(time.Millisecond))
	}
	if io.JSONOutput() {
		// The simulator's report, so tools that read `plan simulate -O json` read this too,
		// plus who decided the fate of each request.
		if err := io.WriteJSON(struct {
			*sim.Report
			Outcomes loadgen.Outcomes `json:"outcomes"`
		}{res.Report, res.Outcomes}); err != nil {
			return err
		}
	} else {
		printLoadReport(io, res)
	}
	return kserveFailures(res, a.MaxFailureRate)
}

// kserveFailures is exit 1 when more than max of the counted requests failed: transport
// errors and statuses other than 200 and 503 (drops and cancelled requests are the server's
// decisions, which the report counts).
func kserveFailures(res *loadgen.Result, max float64) error {
	oc := res.Outcomes
	var statuses int64
	for _, n := range oc.ServerErrors {
		statuses += n
	}
	total := res.Report.Points[0].Total.Requests
	failed := oc.ClientErrors + statuses
	if total == 0 || float64(failed)/float64(total) <= max {
		return nil
	}
	return run.CheckFailed(fmt.Errorf("load: %d of %d requests failed (%.1f%%, over --max-failure-rate %g): %d client errors (connection failed), %d answered with an HTTP error status",
		failed, total, 100*float64(failed)/float64(total), max, oc.ClientErrors, statuses))
}

// printLoadReport renders one real run: attainment and latency as 'plan simulate' reports a
// load point, then who decided the fate of the requests that were not on time — the server
// (drops by stage and reason, late answers, other statuses) or the client (timeouts, failed
// connections).
func printLoadReport(io *run.IO, res *loadgen.Result) {
	rep := res.Report
	p := rep.Points[0]
	t := p.Total
	header := []string{"load", "offered/s", "requests", "attainment", "goodput/s", "p50 ms", "p99 ms", "max ms"}
	row := []string{
		fmt.Sprintf("%.2f", p.Load), fmt.Sprintf("%.1f", t.OfferedRPS), fmt.Sprint(t.Requests), run.Pct(t.Attainment),
		fmt.Sprintf("%.1f", t.GoodputRPS), fmt.Sprintf("%.1f", float64(t.Latency.P50Us)/1000),
		fmt.Sprintf("%.1f", float64(t.Latency.P99Us)/1000), fmt.Sprintf("%.1f", float64(t.Latency.MaxUs)/1000),
	}
	if sp := t.SLOPercentile; sp != nil { // the SLO's own percentile (a cascade's p95)
		header, row = append(header, fmt.Sprintf("p%g ms", 100*sp.Percentile)), append(row, run.PercentileMs(sp))
	}
	// Each application's (class's) attainment beside the total, as plan simulate shows it.
	for _, name := range run.AppNames(rep) {
		v := "-"
		for _, a := range p.Apps {
			if a.Name == name && a.Requests > 0 {
				v = run.Pct(a.Attainment)
			}
		}
		header, row = append(header, "att "+name), append(row, v)
	}
	io.Table(header, [][]string{row})
	if line := run.AccuracyLine(rep); line != "" {
		fmt.Fprintln(io.Out, line)
	}
	if rep.WarmupUs > 0 {
		fmt.Fprintf(io.Out, "\nrequests arriving in the first %s (warm-up) were sent but not counted\n", time.Duration(rep.WarmupUs)*time.Microsecond)
	}
	run.PrintLLMTable(io, rep.Points)
	oc := res.Outcomes
	var drops int64
	for _, d := range oc.ServerDrops {
		drops += d.Count
	}
	var errs int64
	for _, n := range oc.ServerErrors {
		errs += n
	}
	fmt.Fprintln(io.Out)
	rows := [][]string{
		{"on time (200 within the SLO)", fmt.Sprint(oc.Completed)},
		{"late answers (200 after the SLO)", fmt.Sprint(oc.Late)},
		{"  of which late by the server's clock", fmt.Sprint(oc.ServerLate)},
		{"server drops (503)", fmt.Sprint(drops)},
	}
	for _, d := range oc.ServerDrops {
		rows = append(rows, []string{fmt.Sprintf("  %s at %s", d.Reason, d.Stage), fmt.Sprint(d.Count)})
	}
	if errs > 0 {
		rows = append(rows, []string{"server errors (other statuses)", fmt.Sprint(errs)})
		codes := make([]int, 0, len(oc.ServerErrors))
		for c := range oc.ServerErrors {
			codes = append(codes, c)
		}
		sort.Ints(codes)
		for _, c := range codes {
			rows = append(rows, []string{fmt.Sprintf("  HTTP %d", c), fmt.Sprint(oc.ServerErrors[c])})
		}
	}
	rows = append(rows, []string{"cancelled (no answer within --timeout: given up, withdrawn by the server)", fmt.Sprint(oc.Cancelled)},
		[]string{"client errors (connection failed)", fmt.Sprint(oc.ClientErrors)})
	io.Table([]string{"requests", "count"}, rows)
	if oc.ServerP99 > 0 {
		fmt.Fprintf(io.Out, "\nserver-reported latency of 200 answers: p99 %.1f ms; the client's wait for a free connection: p99 %.1f ms\n",
			float64(oc.ServerP99)/float64(time.Millisecond), float64(oc.WaitP99)/float64(time.Millisecond))
	}
}

// loadProgress is `plan load`'s progress line, rewritten in place with \r, or nil when it
// must not be drawn: only on a terminal (in a CI log or a file it would be one endless
// line). done names the second count (answered, finished); progressed records that a line
// was drawn, so the caller ends it.
// withProgress runs a load, f, with `plan load`'s progress line counting done ("answered"),
// which it ends once the load is over; a failure to set the load up is a usage error.
func withProgress(io *run.IO, done string, f func(progress func(sent, n int64)) error) error {
	var progressed atomic.Bool
	err := f(loadProgress(io, done, &progressed))
	if progressed.Load() {
		fmt.Fprintln(io.Err)
	}
	if errors.Is(err, loadgen.ErrSetup) {
		return run.UsageError(err)
	}
	return err
}

func loadProgress(io *run.IO, done string, progressed *atomic.Bool) func(sent, n int64) {
	if io.Quiet || !run.IsTerminal(io.Err) || !run.IsTerminal(io.Out) {
		return nil
	}
	start := time.Now()
	return func(sent, n int64) {
		progressed.Store(true)
		fmt.Fprintf(io.Err, "\rload: %d sent, %d %s, %s", sent, n, done, time.Since(start).Round(time.Second))
	}
}
