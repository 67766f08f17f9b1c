package cli

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
)

// TestNoisyProfilePlansSanely: a profile with an injected dip (bert-base at batch 40, 60% of
// its neighbours) and a falling last pair (bert-tiny's batch 64 at half of batch 63, which
// extended by its slope went below zero) plans the gears of the clean profile, warns naming
// both points, and simulates at load 1 with every request in its SLO and the SLO's p95
// reported; a profile without a
// measured batch for a model the workload uses exits 2.
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

// TestProfileFitPPipe: measured profiles are planned as measured. The bundled PPipe profile
// has no outlier: plan solve gives the byte-identical plan with and without the fit
// (--profile-fit none), recording fit: none. With one injected outlier (m1's block 0 at
// batch 1 measured 30,000 µs, above batch 2's 11,753: a stall) the outlier alone is replaced: the warning
// names file, model, GPU, batch, measured → used; the plan records fit: outliers and the
// measured value beside the one used, solves to within 1% of the clean profile's objective
// and plan check says which value it verified on; without the fit the dip is planned on as
// measured and the objective falls by more. A --profile-fit value it does not know exits 2 and writes nothing.
func TestProfileFitPPipe(t *testing.T) {
	repoRoot(t)
	dir := t.TempDir()
	solve := func(profile, out string, extra ...string) (int, string) {
		t.Helper()
		args := append([]string{"solve", "-q", "--deterministic", "--profile", profile, "--cluster", "testdata/ppipe/cluster.yaml",
			"--workload", "testdata/ppipe/workload.yaml", "--max-partitions", "2", "-o", out}, extra...)
		code, _, errs := runCLI(t, args...)
		skipWithoutHiGHS(t, errs)
		return code, errs
	}
	read := func(path string) []byte {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	clean := filepath.Join(dir, "clean.json")
	if code, errs := solve("testdata/ppipe/profile.json", clean); code != 0 {
		t.Fatalf("clean solve: exit %d: %s", code, errs)
	}
	cases := []struct {
		name, profile string
		// warn is the fitted solve's stderr (empty: no warning at all).
		warn string
		// fit is each embedded model's fit; replaced the entries recording raw values.
		fit      map[string]string
		replaced int
		check    string // a line plan check prints about the values used
		// sameWithoutFit: --profile-fit none gives the byte-identical plan.
		sameWithoutFit bool
	}{
		{name: "clean", profile: "testdata/ppipe/profile.json", fit: map[string]string{"m0": "none", "m1": "none"}, sameWithoutFit: true},
		{name: "outlier", profile: "testdata/ppipe/profile-outlier.json",
			warn: "warning: testdata/ppipe/profile-outlier.json: profile: model m1 on L4 (vgpu 1) block 0: batch 1 measured 30000 µs, 397% above the monotone fit of its neighbours (batch 2: 11752.6 µs): planning on 6032.1 µs",
			fit:  map[string]string{"m0": "none", "m1": "outliers"}, replaced: 1,
			check: "verify: profile fit (outliers): model m1 on L4 (vgpu 1) batch 1 block 0: measured 30000 µs, planned on 6032.1 µs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fitted, raw := filepath.Join(dir, c.name+".json"), filepath.Join(dir, c.name+"-none.json")
			code, errs := solve(c.profile, fitted)
			if code != 0 {
				t.Fatalf("solve: exit %d: %s", code, errs)
			}
			if c.warn == "" && strings.Contains(errs, "warning: ") || !strings.Contains(errs, c.warn) {
				t.Errorf("stderr:\n%s\nwant %q", errs, c.warn)
			}
			if code, errs := solve(c.profile, raw, "--profile-fit", "none"); code != 0 {
				t.Fatalf("solve --profile-fit none: exit %d: %s", code, errs)
			}
			if got := bytes.Equal(read(fitted), read(raw)); got != c.sameWithoutFit {
				t.Errorf("plan with the fit byte-identical to the plan without: %v, want %v", got, c.sameWithoutFit)
			}
			plan, err := formats.ReadInto[*formats.Plan](fitted, intree.Sections())
			if err != nil {
				t.Fatal(err)
			}
			replaced := 0
			for _, m := range plan.Provenance.Embedded.Profiles[0].Models {
				if m.Fit != c.fit[m.Name] {
					t.Errorf("model %s: fit %q, want %q", m.Name, m.Fit, c.fit[m.Name])
				}
				replaced += len(m.Replaced())
			}
			if replaced != c.replaced {
				t.Errorf("%d values replaced, want %d", replaced, c.replaced)
			}
			// The outlier replaced, the plan is the clean profile's within 1% (its replacement,
			// the batch-2-to-3 trend, is 1% below the clean value); as measured it is not.
			cleanObj := objectiveOf(t, clean)
			for _, f := range []struct {
				path  string
				close bool
			}{{fitted, true}, {raw, c.sameWithoutFit}} {
				if obj := objectiveOf(t, f.path); (math.Abs(obj-cleanObj) <= 0.01*cleanObj) != f.close {
					t.Errorf("%s: objective %.4g, clean profile's %.4g: within 1%% should be %v", filepath.Base(f.path), obj, cleanObj, f.close)
				}
			}
			code, out, errs := runCLI(t, "check", fitted, "--resolve")
			if code != 0 {
				t.Fatalf("check: exit %d\n%s%s", code, out, errs)
			}
			if c.check != "" && !strings.Contains(out, c.check) {
				t.Errorf("check output lacks %q:\n%s", c.check, out)
			}
			if c.check == "" && strings.Contains(out, "profile fit") {
				t.Errorf("check names a profile fit on a plan with none:\n%s", out)
			}
		})
	}
	t.Run("bad --profile-fit", func(t *testing.T) {
		out := filepath.Join(dir, "bad.json")
		code, errs := solve("testdata/ppipe/profile.json", out, "--profile-fit", "monotone")
		if want := `--profile-fit: "monotone": must be outliers or none`; code != 2 || !strings.Contains(errs, want) {
			t.Errorf("exit %d, stderr %q; want 2 and %q", code, errs, want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Error("a refused solve wrote a plan")
		}
	})
}

// objectiveOf is the plan's recorded objective.
func objectiveOf(t *testing.T, path string) float64 {
	t.Helper()
	p, err := formats.ReadInto[*formats.Plan](path, intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	return p.Provenance.Objective
}
