package cli

import (
	"errors"
	"fmt"
	"math"
	"net"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/serve/kservegrpc"
	"github.com/plan-dev/plan/serve/load"
	"github.com/plan-dev/plan/sim"
)

type loadOptions struct {
	rate        float64
	requestRate float64 // --request-rate: --rate, or inf
	load        float64
	model       string
	duration    time.Duration
	maxRequests int
	trace       string
	seed        uint64
	slo         time.Duration
	timeout     time.Duration
	connections int
	// grpc sends the requests over KServe v2 gRPC to this address (serve --grpc-addr).
	grpc      string
	grpcRaw   bool
	warmup    time.Duration
	rateScale float64
	// openai benchmarks an OpenAI-compatible server instead (load_openai.go).
	openai openAIFlags
	// headers and apiKey go with every HTTP request (load_target.go).
	headers []string
	apiKey  string
	// maxFailureRate: a larger share of failed requests exits 1.
	maxFailureRate float64
	// plan is the served plan's file, for a server that does not answer GET /v1/plan.
	plan string
}

func newLoadCmd(app *App) *cobra.Command {
	o := &loadOptions{}
	cmd := &cobra.Command{
		Use:   "load {URL | --openai URL}",
		Short: "Send open-loop load to a running 'plan serve' and report SLO attainment",
		Long: `load sends requests to a 'plan serve' at their scheduled arrival times whether or not
earlier ones were answered (open loop), waits for every answer, and reports attainment,
goodput, drops and latency percentiles in the same format as 'plan simulate'. The models,
their planned rates and SLOs come from the server's GET /v1/plan; --plan FILE gives them
instead, so any KServe v2 server of the plan's models (Triton, KServe, the plan's own
export) can be loaded: only GET /v2/models/NAME and its infer endpoint are used.

Arrivals are the simulator's: with --load L and --seed S the trace is exactly the one
'plan simulate --load L --seed S' replays, so the two reports can be compared line by line.
As in 'plan simulate', requests arriving in the first --warmup are sent but not counted.
--rate R sets one model's rate in requests/s instead. A request counts as on time when the
client saw its 200 within the model's SLO.

With --openai URL, load benchmarks any OpenAI-compatible server (plan serve on a QLM plan,
vLLM, SGLang) as vLLM's benchmark_serving does: streaming completions (--chat: chat
completions) sent open loop at --rate (--trace poisson, bursty, mmpp) or at a Trace file's
own times with its per-request input_tokens and output_tokens and targets (the model field),
or closed loop with --concurrency N. max_tokens is the request's output tokens (ignore_eos
asks the engine to generate them all); the prompt is N common English words, one token each
in Llama/Mistral/GPT vocabularies, drawn per request from --seed. It reports TTFT, TPOT, ITL
and E2E (mean, p50, p90, p99, max), request and token throughput, and failures by reason and
HTTP status; a request not finished within --timeout is abandoned (the server aborts it).

Loopback servers are the usual target; any http or https URL is accepted, and one that
is not on this machine gets a line on stderr saying the traffic leaves it. --header
'Name: value' (repeatable) and --api-key (with --openai also $OPENAI_API_KEY) are sent with
every request, the key as Authorization: Bearer and never printed. Redirects are never
followed.

The run exits 1, after its report, when more than --max-failure-rate of the counted requests
failed (default 0.05): with --openai every request that did not stream to its end; otherwise
transport failures and HTTP statuses other than 200 and 503 (a 503 is the server's own
admission decision, reported as a drop, and a timed-out request is reported as cancelled).

With --openai, the options of 'vllm bench serve' work as there (their names are aliases
where plan's differ: --request-rate for --rate, --num-prompts for --max-requests, --base-url
for --openai). --dataset-name sharegpt|burstgpt|mooncake|azure|random with --dataset-path
picks --num-prompts requests (default 1000, seeded by --seed): ShareGPT JSON (the prompt is
the first turn's text, the output length the second turn's; vLLM's length filter), BurstGPT
CSV (Request tokens, Response tokens; GPT-4 rows, as vLLM), Mooncake JSONL (input_length,
output_length; equal hash_ids become identical 512-token prompt blocks), Azure LLM CSV
(ContextTokens, GeneratedTokens), random (--random-input-len, --random-output-len,
--random-range-ratio). There is no tokenizer: a text's tokens are estimated as its
characters / 4 (ShareGPT), other lengths are the file's. Requests go at --request-rate
(default inf: all at once) with gamma inter-arrival times of shape --burstiness (1 =
Poisson), rescaled as vLLM does so the last arrives at N/rate; --dataset-timestamps replays
a trace's recorded times instead (--rate-scale speeds them up). --max-concurrency bounds the
requests in flight. --warmup leaves the first part of the run out of the report in every
mode and --num-warmups sends requests before it. --goodput ttft:200 tpot:50 e2el:1000 (ms)
counts the requests meeting every objective; --percentile-metrics and --metric-percentiles
(numpy's linear interpolation, as vLLM) choose what is reported; --save-result writes the
JSON 'vllm bench serve' writes (its field names; --result-dir, --result-filename, --label,
--metadata K=V), --save-detailed adds the per-request records.`,
		Example: `  plan load http://127.0.0.1:8080 --load 0.9 --duration 10s
  plan load http://127.0.0.1:8080 --rate 500 --duration 30s --trace bursty --seed 7
  plan load http://127.0.0.1:8080 --rate 2000 --max-requests 10000 -O json
  plan load http://127.0.0.1:8000 --plan plan.json --load 0.5 --duration 30s
  plan load --openai http://127.0.0.1:8000 --model mistral-chat --rate 4 --input-tokens 512 --output-tokens 128 --max-requests 200
  plan load --openai http://127.0.0.1:8000 --trace azure-conv.json -O json
  plan load --openai http://127.0.0.1:8000 --model llama --chat --concurrency 16 --max-requests 500`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// --goodput ttft:200 tpot:50 (vllm bench's spelling) leaves its later pairs as
			// arguments: take them back.
			args, err := o.openai.takeGoodputArgs(cmd, args)
			if err != nil {
				return err
			}
			if len(args) > 1 {
				return run.UsageErrorf("one URL at most, got %d arguments: %s", len(args), strings.Join(args, " "))
			}
			if o.openai.url != "" {
				if len(args) > 0 {
					return run.UsageErrorf("give the server either as URL or as --openai URL, not both")
				}
				return runLoadOpenAI(cmd, app, o)
			}
			if len(args) != 1 {
				return run.UsageErrorf("URL: required (or --openai URL)")
			}
			return runLoad(cmd, app, o, args[0])
		},
	}
	f := cmd.Flags()
	f.Float64Var(&o.rate, "rate", 0, "requests/s to one model (see --model); exclusive with --load")
	f.Float64Var(&o.load, "load", 0, "load factor: every model at this multiple of its planned rate, a trace rescaled to it (default 1.0 without --rate)")
	f.Float64Var(&o.rateScale, "rate-scale", 0, "with a Trace file: replay it at this multiple of its recorded rate (1.0 = as recorded); exclusive with --load and --rate")
	f.StringVar(&o.model, "model", "", "model to load (default: every model of the served plan)")
	f.StringVar(&o.plan, "plan", "", "the served plan's file, for a KServe v2 server that does not answer GET /v1/plan (Triton, KServe): its models, rates and SLOs set the run")
	f.DurationVar(&o.duration, "duration", 10*time.Second, "arrival window (default 10s; a Trace file: its whole span; with --max-requests: until that many were sent)")
	f.IntVar(&o.maxRequests, "max-requests", 0, "stop arrivals after this many requests (0 = no limit); without --duration it alone bounds the run")
	f.StringVar(&o.trace, "trace", "poisson", "arrival process: poisson, bursty[:CV], mmpp, or a trace file (a Trace document or an Azure LLM trace CSV); on an LLM plan a per-request trace replays exactly, as plan simulate's: each request once, with its class and tokens, the whole trace unless --duration")
	f.Uint64Var(&o.seed, "seed", 1, "random seed of the arrival process")
	f.DurationVar(&o.slo, "slo", 0, "latency objective for attainment (default: each model's, from the server)")
	f.DurationVar(&o.timeout, "timeout", 0, "per-request timeout (default 10 × SLO + 5s; with --openai 10m); a timed-out request is given up and counts as cancelled (the server withdraws it)")
	f.StringVar(&o.grpc, "grpc", "", "send the infer requests over KServe v2 gRPC to this HOST:PORT (plan serve --grpc-addr); plan and metadata still come from URL")
	f.BoolVar(&o.grpcRaw, "grpc-raw", false, "with --grpc: send tensors in raw_input_contents instead of typed contents")
	f.DurationVar(&o.warmup, "warmup", 0, "requests arriving in this first part of the run are sent but not counted (default: as plan simulate, 5 × the largest SLO, at least 2s, at most 20% of --duration; 0s counts every request)")
	f.IntVar(&o.connections, "connections", 2048, "most connections open at once; further requests wait for one (the wait counts in their latency)")
	f.StringArrayVar(&o.headers, "header", nil, "send this header with every request, as 'Name: value' (repeatable)")
	f.StringVar(&o.apiKey, "api-key", "", "send Authorization: Bearer KEY with every request (with --openai, default $OPENAI_API_KEY); never printed")
	f.Float64Var(&o.maxFailureRate, "max-failure-rate", 0.05, "exit 1 (after the report) when more than this share of the counted requests failed (0-1; 1 never fails)")
	o.openai.flags(f)
	f.Var((*requestRate)(&o.requestRate), "request-rate", "with --openai: vllm bench serve's name of --rate (requests/s; inf sends every request at once, the default with --dataset-name)")
	f.IntVar(&o.maxRequests, "num-prompts", 0, "vllm bench serve's name of --max-requests (with --dataset-name default 1000)")
	return cmd
}

