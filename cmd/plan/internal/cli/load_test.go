package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/serve"
)

// TestLoadReport: a real run's report says who decided each request's fate (server drops,
// late answers, cancelled requests) and nothing about simulated loads, and no \r progress is
// written when the output is not a terminal .
func TestLoadReport(t *testing.T) {
	s := demoServer(t)
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Shutdown(context.Background())
	code, out, stderr := rootRun(t, "load", ts.URL, "--rate", "200", "--duration", "300ms", "--connections", "8")
	if code != ExitOK {
		t.Fatalf("load: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"attainment", "on time", "late answers", "server drops (503)", "cancelled (no answer within --timeout", "client errors"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "simulated") || strings.Contains(out+stderr, "\r") {
		t.Errorf("report of a real run:\n%s\nstderr:\n%q", out, stderr)
	}
	// -O json: the simulator's report with the outcomes beside it.
	code, out, stderr = rootRun(t, "load", ts.URL, "--rate", "200", "--duration", "300ms", "--connections", "8", "-O", "json")
	var js struct {
		Points   []json.RawMessage `json:"points"`
		Outcomes *struct {
			Completed   int64 `json:"completed"`
			Late        int64 `json:"late"`
			ServerP99Ns int64 `json:"server_p99_ns"`
		} `json:"outcomes"`
	}
	if err := json.Unmarshal([]byte(out), &js); code != ExitOK || err != nil || len(js.Points) != 1 || js.Outcomes == nil ||
		(js.Outcomes.Completed+js.Outcomes.Late > 0) != (js.Outcomes.ServerP99Ns > 0) {
		t.Errorf("load -O json: exit %d %v %s\nstderr %s", code, err, out, stderr)
	}
	if code, _, stderr := rootRun(t, "load", ts.URL, "--connections", "0"); code != ExitUsage || !strings.Contains(stderr, "--connections") {
		t.Errorf("--connections 0: exit %d %s", code, stderr)
	}
}

// TestLoadWarmup: plan load excludes the requests arriving in its warm-up window from the
// report, by default by plan simulate's rule (20% of a short run) and as --warmup says, and
// refuses a window as long as the run.
func TestLoadWarmup(t *testing.T) {
	s := demoServer(t)
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Shutdown(context.Background())
	cases := []struct {
		name   string
		args   []string
		code   int
		warmUs int64
	}{
		{name: "none", args: []string{"--warmup", "0s"}},
		{name: "default", warmUs: 100_000},
		{name: "given", args: []string{"--warmup", "250ms"}, warmUs: 250_000},
		{name: "too long", args: []string{"--warmup", "500ms"}, code: ExitUsage},
	}
	var all int64
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"load", ts.URL, "--rate", "200", "--duration", "500ms", "--connections", "8", "-O", "json"}, c.args...)
			code, out, stderr := rootRun(t, args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, stderr)
			}
			if c.code != ExitOK {
				if !strings.Contains(stderr, "--warmup: 500ms: must be >= 0 and shorter than --duration 500ms") {
					t.Errorf("stderr: %s", stderr)
				}
				return
			}
			var rep struct {
				WarmupUs int64 `json:"warmup_us"`
				Points   []struct {
					Total struct {
						Requests int64 `json:"requests"`
					} `json:"total"`
				} `json:"points"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Points) != 1 {
				t.Fatalf("%v: %s", err, out)
			}
			if rep.WarmupUs != c.warmUs {
				t.Errorf("warmup_us %d, want %d", rep.WarmupUs, c.warmUs)
			}
			n := rep.Points[0].Total.Requests
			if c.warmUs == 0 {
				all = n
			} else if all > 0 && n >= all {
				t.Errorf("%d requests counted with a %d µs warm-up, %d without: the warm-up counted", n, c.warmUs, all)
			}
		})
	}
}

// TestLoadRateScale: plan load --rate-scale replays a trace at multiples of its recorded rate
// (a counts trace of mean 200 req/s: base 200 per model, load column = the scale), needs a
// trace and excludes --load.
func TestLoadRateScale(t *testing.T) {
	s := demoServer(t)
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Shutdown(context.Background())
	trace := filepath.Join(t.TempDir(), "trace.json")
	if err := os.WriteFile(trace, []byte(`{"apiVersion":"plan/v1","kind":"Trace","metadata":{"name":"t"},"counts":{"interval":"1s","counts":[100,300]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{name: "half the recorded rate", args: []string{"--trace", trace, "--rate-scale", "0.5"}},
		{name: "no trace", args: []string{"--rate-scale", "1"}, code: ExitUsage, stderr: "--rate-scale: needs a Trace file"},
		{name: "with --load", args: []string{"--trace", trace, "--rate-scale", "1", "--load", "1"}, code: ExitUsage, stderr: "--rate-scale: exclusive with --load"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"load", ts.URL, "--duration", "300ms", "--connections", "8", "-O", "json"}, c.args...)
			code, out, stderr := rootRun(t, args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, stderr)
			}
			if c.code != ExitOK {
				if !strings.Contains(stderr, c.stderr) {
					t.Errorf("stderr lacks %q: %s", c.stderr, stderr)
				}
				return
			}
			var rep struct {
				BaseRPS []struct {
					RPS float64 `json:"rps"`
				} `json:"base_rps"`
				Points []struct {
					Load float64 `json:"load"`
				} `json:"points"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Points) != 1 || len(rep.BaseRPS) == 0 {
				t.Fatalf("%v: %s", err, out)
			}
			if rep.Points[0].Load != 0.5 {
				t.Errorf("load %g, want 0.5", rep.Points[0].Load)
			}
			for _, b := range rep.BaseRPS {
				if b.RPS != 200 {
					t.Errorf("base_rps %+v, want the trace's recorded 200 req/s", rep.BaseRPS)
				}
			}
		})
	}
}

// TestLoadAppColumns: plan load shows each model's attainment beside the total for a plan
// serving several.
func TestLoadAppColumns(t *testing.T) {
	p, err := formats.ReadInto[*formats.Plan](goldenPlan("ppipe-2models.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	s, err := serve.New(serve.Options{Plan: p, Deploy: systems.Deploy, Policies: systems.Policies()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Shutdown(context.Background())
	code, out, stderr := rootRun(t, "load", ts.URL, "--load", "0.5", "--duration", "300ms", "--connections", "8")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, m := range ppipesec.PlanOf(p).Models {
		if !strings.Contains(out, "att "+m.Model) {
			t.Errorf("report lacks the attainment of %s:\n%s", m.Model, out)
		}
	}
}

// TestLoadSLOPercentile: plan load of a cascade plan gives the latency at its SLO's p95, as
// plan simulate does.
func TestLoadSLOPercentile(t *testing.T) {
	p, err := formats.ReadInto[*formats.Plan](goldenPlan("cascade-sentiment.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	s, err := serve.New(serve.Options{Plan: p, Deploy: systems.Deploy, Policies: systems.Policies()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Shutdown(context.Background())
	code, out, stderr := rootRun(t, "load", ts.URL, "--load", "0.02", "--duration", "300ms", "--connections", "8", "-O", "json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Points []struct {
			Total struct {
				Requests      int64 `json:"requests"`
				SLOPercentile *struct {
					Percentile float64 `json:"percentile"`
					LatencyUs  int64   `json:"latency_us"`
				} `json:"slo_percentile"`
			} `json:"total"`
		} `json:"points"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Points) != 1 {
		t.Fatalf("%v: %s", err, out)
	}
	tot := rep.Points[0].Total
	if tot.Requests == 0 || tot.SLOPercentile == nil || tot.SLOPercentile.Percentile != 0.95 || tot.SLOPercentile.LatencyUs <= 0 {
		t.Errorf("total %+v (slo_percentile %+v), want the p95 of the measured requests", tot, tot.SLOPercentile)
	}
}

