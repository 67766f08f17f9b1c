package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/base/tables"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/sim"
)

// printEngineReport prints a one-engine replay: what ran (profile entry, policy, engine
// settings), then per class the TTFT, TPOT and E2E percentiles, the throughput and the
// preemptions.
func printEngineReport(io *run.IO, rep *sim.EngineReport) {
	fmt.Fprintf(io.Out, "one engine: %s on %d×%s (%s, %s), trace %s\n", rep.Model, rep.GPUCount, rep.GPU, rep.Profile, rep.Backend, rep.Trace)
	how := "--policy"
	if rep.DefaultPolicy {
		how = "default: the engine's own scheduling"
	}
	fmt.Fprintf(io.Out, "policy: %s (%s)\n", rep.Policy, how)
	var settings []string
	for _, s := range rep.Engine {
		v := s.Name + " " + s.Value
		if s.Source == "default" {
			v += "*"
		}
		settings = append(settings, v)
	}
	fmt.Fprintf(io.Out, "engine: %s (* default)\n", strings.Join(settings, ", "))
	line := fmt.Sprintf("requests: %d replayed, %d answered", rep.Requests, rep.Answered)
	if rep.Refused > 0 {
		var why []string
		for _, r := range slices.Sorted(maps.Keys(rep.Dropped)) {
			why = append(why, fmt.Sprintf("%d %s", rep.Dropped[r], r))
		}
		line += fmt.Sprintf(", %d refused (%s)", rep.Refused, strings.Join(why, ", "))
	}
	if rep.Cancelled > 0 {
		line += fmt.Sprintf(", %d cancelled", rep.Cancelled)
	}
	fmt.Fprintln(io.Out, line)
	fmt.Fprintln(io.Out)
	var rows [][]string
	for _, c := range rep.Classes {
		rows = append(rows, []string{c.Class, strconv.Itoa(c.Answered), ms4(c.TTFT), ms4(c.TPOT), ms4(c.E2E),
			msMean(c.TTFT) + "/" + msMean(c.TPOT) + "/" + msMean(c.E2E)})
	}
	header := []string{"class", "answered", "ttft p50/p90/p95/p99 ms", "tpot p50/p90/p95/p99 ms", "e2e p50/p90/p95/p99 ms", "mean ttft/tpot/e2e ms"}
	io.Table(header, rows)
	noSample := "no request of the class answered with that time"
	tables.DashNote(io.Out, header, rows, map[string]string{"ttft p50/p90/p95/p99 ms": noSample, "tpot p50/p90/p95/p99 ms": "no answered request of the class has two output tokens or more",
		"e2e p50/p90/p95/p99 ms": noSample, "mean ttft/tpot/e2e ms": noSample})
	fmt.Fprintln(io.Out)
	fmt.Fprintf(io.Out, "throughput: %.3f req/s, %.1f output tokens/s over %.3f s (first arrival to last finish); %d prompt, %d output tokens\n",
		rep.RequestsPerS, rep.OutputTokensPerS, float64(rep.SpanUs)/1e6, rep.PromptTokens, rep.OutputTokens)
	if rep.Preemptions != nil {
		fmt.Fprintf(io.Out, "preemptions: %d\n", *rep.Preemptions)
	}
	if c := rep.PrefixCache; c != nil {
		fmt.Fprintf(io.Out, "prefix cache: hit rate %.1f%%, %d of %d prompt tokens cached (prefill skipped)\n", 100*c.HitRate, c.CachedTokens, c.QueriedTokens)
	}
	if o := rep.KVOffload; o != nil {
		fmt.Fprintf(io.Out, "CPU KV offload (kv_offload_bytes %d): hit rate %.1f%%, %d of the %d prompt tokens the prefix cache missed loaded back over the host link\n", o.Bytes, 100*o.HitRate, o.LoadedTokens, o.QueriedTokens)
	}
}

func ms4(p sim.PercentilesUs) string {
	if p.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f/%.1f/%.1f/%.1f", p.P50Us/1000, p.P90Us/1000, p.P95Us/1000, p.P99Us/1000)
}

func msMean(p sim.PercentilesUs) string {
	if p.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", p.MeanUs/1000)
}

// writeJSONL writes the values as JSON lines, atomically.
func writeJSONL[T any](path string, vs []T) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := range vs {
		if err := enc.Encode(&vs[i]); err != nil {
			return err
		}
	}
	return formats.WriteAtomic(path, buf.Bytes())
}
