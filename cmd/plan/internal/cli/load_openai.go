package cli

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/serve/load"
	"github.com/plan-dev/plan/sim"
)

// openAIFlags are `plan load --openai`'s own flags (issue 30 item 6); the arrival flags
// (--rate, --trace, --duration, --max-requests, --seed, --timeout, --model, --connections)
// are load's.
type openAIFlags struct {
	url          string
	chat         bool
	concurrency  int
	inputTokens  int
	outputTokens int
	strict       bool
}

func (f *openAIFlags) flags(fs *pflag.FlagSet) {
	fs.StringVar(&f.url, "openai", "", "benchmark this OpenAI-compatible server (base URL) with streaming completions instead of a plan serve's KServe API")
	fs.BoolVar(&f.chat, "chat", false, "with --openai: POST /v1/chat/completions (default /v1/completions)")
	fs.IntVar(&f.concurrency, "concurrency", 0, "with --openai: closed loop with this many clients, each sending its next request when its last ends (default: open loop at --rate or the trace's times)")
	fs.IntVar(&f.inputTokens, "input-tokens", 128, "with --openai: prompt tokens of requests whose trace entry gives none")
	fs.IntVar(&f.outputTokens, "output-tokens", 128, "with --openai: max_tokens of requests whose trace entry gives none")
	fs.BoolVar(&f.strict, "openai-strict", false, "with --openai: send only OpenAI API fields (no ignore_eos, no prompt_tokens), for servers that refuse unknown fields")
}

func runLoadOpenAI(cmd *cobra.Command, app *App, o *loadOptions) error {
	base, err := checkLoopback(o.openai.url)
	if err != nil {
		return usageError(fmt.Errorf("--openai: %w", err))
	}
	f := cmd.Flags()
	for _, name := range []string{"load", "slo", "grpc", "grpc-raw"} {
		if f.Changed(name) {
			return usageErrorf("--%s: not an --openai flag (a plan serve's KServe API only)", name)
		}
	}
	switch {
	case o.openai.concurrency < 0:
		return usageErrorf("--concurrency: %d: must be >= 1", o.openai.concurrency)
	case o.openai.concurrency > 0 && f.Changed("rate"):
		return usageErrorf("--rate and --concurrency are exclusive (open and closed loop)")
	case !(o.rate >= 0) || math.IsInf(o.rate, 0):
		return usageErrorf("--rate: %g: must be a finite number > 0", o.rate)
	case o.openai.inputTokens < 1:
		return usageErrorf("--input-tokens: %d: must be >= 1", o.openai.inputTokens)
	case o.openai.outputTokens < 1:
		return usageErrorf("--output-tokens: %d: must be >= 1", o.openai.outputTokens)
	case o.maxRequests < 0:
		return usageErrorf("--max-requests: %d: must be >= 0", o.maxRequests)
	case o.timeout < 0:
		return usageErrorf("--timeout: %s: must be > 0", o.timeout)
	case o.duration <= 0:
		return usageErrorf("--duration: %s: must be > 0", o.duration)
	case o.connections < 1:
		return usageErrorf("--connections: %d: must be >= 1", o.connections)
	}
	spec, err := sim.ParseTraceFlag(o.trace)
	if err != nil {
		return usageError(err)
	}
	duration := o.duration
	if spec.Kind == "replay" && !f.Changed("duration") {
		duration = 0 // a replayed trace is sent whole unless --duration cuts it
	}
	opts := load.OpenAIOptions{URL: base, Chat: o.openai.chat, Model: o.model, Rate: o.rate, Arrival: spec,
		Concurrency: o.openai.concurrency, InputTokens: o.openai.inputTokens, OutputTokens: o.openai.outputTokens,
		Duration: duration, MaxRequests: o.maxRequests, Seed: o.seed, Timeout: o.timeout, Strict: o.openai.strict,
		MaxConns: o.connections}
	var progressed atomic.Bool
	if !app.Quiet && isTerminal(app.Err) && isTerminal(app.Out) {
		start := time.Now()
		opts.Progress = func(sent, done int64) {
			progressed.Store(true)
			fmt.Fprintf(app.Err, "\rload: %d sent, %d finished, %s", sent, done, time.Since(start).Round(time.Second))
		}
	}
	rep, _, err := load.RunOpenAI(cmd.Context(), opts)
	if progressed.Load() {
		fmt.Fprintln(app.Err)
	}
	if errors.Is(err, load.ErrSetup) {
		return usageError(err)
	}
	if err != nil {
		return err
	}
	if app.JSONOutput() {
		return app.WriteJSON(rep)
	}
	printOpenAIReport(app, rep)
	return nil
}

// printOpenAIReport renders a benchmark run as benchmark_serving prints one: counts and
// throughput, then the latency distributions in ms, then failures by reason and status.
func printOpenAIReport(app *App, rep *load.OpenAIReport) {
	mode := rep.Mode
	switch {
	case rep.Concurrency > 0:
		mode += fmt.Sprintf(", concurrency %d", rep.Concurrency)
	case rep.RateRPS > 0:
		mode += fmt.Sprintf(", %s at %g req/s", rep.Arrival, rep.RateRPS)
	default:
		mode += ", replaying " + rep.Arrival
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
	app.Table(header, [][]string{row("TTFT", rep.TTFT), row("TPOT", rep.TPOT), row("ITL", rep.ITL), row("E2E", rep.E2E)})
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
