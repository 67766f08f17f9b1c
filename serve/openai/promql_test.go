package openai

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plan-dev/plan/internal/base/promcheck"
	"github.com/plan-dev/plan/serve"
)

// dropInQuery is one PromQL expression of a consumer (testdata/openai/dropin-promql.txt).
type dropInQuery struct{ source, expr string }

func readDropInQueries(t *testing.T) []dropInQuery {
	t.Helper()
	path := filepath.Join("..", "..", "testdata", "openai", "dropin-promql.txt")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var qs []dropInQuery
	for i, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		src, expr, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("%s:%d: want source<TAB>expression: %q", path, i+1, line)
		}
		qs = append(qs, dropInQuery{src, strings.TrimSpace(expr)})
	}
	return qs
}

// TestMetricsDropInPromQL: every PromQL expression of vLLM's Grafana dashboard and of the
// KEDA, AIBrix and endpoint-picker examples (ecosystem drop-in §1), evaluated by Prometheus's
// engine (promtool) over two scrapes of a QLM plan's /metrics with --metrics-legacy, each
// after a wave of streaming and plain completions, returns a series with a number (not NaN).
func TestMetricsDropInPromQL(t *testing.T) {
	promcheck.RequirePromtool(t)
	qs := readDropInQueries(t)
	_, url := qlmServerOpts(t, memFrontend(), serve.Options{MetricsLegacy: true})
	const model = "mistral-chat"
	wave := func() {
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				stream := "false"
				if i%2 == 0 {
					stream = "true"
				}
				resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(
					`{"model":"`+model+`","prompt":"a few words here","max_tokens":6,"stream":`+stream+`}`))
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, bufio.NewReader(resp.Body))
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("completion: %d", resp.StatusCode)
				}
			}()
		}
		wg.Wait()
	}
	scrape := func() []byte {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("/metrics: %d %v", resp.StatusCode, err)
		}
		return b
	}
	wave()
	first := scrape()
	wave()
	second := scrape()
	if t.Failed() {
		return
	}
	// vLLM's inter-token histogram takes every interval: each token after a request's first.
	series := func(name string) float64 {
		return metricValueIn(t, string(second), name+`{engine="0",model_name="`+model+`"}`)
	}
	gen, itl := series("vllm:generation_tokens_total"), series("vllm:inter_token_latency_seconds_count")
	done := metricValueIn(t, string(second), `vllm:request_success_total{engine="0",finished_reason="length",model_name="`+model+`"}`)
	if gen != 12*6 || done != 12 || itl != gen-done {
		t.Errorf("generation tokens %v, requests %v, inter-token intervals %v: want 72, 12, 60", gen, done, itl)
	}
	exprs := make([]string, len(qs))
	count := map[string]int{}
	for i, q := range qs {
		exprs[i] = strings.NewReplacer("$model_name", model, "$__rate_interval", "5m").Replace(q.expr)
		count[q.source]++
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := promcheck.NonEmpty(ctx, [][]byte{first, second}, map[string]string{"job": "pods", "instance": "plan:8000"}, exprs); err != nil {
		t.Fatal(err)
	}
	t.Logf("non-empty: %v (expressions per source)", count)
}

// metricValueIn is the value of sample series (name{labels} as exposed) in text.
func metricValueIn(t *testing.T, text, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", series, err)
			}
			return f
		}
	}
	t.Errorf("no sample %s", series)
	return 0
}
