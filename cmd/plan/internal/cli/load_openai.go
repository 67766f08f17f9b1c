package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/serve/load"
	"github.com/plan-dev/plan/sim"
)

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

// kserveRefused are the --openai flags a KServe run refuses rather than ignores.
var kserveRefused = []string{"dataset-name", "dataset-path", "dataset-timestamps", "burstiness", "max-concurrency", "num-warmups",
	"goodput", "percentile-metrics", "metric-percentiles", "save-result", "save-detailed", "result-dir", "result-filename", "label", "metadata",
	"random-input-len", "random-output-len", "random-range-ratio", "sharegpt-output-len"}

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

// goodputPair is one --goodput objective as vllm bench spells it: metric:ms.
var goodputPair = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*:[^/]*$`)

// takeGoodputArgs moves the arguments after --goodput that are objectives (metric:ms, as in
// `--goodput ttft:200 tpot:50`) into the flag's values.
func (f *openAIFlags) takeGoodputArgs(cmd *cobra.Command, args []string) ([]string, error) {
	if !cmd.Flags().Changed("goodput") {
		return args, nil
	}
	var rest []string
	for _, a := range args {
		if goodputPair.MatchString(a) {
			f.goodput = append(f.goodput, a)
		} else {
			rest = append(rest, a)
		}
	}
	return rest, nil
}

// parseGoodput reads --goodput's objectives: metric:ms pairs, separated by spaces or commas.
func parseGoodput(vals []string) (map[string]float64, error) {
	slo := map[string]float64{}
	for _, v := range vals {
		for _, pair := range strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' }) {
			name, ms, ok := strings.Cut(pair, ":")
			name = strings.ToLower(strings.TrimSpace(name))
			if !ok {
				return nil, run.UsageErrorf("--goodput %q: want METRIC:MS (ttft:200)", pair)
			}
			known := false
			for _, m := range load.GoodputMetrics {
				known = known || m == name
			}
			if !known {
				return nil, run.UsageErrorf("--goodput %q: unknown metric %q (want %s)", pair, name, strings.Join(load.GoodputMetrics, ", "))
			}
			x, err := strconv.ParseFloat(strings.TrimSpace(ms), 64)
			if err != nil || !(x > 0) || math.IsInf(x, 0) {
				return nil, run.UsageErrorf("--goodput %q: %q: want a number of ms > 0", pair, ms)
			}
			slo[name] = x
		}
	}
	return slo, nil
}

// parsePercentiles reads --percentile-metrics and --metric-percentiles.
func parsePercentiles(metrics, pcts string) ([]string, []float64, error) {
	var ms []string
	for _, m := range strings.Split(metrics, ",") {
		m = strings.ToLower(strings.TrimSpace(m))
		if m == "" {
			continue
		}
		ok := false
		for _, k := range load.PercentileMetricNames {
			ok = ok || k == m
		}
		if !ok {
			return nil, nil, run.UsageErrorf("--percentile-metrics: %q: unknown metric (want %s)", m, strings.Join(load.PercentileMetricNames, ", "))
		}
		ms = append(ms, m)
	}
	if len(ms) == 0 {
		return nil, nil, run.UsageErrorf("--percentile-metrics: %q: name at least one of %s", metrics, strings.Join(load.PercentileMetricNames, ", "))
	}
	var ps []float64
	for _, p := range strings.Split(pcts, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		x, err := strconv.ParseFloat(p, 64)
		if err != nil || !(x >= 0 && x <= 100) {
			return nil, nil, run.UsageErrorf("--metric-percentiles: %q: want numbers in [0, 100]", p)
		}
		ps = append(ps, x)
	}
	if len(ps) == 0 {
		return nil, nil, run.UsageErrorf("--metric-percentiles: %q: name at least one percentile", pcts)
	}
	return ms, ps, nil
}

func runLoadOpenAI(cmd *cobra.Command, app *App, o *loadOptions) error {
	flag := "--openai"
	if cmd.Flags().Changed("base-url") {
		flag = "--base-url"
	}
	base, err := checkTarget(app.Err, flag, o.openai.url)
	if err != nil {
		return err
	}
	f := cmd.Flags()
	for _, name := range []string{"load", "slo", "grpc", "grpc-raw"} {
		if f.Changed(name) {
			return run.UsageErrorf("--%s: not an --openai flag (a plan serve's KServe API only)", name)
		}
	}
	if f.Changed("request-rate") {
		if f.Changed("rate") {
			return run.UsageErrorf("--rate and --request-rate: give one (they are the same)")
		}
		o.rate = o.requestRate
	}
	rateSet := f.Changed("rate") || f.Changed("request-rate")
	oa := &o.openai
	if err := checkOpenAIFlags(f, o, rateSet); err != nil {
		return err
	}
	header, err := requestHeaders(o.headers, o.apiKey, true)
	if err != nil {
		return err
	}
	slo, err := parseGoodput(oa.goodput)
	if err != nil {
		return err
	}
	metrics, pcts, err := parsePercentiles(oa.percentileMetrics, oa.metricPercentiles)
	if err != nil {
		return err
	}
	meta := map[string]string{}
	for _, kv := range oa.metadata {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return run.UsageErrorf("--metadata %q: want KEY=VALUE", kv)
		}
		meta[strings.TrimSpace(k)] = v
	}
	spec, err := sim.ParseTraceFlag(o.trace)
	if err != nil {
		return run.UsageError(err)
	}
	dataset, err := readDatasetFlags(cmd, o)
	if err != nil {
		return err
	}
	// vllm bench serve's way of scheduling: a dataset, a burstiness or an infinite rate.
	vllmMode := dataset != nil || f.Changed("burstiness") || math.IsInf(o.rate, 1)
	duration := o.duration
	if (spec.Kind == "replay" || vllmMode) && !f.Changed("duration") {
		duration = 0 // a replayed trace, or --num-prompts requests, are sent whole unless --duration cuts them
	}
	rate := o.rate
	if vllmMode && !rateSet && oa.concurrency == 0 {
		rate = math.Inf(1) // vllm bench serve's default --request-rate
	}
	numPrompts := o.maxRequests
	if vllmMode && numPrompts == 0 {
		numPrompts = 1000 // vllm bench serve's default --num-prompts
	}
	if dataset != nil && dataset.Name == load.DatasetRandom {
		if dataset, err = load.RandomDataset(numPrompts, oa.randomIn, oa.randomOut, oa.randomRatio, o.seed); err != nil {
			return run.UsageError(err)
		}
	}
	model := o.model
	if model == "" && (spec.Kind != "replay" || spec.Trace == nil) {
		if model, err = load.FirstModel(cmd.Context(), base, header); err != nil {
			return run.UsageError(err)
		}
	}
	warmup := time.Duration(0)
	if f.Changed("warmup") {
		warmup = o.warmup
	}
	opts := load.OpenAIOptions{URL: base, Chat: oa.chat, Model: model, Rate: rate, Arrival: spec,
		Concurrency: oa.concurrency, InputTokens: oa.inputTokens, OutputTokens: oa.outputTokens,
		Duration: duration, MaxRequests: numPrompts, Seed: o.seed, Timeout: o.timeout, Strict: oa.strict,
		MaxConns: o.connections, Header: header, Dataset: dataset, Timestamps: oa.timestamps, RateScale: o.rateScale,
		MaxConcurrency: oa.maxConcurrency, Warmup: warmup, NumWarmups: oa.numWarmups, Percentiles: pcts,
		Goodput: slo, KeepText: oa.saveDetailed}
	if vllmMode {
		opts.Burstiness = oa.burstiness
	}
	var progressed atomic.Bool
	opts.Progress = loadProgress(app, "finished", &progressed)
	date := time.Now()
	rep, samples, err := load.RunOpenAI(cmd.Context(), opts)
	if progressed.Load() {
		fmt.Fprintln(app.Err)
	}
	if errors.Is(err, load.ErrSetup) {
		return run.UsageError(err)
	}
	if err != nil {
		return err
	}
	if oa.saveResult {
		backend := "openai"
		if oa.chat {
			backend = "openai-chat"
		}
		rm := load.ResultMeta{Date: date, Backend: backend, Label: oa.label, Model: model, NumPrompts: numPrompts,
			RequestRate: rate, Metadata: meta, PercentileMetrics: metrics, Warmup: warmup, Detailed: oa.saveDetailed}
		if err := saveResult(app, oa, rm, load.VLLMResult(rep, samples, rm), max(oa.maxConcurrency, oa.concurrency)); err != nil {
			return err
		}
	}
	if app.JSONOutput() {
		if err := app.WriteJSON(rep); err != nil {
			return err
		}
	} else {
		printOpenAIReport(app, rep, metrics, f.Changed("metric-percentiles") || f.Changed("percentile-metrics"))
	}
	return openAIFailures(rep, o.maxFailureRate)
}

// openAIFailures is exit 1 when more than max of the counted requests failed, naming the
// commonest failure and the counts.
func openAIFailures(rep *load.OpenAIReport, max float64) error {
	r := rep.FailureRate()
	if r <= max {
		return nil
	}
	cause := "none"
	if len(rep.Failures) > 0 {
		fl := rep.Failures[0]
		cause = fmt.Sprintf("%d %s", fl.Count, fl.Reason)
		if fl.Status > 0 {
			cause += fmt.Sprintf(" (HTTP %d)", fl.Status)
		}
		if fl.Example != "" {
			cause += ": " + fl.Example
		}
	}
	return run.CheckFailed(fmt.Errorf("load: %d of %d requests failed (%.1f%%, over --max-failure-rate %g); most: %s", rep.Failed, rep.Requests, 100*r, max, cause))
}

// checkOpenAIFlags refuses --openai's numeric flags out of their range (exit 2, naming it).
func checkOpenAIFlags(f *pflag.FlagSet, o *loadOptions, rateSet bool) error {
	oa := &o.openai
	switch {
	case oa.concurrency < 0:
		return run.UsageErrorf("--concurrency: %d: must be >= 1", oa.concurrency)
	case oa.concurrency > 0 && rateSet:
		return run.UsageErrorf("--rate and --concurrency are exclusive (open and closed loop)")
	case !(o.rate >= 0) || math.IsInf(o.rate, -1):
		return run.UsageErrorf("--rate: %g: must be a number > 0 (or inf)", o.rate)
	case oa.inputTokens < 1:
		return run.UsageErrorf("--input-tokens: %d: must be >= 1", oa.inputTokens)
	case oa.outputTokens < 1:
		return run.UsageErrorf("--output-tokens: %d: must be >= 1", oa.outputTokens)
	case o.maxRequests < 0:
		return run.UsageErrorf("--max-requests: %d: must be >= 0", o.maxRequests)
	case o.timeout < 0:
		return run.UsageErrorf("--timeout: %s: must be > 0", o.timeout)
	case o.duration <= 0:
		return run.UsageErrorf("--duration: %s: must be > 0", o.duration)
	case o.connections < 1:
		return run.UsageErrorf("--connections: %d: must be >= 1", o.connections)
	case !(oa.burstiness > 0) || math.IsInf(oa.burstiness, 0):
		return run.UsageErrorf("--burstiness: %g: must be a number > 0", oa.burstiness)
	case oa.maxConcurrency < 0:
		return run.UsageErrorf("--max-concurrency: %d: must be >= 0", oa.maxConcurrency)
	case oa.numWarmups < 0:
		return run.UsageErrorf("--num-warmups: %d: must be >= 0", oa.numWarmups)
	case !(o.maxFailureRate >= 0 && o.maxFailureRate <= 1):
		return run.UsageErrorf("--max-failure-rate: %g: must be in [0, 1]", o.maxFailureRate)
	case o.warmup < 0 || (f.Changed("warmup") && f.Changed("duration") && o.warmup >= o.duration):
		return run.UsageErrorf("--warmup: %s: must be >= 0 and shorter than --duration %s", o.warmup, o.duration)
	case !(o.rateScale >= 0) || math.IsInf(o.rateScale, 0):
		return run.UsageErrorf("--rate-scale: %g: must be a finite number > 0", o.rateScale)
	case oa.saveDetailed && !oa.saveResult:
		return run.UsageErrorf("--save-detailed: needs --save-result")
	}
	return nil
}

// readDatasetFlags reads --dataset-name and --dataset-path (random data is made once the
// run's size is known: nil path, Name random).
func readDatasetFlags(cmd *cobra.Command, o *loadOptions) (*load.Dataset, error) {
	oa := &o.openai
	f := cmd.Flags()
	if oa.datasetName == "" {
		for _, name := range []string{"dataset-path", "dataset-timestamps", "random-input-len", "random-output-len", "random-range-ratio", "sharegpt-output-len"} {
			if f.Changed(name) {
				return nil, run.UsageErrorf("--%s: needs --dataset-name", name)
			}
		}
		return nil, nil
	}
	if f.Changed("trace") {
		return nil, run.UsageErrorf("--dataset-name and --trace: give one (the requests come from either)")
	}
	if oa.sharegptOutputLen < 0 {
		return nil, run.UsageErrorf("--sharegpt-output-len: %d: must be >= 1", oa.sharegptOutputLen)
	}
	if oa.datasetName == load.DatasetRandom {
		if oa.datasetPath != "" {
			return nil, run.UsageErrorf("--dataset-path: random data has no file")
		}
		return &load.Dataset{Name: load.DatasetRandom}, nil
	}
	known := false
	for _, n := range load.DatasetNames {
		known = known || n == oa.datasetName
	}
	if !known {
		return nil, run.UsageErrorf("--dataset-name: %q: want one of %s", oa.datasetName, strings.Join(load.DatasetNames, ", "))
	}
	if oa.datasetPath == "" {
		return nil, run.UsageErrorf("--dataset-path: required with --dataset-name %s", oa.datasetName)
	}
	data, err := formats.ReadBytesLimit(oa.datasetPath, formats.MaxFileBytes)
	if err != nil {
		return nil, run.UsageErrorf("--dataset-path: %v", err)
	}
	d, err := load.ReadDataset(oa.datasetName, oa.datasetPath, data, oa.sharegptOutputLen)
	if err != nil {
		return nil, run.UsageError(err)
	}
	return d, nil
}

// saveResult writes the vllm-bench result JSON to --result-dir/--result-filename.
func saveResult(app *App, oa *openAIFlags, rm load.ResultMeta, result map[string]any, concurrency int) error {
	name := oa.resultFile
	if name == "" {
		name = load.ResultFileName(rm, concurrency)
	}
	if oa.resultDir != "" {
		if err := os.MkdirAll(oa.resultDir, 0o755); err != nil {
			return run.UsageErrorf("--result-dir: %v", err)
		}
		name = filepath.Join(oa.resultDir, name)
	}
	b, err := json.MarshalIndent(result, "", "  ")
	if err != nil {
		return fmt.Errorf("--save-result: %w", err)
	}
	if err := os.WriteFile(name, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("--save-result: %w", err)
	}
	if !app.Quiet {
		fmt.Fprintf(app.Err, "load: result written to %s\n", name)
	}
	return nil
}

// printOpenAIReport renders a benchmark run as benchmark_serving prints one: counts and
// throughput, then the latency distributions in ms, then failures by reason and status.
func printOpenAIReport(app *App, rep *load.OpenAIReport, metrics []string, custom bool) {
	mode := rep.Mode
	switch {
	case rep.Concurrency > 0:
		mode += fmt.Sprintf(", concurrency %d", rep.Concurrency)
	case rep.RateRPS > 0:
		mode += fmt.Sprintf(", %s at %g req/s", rep.Arrival, rep.RateRPS)
	case rep.Arrival != "" && rep.Burstiness > 0:
		mode += ", " + rep.Arrival
	default:
		mode += ", replaying " + rep.Arrival
	}
	if rep.MaxConcurrency > 0 {
		mode += fmt.Sprintf(", at most %d in flight", rep.MaxConcurrency)
	}
	if rep.Dataset != "" {
		mode += ", dataset " + rep.Dataset
	}
	fmt.Fprintf(app.Out, "%s (%s), seed %d\n\n", rep.Endpoint, mode, rep.Seed)
	app.Table([]string{"requests", "completed", "failed", "duration s", "req/s", "output tok/s", "total tok/s", "input tokens", "output tokens"}, [][]string{{
		fmt.Sprint(rep.Requests), fmt.Sprint(rep.Completed), fmt.Sprint(rep.Failed), fmt.Sprintf("%.2f", rep.DurationS),
		fmt.Sprintf("%.2f", rep.RequestThroughput), fmt.Sprintf("%.1f", rep.OutputThroughput), fmt.Sprintf("%.1f", rep.TotalTokenThroughput),
		fmt.Sprint(rep.InputTokens), fmt.Sprint(rep.OutputTokens),
	}})
	fmt.Fprintln(app.Out)
	row := func(name string, d load.Dist) []string {
		return []string{name, fmt.Sprint(d.N), fmt.Sprintf("%.2f", d.Mean), fmt.Sprintf("%.2f", d.P50), fmt.Sprintf("%.2f", d.P90), fmt.Sprintf("%.2f", d.P99), fmt.Sprintf("%.2f", d.Max)}
	}
	header := []string{"metric", "n", "mean ms", "p50 ms", "p90 ms", "p99 ms", "max ms"}
	if custom {
		// --percentile-metrics / --metric-percentiles: vllm bench's columns.
		header = []string{"metric", "n", "mean ms", "median ms", "std ms"}
		for _, p := range rep.MetricPercentiles {
			header = append(header, "p"+strconv.FormatFloat(p, 'f', -1, 64)+" ms")
		}
		header = append(header, "max ms")
		row = func(name string, d load.Dist) []string {
			r := []string{name, fmt.Sprint(d.N), fmt.Sprintf("%.2f", d.Mean), fmt.Sprintf("%.2f", d.Median), fmt.Sprintf("%.2f", d.Std)}
			for _, p := range rep.MetricPercentiles {
				r = append(r, fmt.Sprintf("%.2f", d.Percentiles["p"+strconv.FormatFloat(p, 'f', -1, 64)]))
			}
			return append(r, fmt.Sprintf("%.2f", d.Max))
		}
	}
	names := map[string]string{"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "e2el": "E2E"}
	dists := map[string]load.Dist{"ttft": rep.TTFT, "tpot": rep.TPOT, "itl": rep.ITL, "e2el": rep.E2E}
	var rows [][]string
	for _, m := range metrics {
		rows = append(rows, row(names[m], dists[m]))
	}
	app.Table(header, rows)
	if rep.RequestGoodput != nil {
		var slos []string
		for _, m := range load.GoodputMetrics {
			if v, ok := rep.GoodputSLOms[m]; ok {
				slos = append(slos, fmt.Sprintf("%s <= %g ms", m, v))
			}
		}
		fmt.Fprintf(app.Out, "\ngoodput: %d of %d completed requests met %s: %.2f req/s\n", rep.GoodRequests, rep.Completed, strings.Join(slos, ", "), *rep.RequestGoodput)
	}
	if rep.Excluded > 0 || rep.WarmupRequests > 0 {
		fmt.Fprintf(app.Out, "\nwarm-up: %d requests arriving in the first %gs were sent but not counted; %d sent before the run (%d failed)\n",
			rep.Excluded, rep.WarmupS, rep.WarmupRequests, rep.WarmupFailed)
	}
	if len(rep.Models) > 0 {
		fmt.Fprintln(app.Out)
		var rows [][]string
		for _, m := range rep.Models {
			for _, r := range [][]string{row("TTFT", m.TTFT), row("TPOT", m.TPOT), row("E2E", m.E2E)} {
				rows = append(rows, append([]string{m.Model, fmt.Sprintf("%d/%d", m.Completed, m.Requests)}, r...))
			}
		}
		app.Table(append([]string{"model", "completed"}, header...), rows)
	}
	if rep.ShortOutputs > 0 {
		fmt.Fprintf(app.Out, "\n%d completed requests got fewer tokens than their max_tokens (the server stopped at EOS: it may not take ignore_eos)\n", rep.ShortOutputs)
	}
	if len(rep.Failures) > 0 {
		fmt.Fprintln(app.Out)
		var rows [][]string
		for _, f := range rep.Failures {
			status := "-"
			if f.Status > 0 {
				status = fmt.Sprint(f.Status)
			}
			rows = append(rows, []string{f.Reason, status, fmt.Sprint(f.Count), strings.ReplaceAll(f.Example, "\n", " ")})
		}
		app.Table([]string{"failure", "HTTP status", "count", "example"}, rows)
	}
}
