package cli

import (
	"encoding/json"
	"math"
	"path/filepath"
	"testing"
)

// TestSteadyPlanAttainment: a steady plan's attainment at load 1 varies by less than one
// point between a 10 s and a 60 s run once the default warm-up is excluded; without it the
// 10 s run reads its start-up as misses (the cascade of testdata/cascade/workload.yaml: 94.4%
// at 10 s, 99.1% at 60 s).
func TestSteadyPlanAttainment(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 70 s at 14,000 req/s")
	}
	repoRoot(t)
	plan := filepath.Join(t.TempDir(), "cascade.json")
	code, _, errs := runCLI(t, "solve", "--profile", "testdata/cascade/profile.json", "--cluster", "testdata/cascade/cluster.yaml",
		"--workload", "testdata/cascade/workload.yaml", "-o", plan, "-q")
	skipWithoutHiGHS(t, errs)
	if code != 0 {
		t.Fatalf("solve: exit %d: %s", code, errs)
	}
	att := func(args ...string) float64 {
		t.Helper()
		code, out, errs := runCLI(t, append([]string{"simulate", plan, "--load", "1", "-q", "-O", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("simulate %v: exit %d: %s", args, code, errs)
		}
		var rep struct {
			Points []struct {
				Total struct {
					Attainment float64 `json:"attainment"`
				} `json:"total"`
			} `json:"points"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Points) != 1 {
			t.Fatalf("simulate %v: %v", args, err)
		}
		return rep.Points[0].Total.Attainment
	}
	long := att("--duration", "60s")
	short := att("--duration", "10s")
	if d := math.Abs(long - short); d >= 0.01 {
		t.Errorf("attainment %.4f at 10s, %.4f at 60s: %.2f points apart, want < 1", short, long, 100*d)
	}
	// The control: counting the start-up moves the short run by more than a point, so the
	// comparison above measures the warm-up, not a plan without a start-up.
	if cold := att("--duration", "10s", "--warmup", "0s"); math.Abs(long-cold) < 0.01 {
		t.Errorf("attainment %.4f at 10s without warm-up, %.4f at 60s: the plan has no start-up to exclude", cold, long)
	}
}
