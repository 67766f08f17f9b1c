package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// countsTrace writes a counts trace of n seconds repeating the pattern (requests per second).
func countsTrace(t *testing.T, dir, name string, n int, pattern ...int64) string {
	t.Helper()
	var counts []int64
	for len(counts) < n {
		counts = append(counts, pattern[len(counts)%len(pattern)])
	}
	doc := map[string]any{"apiVersion": "plan/v1", "kind": "Trace", "metadata": map[string]string{"name": name},
		"counts": map[string]any{"interval": "1s", "target": "sentiment", "counts": counts}}
	raw, _ := json.Marshal(doc)
	p := filepath.Join(dir, name+".json")
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSimulateTraceWindow: a trace file is replayed whole unless --duration is given (a
// 60 s counts trace was cut to the default 30 s silently); an explicit --duration shorter
// than the trace says on stderr what it cuts; the 5 M request cap is checked on the load
// point's real request count (--rate-scale on the trace's recorded rate, not the plan's
// peak × --duration).
func TestSimulateTraceWindow(t *testing.T) {
	plan := goldenPlan("cascade-sentiment.json")
	dir := t.TempDir()
	long := countsTrace(t, dir, "long", 60, 200, 400, 300, 100) // 60 s, 15,000 requests: 7,600 in the first 30 s
	huge := countsTrace(t, dir, "huge", 60, 100_000)            // 6 M requests as recorded
	short := filepath.Join("..", "..", "..", "..", "testdata", "cascade", "trace-counts.json")
	cases := []struct {
		name       string
		args       []string
		code       int
		durationUs int64
		stderr     string // wanted on stderr
		noStderr   string // not wanted on stderr
	}{
		{name: "whole trace by default", args: []string{"--trace", long, "--rate-scale", "1"}, durationUs: 60e6, noStderr: "cuts the trace"},
		{name: "whole trace under --load", args: []string{"--trace", long, "--load", "0.1"}, durationUs: 60e6, noStderr: "cuts the trace"},
		{name: "explicit --duration cuts, said on stderr", args: []string{"--trace", long, "--rate-scale", "1", "--duration", "30s"}, durationUs: 30e6,
			stderr: "simulate: --duration 30s cuts the trace long.json (1m0s recorded): its last 30s and 7400 of its 15000 requests (at the recorded rate) are not replayed"},
		{name: "explicit --duration past the end", args: []string{"--trace", short, "--rate-scale", "1", "--duration", "8s"}, durationUs: 8e6, noStderr: "cuts the trace"},
		{name: "a generator keeps the default", args: []string{"--load", "0.1"}, durationUs: 30e6, noStderr: "cuts the trace"},
		// 6 M requests as recorded: over the cap although the plan's 14,000 req/s × 30 s is not
		{name: "cap on the real count", args: []string{"--trace", huge, "--rate-scale", "1"}, code: 2,
			stderr: "--rate-scale 1 over 1m0s: 6e+06 requests in one load point: more than 5000000; shorten --duration or lower --rate-scale"},
		// 2,500 req/s × 20 over the trace's 4 s is 200,000 requests: within the cap, where the
		// plan's 14,000 req/s × 20 × 30 s (8.4 M) was refused
		{name: "rate-scale within the cap", args: []string{"--trace", short, "--rate-scale", "20"}, durationUs: 4e6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"simulate", plan, "-O", "json"}, c.args...)
			code, out, errs := rootRun(t, args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, errs)
			}
			if c.stderr != "" && !strings.Contains(errs, c.stderr) {
				t.Errorf("stderr lacks %q:\n%s", c.stderr, errs)
			}
			if c.noStderr != "" && strings.Contains(errs, c.noStderr) {
				t.Errorf("stderr has %q:\n%s", c.noStderr, errs)
			}
			if c.code != 0 {
				if out != "" {
					t.Errorf("partial output on exit %d: %s", c.code, out)
				}
				return
			}
			var rep struct {
				DurationUs int64 `json:"duration_us"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.DurationUs != c.durationUs {
				t.Errorf("replayed %d µs, want %d", rep.DurationUs, c.durationUs)
			}
		})
	}
}

// TestSimulateAccuracyPlan: a plan solved for an accuracy SLO reports its p95 and flags a
// load point whose accuracy falls below the target.
func TestSimulateAccuracyPlan(t *testing.T) {
	t.Chdir(filepath.Join("..", "..", "..", ".."))
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.json")
	code, _, stderr := rootRun(t, "solve", "--profile", "testdata/cascade/profile.json", "--cluster", "testdata/cascade/cluster.yaml",
		"--workload", "testdata/cascade/workload-small.yaml", "--accuracy", "0.81", "--qps-max", "5000", "-o", plan)
	skipWithoutHiGHS(t, stderr)
	if code != 0 {
		t.Fatalf("solve: exit %d: %s", code, stderr)
	}
	cases := []struct {
		name string
		load string
		want []string
		not  []string
		// extrapolation: the warning that the load runs past the plan's stated range
		extrapolation bool
	}{
		// at 14,000 req/s (the workload's qps_max, past the plan's 5,000) the cheapest gear
		// serves: 0.79 < 0.81
		{"below target", "1", []string{"p95 ms", "0.7900* at load 1.00", "* below the plan's accuracy target 0.8100 at load 1.00"}, nil, true},
		{"at target", "0.05", []string{"p95 ms", "at load 0.05"}, []string{"below the plan's accuracy target"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := rootRun(t, "simulate", plan, "--load", c.load, "--duration", "5s")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range c.not {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
			warned := strings.Contains(errs, "beyond the plan's stated range [0, 5000] req/s: extrapolation")
			if warned != c.extrapolation {
				t.Errorf("extrapolation warning %v, want %v:\n%s", warned, c.extrapolation, errs)
			}
		})
	}
	code, out, _ := rootRun(t, "simulate", plan, "--load", "1", "--duration", "5s", "-O", "json")
	var rep struct {
		AccuracyTarget float64 `json:"accuracy_target"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.AccuracyTarget != 0.81 {
		t.Errorf("report accuracy_target %g (exit %d), want 0.81", rep.AccuracyTarget, code)
	}
}