func runLoad(cmd *cobra.Command, app *App, o *loadOptions, target string) error {
	base, err := checkTarget(app.Err, "URL", target)
	if err != nil {
		return err
	}
	header, err := requestHeaders(o.headers, o.apiKey, false)
	if err != nil {
		return err
	}
	if !(o.maxFailureRate >= 0 && o.maxFailureRate <= 1) {
		return run.UsageErrorf("--max-failure-rate: %g: must be in [0, 1]", o.maxFailureRate)
	}
	if cmd.Flags().Changed("request-rate") {
		if cmd.Flags().Changed("rate") || math.IsInf(o.requestRate, 1) {
			return run.UsageErrorf("--request-rate: %g: give --rate or --request-rate, a finite rate (inf is for --openai)", o.requestRate)
		}
		o.rate = o.requestRate
	}
	for _, name := range kserveRefused {
		if cmd.Flags().Changed(name) {
			return run.UsageErrorf("--%s: an --openai flag (a plan serve's KServe API takes --rate, --max-requests, --trace)", name)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"rate", o.rate}, {"load", o.load}, {"rate-scale", o.rateScale}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return run.UsageErrorf("--%s: %g: must be a finite number > 0", f.name, f.v)
		}
	}
	if o.slo < 0 {
		return run.UsageErrorf("--slo: %s: must be > 0", o.slo)
	}
	if o.timeout < 0 {
		return run.UsageErrorf("--timeout: %s: must be > 0", o.timeout)
	}
	if o.rate > 0 && o.load > 0 {
		return run.UsageErrorf("--rate and --load are exclusive")
	}
	if o.rateScale > 0 && (o.rate > 0 || o.load > 0) {
		return run.UsageErrorf("--rate-scale: exclusive with --load and --rate (it sets the rates itself)")
	}
	if o.rate == 0 && o.load == 0 && o.rateScale == 0 {
		o.load = 1
	}
	if o.duration <= 0 {
		return run.UsageErrorf("--duration: %s: must be > 0", o.duration)
	}
	if o.maxRequests < 0 {
		return run.UsageErrorf("--max-requests: %d: must be >= 0", o.maxRequests)
	}
	if o.connections < 1 {
		return run.UsageErrorf("--connections: %d: must be >= 1", o.connections)
	}
	spec, err := sim.ParseTraceFlag(o.trace)
	if err != nil {
		return run.UsageError(err)
	}
	warmup := time.Duration(-1) // the default rule, over the served plan's SLOs
	if cmd.Flags().Changed("warmup") {
		if o.warmup < 0 || o.warmup >= o.duration {
			return run.UsageErrorf("--warmup: %s: must be >= 0 and shorter than --duration %s", o.warmup, o.duration)
		}
		warmup = o.warmup
	}
	if span, total, ok := spec.Extent(); ok && cmd.Flags().Changed("duration") && o.duration < time.Duration(span)*time.Microsecond {
		// a trace replayed over part of its span: say what is left out (at the recorded rate)
		cut := float64(total) - spec.RecordedBefore(dataplane.Time(o.duration/time.Microsecond))
		fmt.Fprintf(app.Err, "load: --duration %s cuts the trace %s (%s recorded): its last %s and %.0f of its %d requests (at the recorded rate) are not sent; leave --duration unset to send it whole\n",
			o.duration, spec.Name, time.Duration(span)*time.Microsecond, time.Duration(span)*time.Microsecond-o.duration, cut, total)
	}
	if o.rateScale > 0 && spec.Trace == nil {
		return run.UsageErrorf("--rate-scale: needs a Trace file (--trace FILE): %q has no recorded rate", spec.Name)
	}
	var plan *formats.Plan
	if o.plan != "" {
		if plan, err = formats.ReadIntoWith[*formats.Plan](o.plan, app.Systems.Sections()); err != nil {
			return run.UsageErrorf("--plan: %v", err)
		}
	}
	opts := load.Options{Warmup: warmup, RateScale: o.rateScale, Deploy: app.Systems.Deploy, Sections: app.Systems.Sections(), Plan: plan,
		URL: base, Model: o.model, Load: o.load, Rate: o.rate, Duration: o.duration,
		MaxRequests: o.maxRequests, Arrival: spec, Seed: o.seed, SLO: o.slo, Timeout: o.timeout,
		MaxConns: o.connections, DurationSet: cmd.Flags().Changed("duration"), Header: header,
	}
	if o.grpc != "" {
		if host, port, err := net.SplitHostPort(o.grpc); err != nil || host == "" || port == "" {
			return run.UsageErrorf("--grpc: %q: must be HOST:PORT", o.grpc)
		}
		if _, err := checkTarget(app.Err, "--grpc", "http://"+o.grpc); err != nil {
			return run.UsageErrorf("--grpc: %q: must be HOST:PORT", o.grpc)
		}
		conn, err := kservegrpc.Dial(o.grpc)
		if err != nil {
			return run.UsageErrorf("--grpc %s: %v", o.grpc, err)
		}
		defer conn.Close()
		opts.Send = kservegrpc.Sender(conn, o.grpcRaw, false)
	}
	var progressed atomic.Bool
	opts.Progress = loadProgress(app, "answered", &progressed)
	res, err := load.Run(cmd.Context(), opts)
	if progressed.Load() {
		fmt.Fprintln(app.Err)
	}
	if errors.Is(err, load.ErrSetup) {
		return run.UsageError(err)
	}
	if err != nil {
		return err
	}
	if res.Lag > 10*time.Millisecond {
		app.Log.Warn("the load generator fell behind its schedule (arrivals were sent late)", "max_lag", res.Lag.Round(time.Millisecond))
	}
	if app.JSONOutput() {
		// The simulator's report, so tools that read `plan simulate -O json` read this too,
		// plus who decided the fate of each request.
		if err := app.WriteJSON(struct {
			*sim.Report
			Outcomes load.Outcomes `json:"outcomes"`
		}{res.Report, res.Outcomes}); err != nil {
			return err
		}
	} else {
		printLoadReport(app, res)
	}
	return kserveFailures(res, o.maxFailureRate)
}

