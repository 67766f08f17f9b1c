package cli

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func goldenPlan(name string) string {
	return filepath.Join("..", "..", "..", "..", "testdata", "golden", name)
}

// TestSimulateWarmupAndLimit: the max load line names its target and warm-up window, a
// plan with headroom is swept past 1.0 when asked (or by default), explicit loads stay as
// given, and an application with too few requests for 99% is named on stderr.
func TestSimulateWarmupAndLimit(t *testing.T) {
	pard := goldenPlan("pard-4apps.json")
	qlm := filepath.Join("..", "..", "..", "..", "testdata", "export", "qlm", "plan.json")
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		out     []string // substrings of stdout
		errs    []string // substrings of stderr
		noErrs  string   // must not be in stderr
		minLoad float64  // the max load factor printed must exceed it (0: not checked)
	}{
		{name: "default warm-up named", args: []string{"simulate", pard, "--load", "0.5,1", "--duration", "2s"},
			out: []string{"max load factor at 99% attainment, warm-up 400ms excluded: 1.00"}},
		{name: "no warm-up", args: []string{"simulate", pard, "--load", "0.5", "--duration", "2s", "--warmup", "0s"},
			out: []string{"max load factor at 99% attainment: 0.50"}},
		{name: "headroom found", args: []string{"simulate", pard, "--load", "0.5,1", "--duration", "2s", "--find-limit"},
			out: []string{"warm-up 400ms excluded: "}, minLoad: 1},
		{name: "warm-up too long", args: []string{"simulate", pard, "--load", "1", "--duration", "2s", "--warmup", "2s"},
			code: 2, errs: []string{"--warmup: 2s: must be >= 0 and shorter than --duration 2s"}},
		{name: "few requests warned", args: []string{"simulate", qlm, "--load", "1", "--duration", "30s"},
			errs: []string{`warning: application "vicuna-chat" has 17 measured requests at load 1.00: too few for a 99% attainment (at least 100`}},
		{name: "passing low loads not warned", args: []string{"simulate", pard, "--load", "0.05,1", "--duration", "2s"},
			noErrs: "warning"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, append(tc.args, "-q")...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, errs)
			}
			for _, s := range tc.out {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tc.errs {
				if !strings.Contains(errs, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errs)
				}
			}
			if tc.noErrs != "" && strings.Contains(errs, tc.noErrs) {
				t.Errorf("stderr has %q:\n%s", tc.noErrs, errs)
			}
			if tc.minLoad > 0 {
				m := regexp.MustCompile(`max load factor[^:]*: ([0-9.]+)`).FindStringSubmatch(out)
				if m == nil {
					t.Fatalf("no max load factor in:\n%s", out)
				}
				if v, _ := strconv.ParseFloat(m[1], 64); v <= tc.minLoad {
					t.Errorf("max load factor %g, want > %g:\n%s", v, tc.minLoad, out)
				}
			}
		})
	}
}

// TestSimulateExplicitLoadsKept: an explicit --load list is swept as given, without the
// find-limit extension.
func TestSimulateExplicitLoadsKept(t *testing.T) {
	code, out, errs := runCLI(t, "simulate", goldenPlan("pard-4apps.json"), "--load", "0.5,1", "--duration", "2s", "-q", "-O", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep struct {
		Points []struct {
			Load float64 `json:"load"`
		} `json:"points"`
		WarmupUs int64 `json:"warmup_us"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Points) != 2 || rep.Points[1].Load != 1 {
		t.Errorf("points %+v, want loads 0.5 and 1 only", rep.Points)
	}
	if rep.WarmupUs != 400_000 {
		t.Errorf("warmup_us %d, want 400000 (20%% of 2s: 5 × the largest SLO and 2s are longer)", rep.WarmupUs)
	}
}