// TestLoadPlanFile: a KServe v2 server that does not answer GET /v1/plan (here plan serve
// behind a front that hides it, as Triton or an exported KServe service would) is loaded
// with --plan FILE: the run takes the models, rates and SLOs from the file and sends every
// request to the server; without --plan the setup fails naming /v1/plan; a --plan that is
// no plan exits 2 naming the flag and the file.
func TestLoadPlanFile(t *testing.T) {
	s := demoServer(t)
	var planGets atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/plan" {
			planGets.Add(1)
			http.NotFound(w, r)
			return
		}
		s.ServeHTTP(w, r)
	}))
	defer ts.Close()
	defer s.Shutdown(context.Background())
	args := []string{"load", ts.URL, "--rate", "200", "--duration", "300ms", "--connections", "8", "-O", "json"}
	if code, _, stderr := rootRun(t, args...); code != ExitUsage || !strings.Contains(stderr, "/v1/plan") {
		t.Errorf("without --plan: exit %d, want %d naming /v1/plan: %s", code, ExitUsage, stderr)
	}
	code, out, stderr := rootRun(t, append(args, "--plan", demoPlanPath)...)
	var js struct {
		Points []struct {
			Total struct {
				Requests  int64   `json:"requests"`
				Completed int64   `json:"completed"`
				Attain    float64 `json:"attainment"`
			} `json:"total"`
		} `json:"points"`
	}
	if err := json.Unmarshal([]byte(out), &js); code != ExitOK || err != nil || len(js.Points) != 1 || js.Points[0].Total.Requests == 0 {
		t.Fatalf("--plan: exit %d %v %s\nstderr %s", code, err, out, stderr)
	}
	if n := planGets.Load(); n != 1 {
		t.Errorf("GET /v1/plan asked %d times, want once (the run without --plan)", n)
	}
	bad := filepath.Join(t.TempDir(), "not-a-plan.json")
	if err := os.WriteFile(bad, []byte(`{"apiVersion":"plan/v1","kind":"Cluster"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := rootRun(t, append(args, "--plan", bad)...); code != ExitUsage || !strings.Contains(stderr, "--plan") || !strings.Contains(stderr, "not-a-plan.json") {
		t.Errorf("--plan of a cluster: exit %d, want %d naming the flag and file: %s", code, ExitUsage, stderr)
	}
}

// demoServer is plan serve on the demo plan (emulated workers), not yet listening.
func demoServer(t *testing.T) *serve.Server {
	t.Helper()
	p, err := formats.ReadInto[*formats.Plan](demoPlanPath, intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	s, err := serve.New(serve.Options{Plan: p, Deploy: systems.Deploy, Policies: systems.Policies()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
