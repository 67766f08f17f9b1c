package cli

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/plan-dev/plan/internal/base/testmode"
)

// burstyTrace writes a synthetic bursty counts trace (1 s counts over 20 minutes) of the
// Twitter-derived series' kind, which has no license to be copied here: quiet spells of
// 30–120 s at 10–20 requests per second, busy spells of 20–90 s whose seconds draw from
// 10–60 (a 6× burst over the quiet level within a second). Seeded: the same file always.
func burstyTrace(t *testing.T, seed uint64) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 35))
	quiet := []int64{10, 10, 10, 20}
	busy := []int64{10, 20, 20, 30, 30, 40, 50, 60}
	var counts []int64
	for len(counts) < 1200 {
		for range 30 + rng.IntN(91) {
			counts = append(counts, quiet[rng.IntN(len(quiet))])
		}
		for range 20 + rng.IntN(71) {
			counts = append(counts, busy[rng.IntN(len(busy))])
		}
	}
	doc := map[string]any{"apiVersion": "plan/v1", "kind": "Trace", "metadata": map[string]any{"name": "bursty"},
		"counts": map[string]any{"interval": "1s", "counts": counts[:1200]}}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bursty.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestWriteBursty writes the bursty trace for measuring by hand (PLAN_BURSTY_OUT=FILE).
func TestWriteBursty(t *testing.T) {
	out := os.Getenv("PLAN_BURSTY_OUT")
	if out == "" {
		t.Skip("PLAN_BURSTY_OUT not set")
	}
	data, err := os.ReadFile(burstyTrace(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSimulateAutopilotTraces pins what the autopilot meets on real-shaped traces (its
// goals; bench/RESULTS.md "Autopilot on traces" has the measurements and why the rest is out of
// reach): on the Azure LLM conversation arrivals it is within 1 point of the plan solved
// for the peak on fewer GPU-hours, the plan solved for the mean below it; on a bursty
// trace within 1.5 points (the peak-following loop before the burst envelope trailed by
// 6.4, shrinking in every lull and meeting the bursts short).
func TestSimulateAutopilotTraces(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates millions of requests")
	}
	repoRoot(t)
	cases := []struct {
		name, trace, load string
		points, gpuHours  float64 // most points below the peak plan; most GPU-hours of its
		meanBelow         bool
		heavy             bool // make test-full only; the bursty trace stands for it in CI
	}{
		{"azure conversation", "testdata/autopilot/azure-conv.json", "0.25", 1, 0.85, true, true},
		{"bursty", burstyTrace(t, 1), "0.4", 1.5, 0.97, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.heavy {
				testmode.Heavy(t, "TestSimulateAutopilotTraces/bursty")
			}
			code, stdout, stderr := rootRun(t, "simulate", "testdata/serve/demo-plan.json", "--autopilot", "--trace", c.trace, "--load", c.load, "-O", "json")
			skipWithoutHiGHS(t, stderr)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var rep autopilotSimReport
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatal(err)
			}
			a, p, m := rep.Autopilot, rep.Peak, rep.Mean
			t.Logf("autopilot %.4f %.3f GPU-h %d switches; peak %.4f %.3f GPU-h; mean %.4f %.3f GPU-h", a.Attainment, a.GPUHours, a.Switches, p.Attainment, p.GPUHours, m.Attainment, m.GPUHours)
			if a.Requests == 0 || a.Requests != p.Requests || a.Requests != m.Requests {
				t.Fatalf("requests: autopilot %d, peak %d, mean %d", a.Requests, p.Requests, m.Requests)
			}
			if a.Attainment < p.Attainment-c.points/100 {
				t.Errorf("autopilot attainment %.4f more than %g points below the peak plan's %.4f", a.Attainment, c.points, p.Attainment)
			}
			if a.GPUHours > c.gpuHours*p.GPUHours {
				t.Errorf("autopilot %.3f GPU-hours > %.0f%% of the peak plan's %.3f", a.GPUHours, 100*c.gpuHours, p.GPUHours)
			}
			if c.meanBelow && m.Attainment >= a.Attainment {
				t.Errorf("the mean plan (%.4f) does not fall below the autopilot (%.4f)", m.Attainment, a.Attainment)
			}
		})
	}
}

// TestBadInputAutopilotBurst: --autopilot-burst outside [0, 1] exits 2 naming the flag.
func TestBadInputAutopilotBurst(t *testing.T) {
	base := []string{"simulate", "testdata/serve/demo-plan.json", "--trace", "testdata/autopilot/day.json", "--autopilot"}
	runBadInput(t, []badInputCase{
		{name: "above one", args: append(base[:len(base):len(base)], "--autopilot-burst", "1.5"), code: ExitUsage, want: []string{"--autopilot-burst 1.5: must be in [0, 1]"}},
		{name: "negative", args: append(base[:len(base):len(base)], "--autopilot-burst", "-0.5"), code: ExitUsage, want: []string{"--autopilot-burst -0.5: must be in [0, 1]"}},
		{name: "NaN", args: append(base[:len(base):len(base)], "--autopilot-burst", "NaN"), code: ExitUsage, want: []string{"--autopilot-burst: NaN: must be a finite number"}},
	})
}
