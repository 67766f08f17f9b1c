package llm_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/llm/sched/fcfs"
	"github.com/plan-dev/plan/formats"
)

// azureConvRequests reads the hour of the Azure LLM inference trace 2023, conversation
// service (CC-BY 4.0; Patel et al., Splitwise, ISCA 2024), embedded for plan bench qlm, as
// Replay requests. With groups > 0 each request is given one of groups shared 512-token
// system prompts (capped at its prompt), drawn with a fixed seed: the trace itself carries no
// prefix information, so this is our synthetic sharing, named as such in the benchmark.
func azureConvRequests(tb testing.TB, groups int) []llm.Request {
	tb.Helper()
	dir := filepath.Join("..", "..", "bench", "qlmbench", "data")
	gz, err := os.ReadFile(filepath.Join(dir, "azure-llm-2023-conv.csv.gz"))
	if err != nil {
		tb.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		tb.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatal(err)
	}
	tr, err := formats.ParseAzureLLMTrace("azure-llm-2023-conv.csv", data)
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	names := []string{"sys0", "sys1", "sys2", "sys3", "sys4", "sys5", "sys6", "sys7"}
	reqs := make([]llm.Request, len(tr.Requests))
	for i, r := range tr.Requests {
		reqs[i] = llm.Request{ID: dataplane.ReqID(i), Arrival: dataplane.Time(r.TimeUs), Prompt: max(r.InputTokens, 1), Out: max(r.OutputTokens, 1)}
		if groups > 0 {
			reqs[i].Prefix = &dataplane.Prefix{Group: names[rng.Intn(min(groups, len(names)))], GroupTokens: 512}
		}
	}
	return reqs
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkReplayAzureConvPrefix replays the hour of Azure conversations on one engine of
// the bundled Mistral-7B A100 profile (bench/qlmbench/data) with prefix caching off, on,
// and on with 8 synthetic shared system prompts; it reports CPU-seconds per replay
// (cpu-s/op; the target is ≤ 0.5) and the hit rate.
func BenchmarkReplayAzureConvPrefix(b *testing.B) {
	pr, err := formats.ReadInto[*formats.Profile](filepath.Join("..", "..", "bench", "qlmbench", "data", "profile.json"), nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		apc    bool
		groups int
	}{{"off", false, 0}, {"on", true, 0}, {"on-8-system-prompts", true, 8}} {
		b.Run(c.name, func(b *testing.B) {
			reqs := azureConvRequests(b, c.groups)
			p := pr.LLMs[0]
			e := formats.LLMEngine{}
			if p.Engine != nil {
				e = *p.Engine
			}
			e.EnablePrefixCaching = new(c.apc)
			p.Engine = &e
			m := llm.NewModel(&p)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			var ctr *llm.Counters
			for range b.N {
				_, ctr = llm.Replay(m, reqs, fcfs.New())
			}
			b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
			if q := ctr.PrefixQueries.Load(); q > 0 {
				b.ReportMetric(float64(ctr.PrefixHits.Load())/float64(q), "hit-rate")
			}
			b.ReportMetric(float64(ctr.Preemptions.Load()), "preemptions")
		})
	}
}
