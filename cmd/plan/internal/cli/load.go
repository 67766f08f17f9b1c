package cli

import (
	"time"

	"github.com/spf13/cobra"

	runload "github.com/plan-dev/plan/internal/run/load"
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
			ch := cmd.Flags().Changed
			goodput := o.openai.goodput
			if ch("goodput") {
				// --goodput ttft:200 tpot:50 (vllm bench's spelling) leaves its later pairs as
				// arguments: take them back.
				goodput, args = runload.TakeGoodputArgs(goodput, args)
			}
			oa := &o.openai
			return runload.Run(cmd.Context(), runload.Args{URLs: args, OpenAI: oa.url, BaseURLSet: ch("base-url"),
				Rate: o.rate, RateSet: ch("rate"), RequestRate: o.requestRate, RequestRateSet: ch("request-rate"),
				Load: o.load, LoadSet: ch("load"), RateScale: o.rateScale, Model: o.model, Plan: o.plan,
				Duration: o.duration, DurationSet: ch("duration"), MaxRequests: o.maxRequests, Trace: o.trace, TraceSet: ch("trace"),
				Seed: o.seed, SLO: o.slo, SLOSet: ch("slo"), Timeout: o.timeout, GRPC: o.grpc, GRPCSet: ch("grpc"),
				GRPCRaw: o.grpcRaw, GRPCRawSet: ch("grpc-raw"), Warmup: o.warmup, WarmupSet: ch("warmup"),
				Connections: o.connections, Headers: o.headers, APIKey: o.apiKey, MaxFailureRate: o.maxFailureRate,
				Systems: app.Systems, Chat: oa.chat, Concurrency: oa.concurrency, InputTokens: oa.inputTokens,
				OutputTokens: oa.outputTokens, Strict: oa.strict, DatasetName: oa.datasetName, DatasetPath: oa.datasetPath,
				RandomInputLen: oa.randomIn, RandomOutputLen: oa.randomOut, RandomRangeRatio: oa.randomRatio,
				ShareGPTOutputLen: oa.sharegptOutputLen, DatasetTimestamps: oa.timestamps, Burstiness: oa.burstiness,
				MaxConcurrency: oa.maxConcurrency, NumWarmups: oa.numWarmups, Goodput: goodput,
				PercentileMetrics: oa.percentileMetrics, MetricPercentiles: oa.metricPercentiles, SaveResult: oa.saveResult,
				SaveDetailed: oa.saveDetailed, ResultDir: oa.resultDir, ResultFilename: oa.resultFile, Label: oa.label,
				Metadata: oa.metadata, VLLMSet: runload.VLLMSet{DatasetName: ch("dataset-name"), DatasetPath: ch("dataset-path"),
					DatasetTimestamps: ch("dataset-timestamps"), Burstiness: ch("burstiness"), MaxConcurrency: ch("max-concurrency"),
					NumWarmups: ch("num-warmups"), Goodput: ch("goodput"), PercentileMetrics: ch("percentile-metrics"),
					MetricPercentiles: ch("metric-percentiles"), SaveResult: ch("save-result"), SaveDetailed: ch("save-detailed"),
					ResultDir: ch("result-dir"), ResultFilename: ch("result-filename"), Label: ch("label"), Metadata: ch("metadata"),
					RandomInputLen: ch("random-input-len"), RandomOutputLen: ch("random-output-len"),
					RandomRangeRatio: ch("random-range-ratio"), ShareGPTOutputLen: ch("sharegpt-output-len")}}, &app.IO)
		},
	}
	f := cmd.Flags()
	f.Float64Var(&o.rate, "rate", 0, "requests/s to one model (see --model); exclusive with --load")
	f.Float64Var(&o.load, "load", 0, "load factor: every model at this multiple of its planned rate, a trace rescaled to it (default 1.0 without --rate)")
	f.Float64Var(&o.rateScale, "rate-scale", 0, "with a Trace file: replay it at this multiple of its recorded rate (1.0 = as recorded); exclusive with --load and --rate")
	f.StringVar(&o.model, "model", "", "model to load (default: every model of the served plan)")
	f.StringVar(&o.plan, "plan", "", "the served plan's file, for a KServe v2 server that does not answer GET /v1/plan (Triton, KServe): its models, rates and SLOs set the run")
	f.DurationVar(&o.duration, "duration", 10*time.Second, "arrival window (a Trace file: its whole span; with --max-requests: until that many were sent)")
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
	f.Var((*runload.RequestRate)(&o.requestRate), "request-rate", "with --openai: vllm bench serve's name of --rate (requests/s; inf sends every request at once, the default with --dataset-name)")
	f.IntVar(&o.maxRequests, "num-prompts", 0, "vllm bench serve's name of --max-requests (with --dataset-name default 1000)")
	return cmd
}
