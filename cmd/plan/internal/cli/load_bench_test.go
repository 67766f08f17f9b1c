package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	runload "github.com/plan-dev/plan/internal/run/load"
)

// benchServer is a loopback OpenAI server: a fixed short stream per request, a 500 for the
// model "broken"; it keeps the Authorization headers it saw.
func benchServer(t *testing.T) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var auth []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"data":[{"id":"fake-7b"}]}`)
			return
		}
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		var req struct {
			Model string `json:"model"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Model == "broken" {
			http.Error(w, `{"error":{"message":"model broken"}}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(ts.Close)
	return ts, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), auth...)
	}
}

// TestLoadBench: `plan load --openai` with vllm bench serve's options: a dataset, goodput
// spelled as vllm spells it, a saved result with vllm's keys, the API key sent and never
// printed, exit 1 when too many requests fail, exit 2 naming the bad input.
func TestLoadBench(t *testing.T) {
	ts, auth := benchServer(t)
	dir := t.TempDir()
	ds := filepath.Join("..", "..", "..", "..", "testdata", "load")
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	ok := []struct {
		name string
		args []string
		want []string
	}{
		{"sharegpt goodput", []string{"--dataset-name", "sharegpt", "--dataset-path", filepath.Join(ds, "sharegpt.json"), "--num-prompts", "5",
			"--goodput", "ttft:5000", "tpot:5000", "e2el:9000", "--api-key", "sk-secret", "--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", "r.json"},
			[]string{"goodput: 5 of 5 completed requests met ttft <= 5000 ms, tpot <= 5000 ms, e2el <= 9000 ms", "dataset sharegpt"}},
		{"mooncake timestamps", []string{"--dataset-name", "mooncake", "--dataset-path", filepath.Join(ds, "mooncake.jsonl"), "--dataset-timestamps", "--rate-scale", "10",
			"--metric-percentiles", "50,95", "--percentile-metrics", "ttft,e2el"}, []string{"recorded times at 10x", "p95 ms", "median ms"}},
		{"burstgpt bursty", []string{"--dataset-name", "burstgpt", "--dataset-path", filepath.Join(ds, "burstgpt.csv"), "--request-rate", "200", "--burstiness", "0.5", "--num-prompts", "4", "--max-concurrency", "2"},
			[]string{"gamma, burstiness 0.5", "at most 2 in flight"}},
		{"random warm-up", []string{"--dataset-name", "random", "--random-input-len", "8", "--random-output-len", "2", "--num-prompts", "3", "--num-warmups", "2", "--header", "X-Tenant: blue"},
			[]string{"2 sent before the run (0 failed)"}},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := rootRun(t, append([]string{"load", "--openai", ts.URL}, tc.args...)...)
			if code != ExitOK {
				t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out+stderr, "sk-") {
				t.Errorf("the API key was printed:\n%s\n%s", out, stderr)
			}
		})
	}
	b, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"completed", "total_input_tokens", "total_output_tokens", "request_throughput", "output_throughput", "total_token_throughput",
		"mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms", "p99_tpot_ms", "p99_itl_ms", "p99_e2el_ms", "request_goodput", "duration", "ttfts", "itls", "errors"} {
		if _, ok := res[k]; !ok {
			t.Errorf("saved result lacks %q", k)
		}
	}
	if res["completed"] != 5.0 || res["model_id"] != "fake-7b" || res["request_goodput"] == nil {
		t.Errorf("saved result: completed %v model %v goodput %v", res["completed"], res["model_id"], res["request_goodput"])
	}
	a := auth()
	if a[0] != "Bearer sk-secret" || a[len(a)-1] != "Bearer sk-from-env" {
		t.Errorf("Authorization headers %q, want --api-key's then $OPENAI_API_KEY's", a)
	}

	code, _, stderr := rootRun(t, "load", "--openai", ts.URL, "--model", "broken", "--request-rate", "inf", "--num-prompts", "4")
	if code != ExitFailure || !strings.Contains(stderr, "4 of 4 requests failed") || !strings.Contains(stderr, "HTTP 500") {
		t.Errorf("every request failing: exit %d %s", code, stderr)
	}
	if code, _, stderr := rootRun(t, "load", "--openai", ts.URL, "--model", "broken", "--request-rate", "inf", "--num-prompts", "2", "--max-failure-rate", "1"); code != ExitOK {
		t.Errorf("--max-failure-rate 1: exit %d %s", code, stderr)
	}

	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"timestamp\": 0, \"input_length\": 3, \"output_length\": 1}\n{\"timestamp\": 1, \"input_length\": \"x\", \"output_length\": 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--openai", "gopher://127.0.0.1:1"}, `--openai: "gopher://127.0.0.1:1": must be an http:// or https:// URL`},
		{[]string{"--base-url", "ws://127.0.0.1:1"}, `--base-url: "ws://127.0.0.1:1"`},
		{[]string{"--openai", ts.URL, "--header", "X-Tenant blue"}, `--header "X-Tenant blue": want "Name: value"`},
		{[]string{"--openai", ts.URL, "--goodput", "ttft:200", "latency:9"}, `unknown metric "latency"`},
		{[]string{"--openai", ts.URL, "--goodput", "ttft:fast"}, `--goodput "ttft:fast"`},
		{[]string{"--openai", ts.URL, "--percentile-metrics", "ttft,foo"}, `--percentile-metrics: "foo"`},
		{[]string{"--openai", ts.URL, "--metric-percentiles", "101"}, `--metric-percentiles: "101"`},
		{[]string{"--openai", ts.URL, "--dataset-name", "mooncake", "--dataset-path", bad}, "bad.jsonl:2: input_length: want int"},
		{[]string{"--openai", ts.URL, "--dataset-name", "sharegpt"}, "--dataset-path: required"},
		{[]string{"--openai", ts.URL, "--dataset-name", "nope", "--dataset-path", bad}, `--dataset-name: "nope"`},
		{[]string{"--openai", ts.URL, "--dataset-name", "random", "--dataset-timestamps"}, "--dataset-timestamps: needs a dataset with arrival times"},
		{[]string{"--openai", ts.URL, "--burstiness", "0"}, "--burstiness: 0"},
		{[]string{"--openai", ts.URL, "--save-detailed"}, "--save-detailed: needs --save-result"},
		{[]string{"ftp://127.0.0.1:1"}, `URL: "ftp://127.0.0.1:1"`},
		{[]string{ts.URL, "--dataset-name", "random"}, "--dataset-name: an --openai flag"},
		{[]string{ts.URL, "--header", "nocolon"}, `--header "nocolon"`},
	} {
		code, _, stderr := rootRun(t, append([]string{"load"}, tc.args...)...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, stderr, tc.want)
		}
	}
}

// checkLoopback is the loopback-only URL check serve's tests exercise (run/load's).
var checkLoopback = runload.CheckLoopback
