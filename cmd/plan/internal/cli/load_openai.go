package cli

import "github.com/spf13/pflag"

// openAIFlags are `plan load --openai`'s own flags; the arrival flags (--rate, --trace,
// --duration, --max-requests, --seed, --timeout, --model, --connections) are load's. The
// second group are `vllm bench serve`'s options under their names (ecosystem-dropin spec §3).
type openAIFlags struct {
	url          string
	chat         bool
	concurrency  int
	inputTokens  int
	outputTokens int
	strict       bool

	datasetName, datasetPath string
	randomIn, randomOut      int
	randomRatio              float64
	sharegptOutputLen        int
	timestamps               bool
	burstiness               float64
	maxConcurrency           int
	numWarmups               int
	goodput                  []string
	percentileMetrics        string
	metricPercentiles        string
	saveResult, saveDetailed bool
	resultDir, resultFile    string
	label                    string
	metadata                 []string
}

func (f *openAIFlags) flags(fs *pflag.FlagSet) {
	fs.StringVar(&f.url, "openai", "", "benchmark this OpenAI-compatible server (base URL) with streaming completions instead of a plan serve's KServe API")
	fs.StringVar(&f.url, "base-url", "", "vllm bench serve's name of --openai")
	fs.BoolVar(&f.chat, "chat", false, "with --openai: POST /v1/chat/completions (default /v1/completions)")
	fs.IntVar(&f.concurrency, "concurrency", 0, "with --openai: closed loop with this many clients, each sending its next request when its last ends (default: open loop at --rate or the trace's times)")
	fs.IntVar(&f.inputTokens, "input-tokens", 128, "with --openai: prompt tokens of requests whose trace entry gives none")
	fs.IntVar(&f.outputTokens, "output-tokens", 128, "with --openai: max_tokens of requests whose trace entry gives none")
	fs.BoolVar(&f.strict, "openai-strict", false, "with --openai: send only OpenAI API fields (no ignore_eos, no prompt_tokens), for servers that refuse unknown fields")

	fs.StringVar(&f.datasetName, "dataset-name", "", "with --openai: requests from a dataset: sharegpt, burstgpt, mooncake, azure (with --dataset-path) or random")
	fs.StringVar(&f.datasetPath, "dataset-path", "", "with --dataset-name: the dataset's file")
	fs.IntVar(&f.randomIn, "random-input-len", 1024, "--dataset-name random: mean prompt tokens")
	fs.IntVar(&f.randomOut, "random-output-len", 128, "--dataset-name random: mean output tokens")
	fs.Float64Var(&f.randomRatio, "random-range-ratio", 0, "--dataset-name random: lengths uniform in [len·(1-r), len·(1+r)], r in [0, 1)")
	fs.IntVar(&f.sharegptOutputLen, "sharegpt-output-len", 0, "--dataset-name sharegpt: every request's output tokens (default: the answer's estimated tokens)")
	fs.BoolVar(&f.timestamps, "dataset-timestamps", false, "replay the dataset's recorded arrival times (burstgpt, mooncake, azure) instead of --request-rate; --rate-scale speeds them up")
	fs.Float64Var(&f.burstiness, "burstiness", 1, "with --openai: shape of the gamma inter-arrival times at --request-rate (1 = Poisson, < 1 burstier), as vllm bench serve")
	fs.IntVar(&f.maxConcurrency, "max-concurrency", 0, "with --openai: at most this many requests in flight; arrivals wait for a free slot (0 = no bound)")
	fs.IntVar(&f.numWarmups, "num-warmups", 0, "with --openai: send this many requests before the run, never counted")
	fs.StringArrayVar(&f.goodput, "goodput", nil, "with --openai: objectives in ms, as ttft:200 tpot:50 e2el:1000; goodput counts the requests meeting all of them")
	listVar(fs, &f.percentileMetrics, "percentile-metrics", "ttft,tpot,itl,e2el", "with --openai: the metrics reported (and saved) with percentiles: ttft, tpot, itl, e2el")
	listVar(fs, &f.metricPercentiles, "metric-percentiles", "50,90,99", "with --openai: the percentiles reported (numpy's linear interpolation, as vllm bench serve)")
	fs.BoolVar(&f.saveResult, "save-result", false, "with --openai: write the result as vllm bench serve's JSON (to --result-dir/--result-filename)")
	fs.BoolVar(&f.saveDetailed, "save-detailed", false, "with --save-result: add the per-request records (input_lens, output_lens, ttfts, itls, generated_texts, errors, start_times, e2els)")
	fs.StringVar(&f.resultDir, "result-dir", "", "--save-result: the directory (default: the current one)")
	fs.StringVar(&f.resultFile, "result-filename", "", "--save-result: the file name (default vllm's {label or backend}-{rate}qps[-concurrencyN]-{model}-{date}.json)")
	fs.StringVar(&f.label, "label", "", "--save-result: the run's label (the file name's prefix)")
	fs.StringArrayVar(&f.metadata, "metadata", nil, "--save-result: KEY=VALUE recorded in the result's metadata (repeatable)")
}
