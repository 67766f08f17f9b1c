package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimulateAutopilotSystems: the autopilot runs on a PARD and a DyOrc plan (the
// systems' capacity models, system.Sizing): over the first five minutes of the
// diurnal day (its rise from the trough), on a ladder of four rungs, it shrinks the plan
// and grows it again, keeps the SLOs and spends fewer GPU-hours than the static plan.
func TestSimulateAutopilotSystems(t *testing.T) {
	if testing.Short() {
		t.Skip("re-solves and simulates five minutes of traffic per system")
	}
	repoRoot(t)
	cases := []struct {
		system, plan, load string
	}{
		{"pard", "testdata/autopilot/pard-plan.json", "0.4"},
		{"dyorc", "testdata/autopilot/dyorc-plan.json", "0.3"},
		// The cost objective re-solves any system's rates, not only PPipe's models.
		{"pard-cost", "testdata/autopilot/pard-cost-plan.json", "0.4"},
	}
	for _, tc := range cases {
		t.Run(tc.system, func(t *testing.T) {
			code, stdout, stderr := rootRun(t, "simulate", tc.plan, "--autopilot", "--trace", "testdata/autopilot/day.json", "--load", tc.load,
				"--duration", "300s", "--autopilot-steps", "4", "-O", "json")
			skipWithoutHiGHS(t, stderr)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var rep autopilotSimReport
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatal(err)
			}
			a, s := rep.Autopilot, rep.Static
			t.Logf("autopilot %.4f %.3f GPU-h %d switches; static %.4f %.3f GPU-h", a.Attainment, a.GPUHours, a.Switches, s.Attainment, s.GPUHours)
			if a.Requests == 0 || a.Requests != s.Requests {
				t.Fatalf("requests: autopilot %d, static %d", a.Requests, s.Requests)
			}
			lo, hi := 1<<30, 0
			for _, seg := range a.Segments {
				lo, hi = min(lo, seg.GPUs), max(hi, seg.GPUs)
			}
			if a.Switches < 2 || lo >= hi {
				t.Errorf("%d switches over %d..%d GPUs: want the plan shrunk and grown again", a.Switches, lo, hi)
			}
			if a.Attainment < 0.99 || a.GPUHours >= s.GPUHours {
				t.Errorf("autopilot %.4f attainment at %.3f GPU-hours: want ≥ 0.99 below the static plan's %.3f", a.Attainment, a.GPUHours, s.GPUHours)
			}
		})
	}
}

// TestSimulateAutopilotRefused: plans whose capacity does not follow the GPUs of the ladder's
// rungs are refused up front (exit 2, naming the plan): PARD solved without --fill (the
// workload's rates on the fewest GPUs: every rung that fits gives the same plan) and
// CascadeServe (its gears cover the workload's qps_max on any GPUs).
func TestSimulateAutopilotRefused(t *testing.T) {
	repoRoot(t)
	dir := t.TempDir()
	cases := []struct {
		name  string
		solve []string
	}{
		{"pard without --fill", []string{"--profile", "testdata/pard/profile.json", "--cluster", "testdata/autopilot/pard-cluster.json", "--workload", "testdata/autopilot/pard-workload.json"}},
		{"cascade", []string{"--profile", "testdata/cascade/profile.json", "--cluster", "testdata/cascade/cluster.yaml", "--workload", "testdata/cascade/workload.yaml"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := filepath.Join(dir, fmt.Sprintf("plan%d.json", i))
			code, _, stderr := rootRun(t, append([]string{"solve", "--deterministic", "-o", plan}, tc.solve...)...)
			skipWithoutHiGHS(t, stderr)
			if code != 0 {
				t.Fatalf("solve: exit %d: %s", code, stderr)
			}
			code, stdout, stderr := rootRun(t, "simulate", plan, "--autopilot", "--trace", "testdata/autopilot/day.json", "--load", "0.4", "--autopilot-steps", "4")
			if code != ExitUsage || stdout != "" || !strings.Contains(stderr, plan+": autopilot: the plan's planned rates do not follow its GPUs") {
				t.Errorf("exit %d, stdout %q, stderr %s: want exit 2 naming the plan and why", code, stdout, stderr)
			}
		})
	}
}
