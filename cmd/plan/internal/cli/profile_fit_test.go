package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
)

// TestNoisyProfilePlansSanely: a profile with an injected dip (bert-base at batch 40, 60% of
// its neighbours) and a falling last pair (bert-tiny's batch 64 at half of batch 63, which
// extended by its slope went below zero) plans the gears of the clean profile, warns naming
// both points, and simulates at load 1 with every request in its SLO and the SLO's p95
// reported; a profile without a
// measured batch for a model the workload uses exits 2 (issue 31 item 1).
func TestNoisyProfilePlansSanely(t *testing.T) {
	repoRoot(t)
	dir := t.TempDir()
	solve := func(profile, out string) (int, string, string) {
		return runCLI(t, "solve", "--profile", profile, "--cluster", "testdata/cascade/cluster.yaml",
			"--workload", "testdata/cascade/workload-small.yaml", "--deterministic", "-o", out)
	}
	clean := filepath.Join(dir, "clean.json")
	if code, _, errs := solve("testdata/cascade/profile.json", clean); code != 0 {
		t.Fatalf("clean solve: exit %d: %s", code, errs)
	}
	cases := []struct {
		name, profile string
		code          int
		stderr        []string
	}{
		{name: "noisy", profile: "testdata/cascade/profile-noisy.json", stderr: []string{
			"warning: testdata/cascade/profile-noisy.json: profile: model bert-tiny on V100 (vgpu 1): batch 64 measured 829.5 µs",
			"model bert-base on V100 (vgpu 1): batch 40 measured 26580 µs, 40% below the monotone fit of its neighbours (batch 39: 43380 µs, batch 41: 45220 µs)",
		}},
		{name: "no measured batch", profile: "testdata/cascade/profile-nobatch.json", code: 2, stderr: []string{
			`cascades[0].models[2]: "bert-base": the profile has no measured batch on V100 (vgpu 1)`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, c.name+".json")
			code, _, errs := solve(c.profile, out)
			skipWithoutHiGHS(t, errs)
			if code != c.code {
				t.Fatalf("solve: exit %d, want %d: %s", code, c.code, errs)
			}
			for _, s := range c.stderr {
				if !strings.Contains(errs, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errs)
				}
			}
			if c.code != 0 {
				if _, err := os.Stat(out); err == nil {
					t.Error("a refused solve wrote a plan")
				}
				return
			}
			if got, want := gearsOf(t, out), gearsOf(t, clean); got != want {
				t.Errorf("gears on the noisy profile:\n%s\nwant the clean profile's:\n%s", got, want)
			}
			code, stdout, errs := runCLI(t, "simulate", out, "--load", "1", "--duration", "2s", "-O", "json")
			if code != 0 {
				t.Fatalf("simulate: exit %d: %s", code, errs)
			}
			var rep struct {
				Points []struct {
					Total struct {
						Requests      int     `json:"requests"`
						Attainment    float64 `json:"attainment"`
						SLOPercentile *struct {
							Percentile float64 `json:"percentile"`
							Met        bool    `json:"met"`
						} `json:"slo_percentile"`
					} `json:"total"`
				} `json:"points"`
			}
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatal(err)
			}
			if len(rep.Points) != 1 || rep.Points[0].Total.Requests == 0 || rep.Points[0].Total.Attainment < 0.99 {
				t.Fatalf("simulate at load 1: %+v, want every request measured within its SLO", rep.Points)
			}
			// The report gives the latency at the SLO's own percentile (the workload's p95).
			if sp := rep.Points[0].Total.SLOPercentile; sp == nil || sp.Percentile != 0.95 || !sp.Met {
				t.Errorf("slo_percentile %+v, want p95 met", sp)
			}
		})
	}
}

// gearsOf is the plan's gears as decisions: QPS range, cascade, thresholds, shares and
// batch triggers.
func gearsOf(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Cascade struct {
			Placement json.RawMessage `json:"placement"`
			Gears     []struct {
				QLo     float64              `json:"q_lo"`
				Models  []string             `json:"models"`
				Thr     []float64            `json:"thr"`
				Share   map[string][]float64 `json:"share"`
				Trigger map[string]int       `json:"trigger"`
			} `json:"gears"`
		} `json:"cascade"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p.Cascade)
	return string(b)
}

// TestProfileWarnsNoisyPoints: plan profile names the points plan solve will leave out of
// its fit and writes the profile as measured (issue 31 item 1).
func TestProfileWarnsNoisyPoints(t *testing.T) {
	repoRoot(t)
	for _, c := range []struct {
		file  string
		warns int
	}{{"testdata/cascade/profile.json", 0}, {"testdata/cascade/profile-noisy.json", 2}} {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			doc, err := formats.ReadInto[*formats.Profile](c.file)
			if err != nil {
				t.Fatal(err)
			}
			before, _ := formats.Marshal(doc)
			var errb strings.Builder
			warnNoisyPoints(&App{Streams: Streams{Err: &errb}}, doc)
			if got := strings.Count(errb.String(), "warning: "); got != c.warns {
				t.Errorf("%d warnings, want %d:\n%s", got, c.warns, errb.String())
			}
			if after, _ := formats.Marshal(doc); string(after) != string(before) {
				t.Error("warning about the fit changed the profile")
			}
		})
	}
}
