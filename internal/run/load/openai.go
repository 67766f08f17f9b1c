package load

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	loadgen "github.com/plan-dev/plan/serve/load"
	"github.com/plan-dev/plan/sim"
)

// goodputPair is one --goodput objective as vllm bench spells it: metric:ms.
var goodputPair = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*:[^/]*$`)

// TakeGoodputArgs moves the arguments after --goodput that are objectives (metric:ms, as in
// `--goodput ttft:200 tpot:50`, whose later pairs the flag parser leaves as arguments) into
// the flag's values: it returns goodput with them appended and the arguments left.
func TakeGoodputArgs(goodput, args []string) (_, rest []string) {
	for _, a := range args {
		if goodputPair.MatchString(a) {
			goodput = append(goodput, a)
		} else {
			rest = append(rest, a)
		}
	}
	return goodput, rest
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
			for _, m := range loadgen.GoodputMetrics {
				known = known || m == name
			}
			if !known {
				return nil, run.UsageErrorf("--goodput %q: unknown metric %q (want %s)", pair, name, strings.Join(loadgen.GoodputMetrics, ", "))
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
		for _, k := range loadgen.PercentileMetricNames {
			ok = ok || k == m
		}
		if !ok {
			return nil, nil, run.UsageErrorf("--percentile-metrics: %q: unknown metric (want %s)", m, strings.Join(loadgen.PercentileMetricNames, ", "))
		}
		ms = append(ms, m)
	}
	if len(ms) == 0 {
		return nil, nil, run.UsageErrorf("--percentile-metrics: %q: name at least one of %s", metrics, strings.Join(loadgen.PercentileMetricNames, ", "))
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

// runOpenAI is the --openai mode: a benchmark of an OpenAI-compatible server as vLLM's
// benchmark_serving runs one.
func runOpenAI(ctx context.Context, a Args, io *run.IO) error {
	flag := "--openai"
	if a.BaseURLSet {
		flag = "--base-url"
	}
	base, err := CheckTarget(io.Err, flag, a.OpenAI)
	if err != nil {
		return err
	}
	for _, c := range []struct {
		name string
		set  bool
	}{{"load", a.LoadSet}, {"slo", a.SLOSet}, {"grpc", a.GRPCSet}, {"grpc-raw", a.GRPCRawSet}} {
		if c.set {
			return run.UsageErrorf("--%s: not an --openai flag (a plan serve's KServe API only)", c.name)
		}
	}
	if a.RequestRateSet {
		if a.RateSet {
			return run.UsageErrorf("--rate and --request-rate: give one (they are the same)")
		}
		a.Rate = a.RequestRate
	}
	rateSet := a.RateSet || a.RequestRateSet
	if err := checkOpenAIFlags(a, rateSet); err != nil {
		return err
	}
	header, err := requestHeaders(a.Headers, a.APIKey, true)
	if err != nil {
		return err
	}
	slo, err := parseGoodput(a.Goodput)
	if err != nil {
		return err
	}
	metrics, pcts, err := parsePercentiles(a.PercentileMetrics, a.MetricPercentiles)
	if err != nil {
		return err
	}
	meta := map[string]string{}
	for _, kv := range a.Metadata {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return run.UsageErrorf("--metadata %q: want KEY=VALUE", kv)
		}
		meta[strings.TrimSpace(k)] = v
	}
	spec, err := sim.ParseTraceFlag(a.Trace)
	if err != nil {
		return run.UsageError(err)
	}
	dataset, err := readDatasetFlags(a)
	if err != nil {
		return err
	}
	// vllm bench serve's way of scheduling: a dataset, a burstiness or an infinite rate.
	vllmMode := dataset != nil || a.VLLMSet.Burstiness || math.IsInf(a.Rate, 1)
	duration := a.Duration
	if (spec.Kind == "replay" || vllmMode) && !a.DurationSet {
		duration = 0 // a replayed trace, or --num-prompts requests, are sent whole unless --duration cuts them
	}
	rate := a.Rate
	if vllmMode && !rateSet && a.Concurrency == 0 {
		rate = math.Inf(1) // vllm bench serve's default --request-rate
	}
	numPrompts := a.MaxRequests
	if vllmMode && numPrompts == 0 {
		numPrompts = 1000 // vllm bench serve's default --num-prompts
	}
	if dataset != nil && dataset.Name == loadgen.DatasetRandom {
		if dataset, err = loadgen.RandomDataset(numPrompts, a.RandomInputLen, a.RandomOutputLen, a.RandomRangeRatio, a.Seed); err != nil {
			return run.UsageError(err)
		}
	}
	model := a.Model
	if model == "" && (spec.Kind != "replay" || spec.Trace == nil) {
		if model, err = loadgen.FirstModel(ctx, base, header); err != nil {
			return run.UsageError(err)
		}
	}
	warmup := time.Duration(0)
	if a.WarmupSet {
		warmup = a.Warmup
	}
	opts := loadgen.OpenAIOptions{URL: base, Chat: a.Chat, Model: model, Rate: rate, Arrival: spec,
		Concurrency: a.Concurrency, InputTokens: a.InputTokens, OutputTokens: a.OutputTokens,
		Duration: duration, MaxRequests: numPrompts, Seed: a.Seed, Timeout: a.Timeout, Strict: a.Strict,
		MaxConns: a.Connections, Header: header, Dataset: dataset, Timestamps: a.DatasetTimestamps, RateScale: a.RateScale,
		MaxConcurrency: a.MaxConcurrency, Warmup: warmup, NumWarmups: a.NumWarmups, Percentiles: pcts,
		Goodput: slo, KeepText: a.SaveDetailed}
	if vllmMode {
		opts.Burstiness = a.Burstiness
	}
	date := time.Now()
	var rep *loadgen.OpenAIReport
	var samples []loadgen.OpenAISample
	if err := withProgress(io, "finished", func(progress func(sent, n int64)) (err error) {
		opts.Progress = progress
		rep, samples, err = loadgen.RunOpenAI(ctx, opts)
		return err
	}); err != nil {
		return err
	}
	if a.SaveResult {
		backend := "openai"
		if a.Chat {
			backend = "openai-chat"
		}
		rm := loadgen.ResultMeta{Date: date, Backend: backend, Label: a.Label, Model: model, NumPrompts: numPrompts,
			RequestRate: rate, Metadata: meta, PercentileMetrics: metrics, Warmup: warmup, Detailed: a.SaveDetailed}
		if err := saveResult(io, a, rm, loadgen.VLLMResult(rep, samples, rm), max(a.MaxConcurrency, a.Concurrency)); err != nil {
			return err
		}
	}
	if io.JSONOutput() {
		if err := io.WriteJSON(rep); err != nil {
			return err
		}
	} else {
		printOpenAIReport(io, rep, metrics, a.VLLMSet.MetricPercentiles || a.VLLMSet.PercentileMetrics)
	}
	return openAIFailures(rep, a.MaxFailureRate)
}

// openAIFailures is exit 1 when more than max of the counted requests failed, naming the
// commonest failure and the counts.
func openAIFailures(rep *loadgen.OpenAIReport, max float64) error {
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
func checkOpenAIFlags(a Args, rateSet bool) error {
	switch {
	case a.Concurrency < 0:
		return run.UsageErrorf("--concurrency: %d: must be >= 1", a.Concurrency)
	case a.Concurrency > 0 && rateSet:
		return run.UsageErrorf("--rate and --concurrency are exclusive (open and closed loop)")
	case !(a.Rate >= 0) || math.IsInf(a.Rate, -1):
		return run.UsageErrorf("--rate: %g: must be a number > 0 (or inf)", a.Rate)
	case a.InputTokens < 1:
		return run.UsageErrorf("--input-tokens: %d: must be >= 1", a.InputTokens)
	case a.OutputTokens < 1:
		return run.UsageErrorf("--output-tokens: %d: must be >= 1", a.OutputTokens)
	case a.MaxRequests < 0:
		return run.UsageErrorf("--max-requests: %d: must be >= 0", a.MaxRequests)
	case a.Timeout < 0:
		return run.UsageErrorf("--timeout: %s: must be > 0", a.Timeout)
	case a.Duration <= 0:
		return run.UsageErrorf("--duration: %s: must be > 0", a.Duration)
	case a.Connections < 1:
		return run.UsageErrorf("--connections: %d: must be >= 1", a.Connections)
	case !(a.Burstiness > 0) || math.IsInf(a.Burstiness, 0):
		return run.UsageErrorf("--burstiness: %g: must be a number > 0", a.Burstiness)
	case a.MaxConcurrency < 0:
		return run.UsageErrorf("--max-concurrency: %d: must be >= 0", a.MaxConcurrency)
	case a.NumWarmups < 0:
		return run.UsageErrorf("--num-warmups: %d: must be >= 0", a.NumWarmups)
	case !(a.MaxFailureRate >= 0 && a.MaxFailureRate <= 1):
		return run.UsageErrorf("--max-failure-rate: %g: must be in [0, 1]", a.MaxFailureRate)
	case a.Warmup < 0 || (a.WarmupSet && a.DurationSet && a.Warmup >= a.Duration):
		return run.UsageErrorf("--warmup: %s: must be >= 0 and shorter than --duration %s", a.Warmup, a.Duration)
	case !(a.RateScale >= 0) || math.IsInf(a.RateScale, 0):
		return run.UsageErrorf("--rate-scale: %g: must be a finite number > 0", a.RateScale)
	case a.SaveDetailed && !a.SaveResult:
		return run.UsageErrorf("--save-detailed: needs --save-result")
	}
	return nil
}

// readDatasetFlags reads --dataset-name and --dataset-path (random data is made once the
// run's size is known: nil path, Name random).
func readDatasetFlags(a Args) (*loadgen.Dataset, error) {
	if a.DatasetName == "" {
		if given := a.VLLMSet.datasetGiven(); len(given) > 0 {
			return nil, run.UsageErrorf("--%s: needs --dataset-name", given[0])
		}
		return nil, nil
	}
	if a.TraceSet {
		return nil, run.UsageErrorf("--dataset-name and --trace: give one (the requests come from either)")
	}
	if a.ShareGPTOutputLen < 0 {
		return nil, run.UsageErrorf("--sharegpt-output-len: %d: must be >= 1", a.ShareGPTOutputLen)
	}
	if a.DatasetName == loadgen.DatasetRandom {
		if a.DatasetPath != "" {
			return nil, run.UsageErrorf("--dataset-path: random data has no file")
		}
		return &loadgen.Dataset{Name: loadgen.DatasetRandom}, nil
	}
	known := false
	for _, n := range loadgen.DatasetNames {
		known = known || n == a.DatasetName
	}
	if !known {
		return nil, run.UsageErrorf("--dataset-name: %q: want one of %s", a.DatasetName, strings.Join(loadgen.DatasetNames, ", "))
	}
	if a.DatasetPath == "" {
		return nil, run.UsageErrorf("--dataset-path: required with --dataset-name %s", a.DatasetName)
	}
	data, err := formats.ReadBytesLimit(a.DatasetPath, formats.MaxFileBytes)
	if err != nil {
		return nil, run.UsageErrorf("--dataset-path: %v", err)
	}
	d, err := loadgen.ReadDataset(a.DatasetName, a.DatasetPath, data, a.ShareGPTOutputLen)
	if err != nil {
		return nil, run.UsageError(err)
	}
	return d, nil
}

// saveResult writes the vllm-bench result JSON to --result-dir/--result-filename.
func saveResult(io *run.IO, a Args, rm loadgen.ResultMeta, result map[string]any, concurrency int) error {
	name := a.ResultFilename
	if name == "" {
		name = loadgen.ResultFileName(rm, concurrency)
	}
	if a.ResultDir != "" {
		if err := os.MkdirAll(a.ResultDir, 0o755); err != nil {
			return run.UsageErrorf("--result-dir: %v", err)
		}
		name = filepath.Join(a.ResultDir, name)
	}
	b, err := json.MarshalIndent(result, "", "  ")
	if err != nil {
		return fmt.Errorf("--save-result: %w", err)
	}
	if err := os.WriteFile(name, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("--save-result: %w", err)
	}
	if !io.Quiet {
		fmt.Fprintf(io.Err, "load: result written to %s\n", name)
	}
	return nil
}

// printOpenAIReport renders a benchmark run as benchmark_serving prints one: counts and
// throughput, then the latency distributions in ms, then failures by reason and status.
func printOpenAIReport(io *run.IO, rep *loadgen.OpenAIReport, metrics []string, custom bool) {
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
	fmt.Fprintf(io.Out, "%s (%s), seed %d\n\n", rep.Endpoint, mode, rep.Seed)
	io.Table([]string{"requests", "completed", "failed", "duration s", "req/s", "output tok/s", "total tok/s", "input tokens", "output tokens"}, [][]string{{
		fmt.Sprint(rep.Requests), fmt.Sprint(rep.Completed), fmt.Sprint(rep.Failed), fmt.Sprintf("%.2f", rep.DurationS),
		fmt.Sprintf("%.2f", rep.RequestThroughput), fmt.Sprintf("%.1f", rep.OutputThroughput), fmt.Sprintf("%.1f", rep.TotalTokenThroughput),
		fmt.Sprint(rep.InputTokens), fmt.Sprint(rep.OutputTokens),
	}})
	fmt.Fprintln(io.Out)
	row := func(name string, d loadgen.Dist) []string {
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
		row = func(name string, d loadgen.Dist) []string {
			r := []string{name, fmt.Sprint(d.N), fmt.Sprintf("%.2f", d.Mean), fmt.Sprintf("%.2f", d.Median), fmt.Sprintf("%.2f", d.Std)}
			for _, p := range rep.MetricPercentiles {
				r = append(r, fmt.Sprintf("%.2f", d.Percentiles["p"+strconv.FormatFloat(p, 'f', -1, 64)]))
			}
			return append(r, fmt.Sprintf("%.2f", d.Max))
		}
	}
	names := map[string]string{"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "e2el": "E2E"}
	dists := map[string]loadgen.Dist{"ttft": rep.TTFT, "tpot": rep.TPOT, "itl": rep.ITL, "e2el": rep.E2E}
	var rows [][]string
	for _, m := range metrics {
		rows = append(rows, row(names[m], dists[m]))
	}
	io.Table(header, rows)
	if rep.RequestGoodput != nil {
		var slos []string
		for _, m := range loadgen.GoodputMetrics {
			if v, ok := rep.GoodputSLOms[m]; ok {
				slos = append(slos, fmt.Sprintf("%s <= %g ms", m, v))
			}
		}
		fmt.Fprintf(io.Out, "\ngoodput: %d of %d completed requests met %s: %.2f req/s\n", rep.GoodRequests, rep.Completed, strings.Join(slos, ", "), *rep.RequestGoodput)
	}
	if rep.Excluded > 0 || rep.WarmupRequests > 0 {
		fmt.Fprintf(io.Out, "\nwarm-up: %d requests arriving in the first %gs were sent but not counted; %d sent before the run (%d failed)\n",
			rep.Excluded, rep.WarmupS, rep.WarmupRequests, rep.WarmupFailed)
	}
	if len(rep.Models) > 0 {
		fmt.Fprintln(io.Out)
		var rows [][]string
		for _, m := range rep.Models {
			for _, r := range [][]string{row("TTFT", m.TTFT), row("TPOT", m.TPOT), row("E2E", m.E2E)} {
				rows = append(rows, append([]string{m.Model, fmt.Sprintf("%d/%d", m.Completed, m.Requests)}, r...))
			}
		}
		io.Table(append([]string{"model", "completed"}, header...), rows)
	}
	if rep.ShortOutputs > 0 {
		fmt.Fprintf(io.Out, "\n%d completed requests got fewer tokens than their max_tokens (the server stopped at EOS: it may not take ignore_eos)\n", rep.ShortOutputs)
	}
	if len(rep.Failures) > 0 {
		fmt.Fprintln(io.Out)
		var rows [][]string
		for _, f := range rep.Failures {
			status := "-"
			if f.Status > 0 {
				status = fmt.Sprint(f.Status)
			}
			rows = append(rows, []string{f.Reason, status, fmt.Sprint(f.Count), strings.ReplaceAll(f.Example, "\n", " ")})
		}
		io.Table([]string{"failure", "HTTP status", "count", "example"}, rows)
	}
}
