package serve

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/internal/base/promcheck"
)

// TestTritonMetrics: a DNN plan's /metrics has Triton's nv_inference_* families labelled
// model and version (ecosystem drop-in §2), with the identities Triton's users read:
// count/exec_count is the mean batch, request_duration_us and queue_duration_us are
// cumulative microseconds of the answered requests, and Triton's dashboard queries return
// data under Prometheus's engine (promtool, when installed).
func TestTritonMetrics(t *testing.T) {
	p := loadPlan(t, "demo-plan.json")
	_, ts := testServer(t, Options{Plan: p})
	scrape := func() string {
		code, body := get(t, ts.URL+"/metrics")
		if code != 200 {
			t.Fatal(code)
		}
		return string(body)
	}
	codes := concurrent(t, ts.URL+"/v2/models/demo/infer", 12, time.Millisecond)
	ok := 0
	for _, c := range codes {
		if c == 200 {
			ok++
		}
	}
	first := scrape()
	concurrent(t, ts.URL+"/v2/models/demo/infer", 12, time.Millisecond)
	text := scrape()
	for _, name := range TritonMetricNames {
		if name == "nv_inference_request_failure" {
			continue // a labelled family shows once it has a series: nothing failed
		}
		if !strings.Contains(text, "# TYPE "+name+" ") {
			t.Errorf("metric family %s missing", name)
		}
	}
	succ := metricValue(first, `nv_inference_request_success{model="demo",version="1"}`)
	if int(succ) != ok {
		t.Errorf("nv_inference_request_success %v, want the %d answered", succ, ok)
	}
	if d := metricValue(first, `nv_inference_request_duration_us{model="demo",version="1"}`); d <= 0 {
		t.Errorf("nv_inference_request_duration_us %v, want > 0", d)
	}
	if !strings.Contains(text, `nv_inference_pending_request_count{model="demo",version="1"} 0`) {
		t.Errorf("no pending gauge at 0")
	}
	// Every executed request is in one batch per stage: count ≥ exec_count ≥ 1 per model.
	for _, line := range strings.Split(text, "\n") {
		name, rest, _ := strings.Cut(line, "{")
		if name != "nv_inference_count" {
			continue
		}
		lbl, _, _ := strings.Cut(rest, "}")
		n := metricValue(text, "nv_inference_count{"+lbl+"}")
		e := metricValue(text, "nv_inference_exec_count{"+lbl+"}")
		if e < 1 || n < e {
			t.Errorf("{%s}: count %v, exec_count %v: want count ≥ exec_count ≥ 1", lbl, n, e)
		}
	}
	promcheck.RequirePromtool(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exprs := []string{
		`rate(nv_inference_queue_duration_us[5m]) / rate(nv_inference_request_success[5m])`,
		`rate(nv_inference_request_duration_us{model="demo",version="1"}[5m]) / rate(nv_inference_request_success{model="demo",version="1"}[5m])`,
		`rate(nv_inference_count[5m]) / rate(nv_inference_exec_count[5m])`,
		`rate(nv_inference_compute_infer_duration_us[5m])`,
		`sum by(model) (nv_inference_pending_request_count)`,
	}
	if err := promcheck.NonEmpty(ctx, [][]byte{[]byte(first), []byte(text)}, map[string]string{"job": "triton"}, exprs); err != nil {
		t.Fatal(err)
	}
}