// kserveFailures is exit 1 when more than max of the counted requests failed: transport
// errors and statuses other than 200 and 503 (drops and cancelled requests are the server's
// decisions, which the report counts).
func kserveFailures(res *load.Result, max float64) error {
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
func printLoadReport(app *App, res *load.Result) {
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
	app.Table(header, [][]string{row})
	if line := run.AccuracyLine(rep); line != "" {
		fmt.Fprintln(app.Out, line)
	}
	if rep.WarmupUs > 0 {
		fmt.Fprintf(app.Out, "\nrequests arriving in the first %s (warm-up) were sent but not counted\n", time.Duration(rep.WarmupUs)*time.Microsecond)
	}
	run.PrintLLMTable(&app.IO, rep.Points)
	oc := res.Outcomes
	var drops int64
	for _, d := range oc.ServerDrops {
		drops += d.Count
	}
	var errs int64
	for _, n := range oc.ServerErrors {
		errs += n
	}
	fmt.Fprintln(app.Out)
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
	app.Table([]string{"requests", "count"}, rows)
	if oc.ServerP99 > 0 {
		fmt.Fprintf(app.Out, "\nserver-reported latency of 200 answers: p99 %.1f ms; the client's wait for a free connection: p99 %.1f ms\n",
			float64(oc.ServerP99)/float64(time.Millisecond), float64(oc.WaitP99)/float64(time.Millisecond))
	}
}

// loadProgress is `plan load`'s progress line, rewritten in place with \r, or nil when it
// must not be drawn: only on a terminal (in a CI log or a file it would be one endless
// line). done names the second count (answered, finished); progressed records that a line
// was drawn, so the caller ends it.
func loadProgress(app *App, done string, progressed *atomic.Bool) func(sent, n int64) {
	if app.Quiet || !run.IsTerminal(app.Err) || !run.IsTerminal(app.Out) {
		return nil
	}
	start := time.Now()
	return func(sent, n int64) {
		progressed.Store(true)
		fmt.Fprintf(app.Err, "\rload: %d sent, %d %s, %s", sent, n, done, time.Since(start).Round(time.Second))
	}
}
