package cli

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/serve/openai"
)

// TestLoadOpenAI: `plan load --openai` against plan serve on the bundled QLM plan reports
// TTFT, TPOT, ITL and E2E in text and JSON, and refuses bad input with exit 2 naming the flag,
// or the trace file and field.
func TestLoadOpenAI(t *testing.T) {
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "..", "..", "testdata", "openai", "qlm-plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	fe := openai.New(dq.Kind)
	fe.NewQueue = func() (openai.Queue, error) { return openai.NewMemQueue(), nil }
	s, err := serve.New(serve.Options{Plan: p, Deploy: systems.Deploy, Policies: systems.Policies(), Frontends: []serve.Frontend{fe}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Shutdown(context.Background())
	args := []string{"load", "--openai", ts.URL, "--model", "mistral-chat", "--rate", "20", "--max-requests", "4", "--input-tokens", "30", "--output-tokens", "3"}
	code, out, stderr := rootRun(t, args...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"/v1/completions (open-loop, poisson at 20 req/s)", "TTFT", "TPOT", "ITL", "E2E", "output tok/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	code, out, stderr = rootRun(t, append(args, "--chat", "-O", "json")...)
	var rep struct {
		Endpoint     string `json:"endpoint"`
		Completed    int    `json:"completed"`
		OutputTokens int    `json:"output_tokens"`
		TTFT         struct {
			N    int     `json:"n"`
			Mean float64 `json:"mean"`
		} `json:"ttft_ms"`
	}
	if err := json.Unmarshal([]byte(out), &rep); code != ExitOK || err != nil || rep.Endpoint != "/v1/chat/completions" ||
		rep.Completed != 4 || rep.OutputTokens != 12 || rep.TTFT.N != 4 || !(rep.TTFT.Mean > 0) {
		t.Errorf("-O json: exit %d %v %+v\n%s\nstderr %s", code, err, rep, out, stderr)
	}

	trace := filepath.Join(t.TempDir(), "bad-trace.json")
	if err := os.WriteFile(trace, []byte(`{"apiVersion":"plan/v1","kind":"Trace","metadata":{"name":"x"},"requests":[{"t_us":0,"target":"mistral-chat","input_tokens":4,"output_tokens":2},{"t_us":5,"input_tokens":4,"output_tokens":2}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"--openai", ts.URL, "--model", "m", "--concurrency", "-1"}, "--concurrency: -1"},
		{[]string{"--openai", ts.URL, "--model", "m", "--rate", "1", "--input-tokens", "0"}, "--input-tokens: 0"},
		{[]string{"--openai", ts.URL, "--model", "m", "--load", "0.5"}, "--load: not an --openai flag"},
		{[]string{"--openai", ts.URL, "--model", "m", "--rate", "2", "--concurrency", "2"}, "exclusive"},
		{[]string{"--openai", ts.URL, "--model", "m"}, "--rate: 0"},
		{[]string{"--openai", ts.URL, "--model", "m", "--rate", "NaN"}, "--rate: NaN"},
		{[]string{"--openai", ts.URL, "--model", "m", "--rate", "1", "--duration", "0s"}, "--duration: 0s"},
		{[]string{"--openai", "ftp://127.0.0.1:8000", "--model", "m", "--rate", "1"}, `--openai: "ftp://127.0.0.1:8000": must be an http:// or https:// URL`},
		{[]string{ts.URL, "--openai", ts.URL}, "not both"},
		{[]string{"--openai", ts.URL, "--trace", trace}, "bad-trace.json: requests[1].target: empty"},
	}
	for _, tc := range bad {
		code, out, stderr := rootRun(t, append([]string{"load"}, tc.args...)...)
		if code != ExitUsage || out != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 naming %q", tc.args, code, out, stderr, tc.want)
		}
	}
}
