package cli

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// speedRow is one row of `plan bench speed -O json`.
type speedRow struct {
	Measure   string   `json:"measure"`
	Unit      string   `json:"unit"`
	Ours      *float64 `json:"ours"`
	Reference *float64 `json:"reference"`
	Ratio     *float64 `json:"ratio"`
	Target    string   `json:"target"`
	Met       *bool    `json:"met"`
}

// TestBenchSpeed runs `plan bench speed --quick` in-process at tiny sizes (the simulator at
// 2× instead of 16×, serve on a two-rate ladder of 300 ms windows, the demo LP) and checks
// the JSON rows' shape and the table's: every row named, a target, ours and (where there
// is a reference) the ratio positive finite numbers. Timings are never asserted.
func TestBenchSpeed(t *testing.T) {
	finite := func(p *float64) bool { return p != nil && *p > 0 && !math.IsInf(*p, 0) && !math.IsNaN(*p) }
	cases := []struct {
		name    string
		args    []string
		want    []string
		needRef bool // the reference is always here (the simulator's 1×, the floor)
	}{
		{"sim", []string{"--measure", "sim-pard,sim-qlm", "--scale", "2"}, []string{"sim-pard", "sim-qlm"}, true},
		{"serve", []string{"--measure", "serve", "--serve-rates", "50,100", "--serve-window", "300ms"}, []string{"serve-rate", "serve-cpu"}, true},
		// The native engine and native HiGHS may be missing from a test binary or machine:
		// the row still comes, with what it has.
		{"solver", []string{"--measure", "solver-lp-demo"}, []string{"solver-lp-demo"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"bench", "speed", "--quick", "-O", "json"}, c.args...)
			code, out, errs := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var rows []speedRow
			if err := json.Unmarshal([]byte(out), &rows); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if len(rows) != len(c.want) {
				t.Fatalf("got %d rows, want %v:\n%s", len(rows), c.want, out)
			}
			for i, r := range rows {
				if r.Measure != c.want[i] || r.Unit == "" || r.Met == nil ||
					!(strings.HasPrefix(r.Target, ">= ") || strings.HasPrefix(r.Target, "<= ")) {
					t.Errorf("row %d: %+v, want %s with a unit, a target and met", i, r, c.want[i])
				}
				if r.Ours != nil && !finite(r.Ours) {
					t.Errorf("%s: ours %v, want a positive finite number", r.Measure, *r.Ours)
				}
				if c.needRef && (!finite(r.Ours) || !finite(r.Reference) || !finite(r.Ratio)) {
					t.Errorf("%s: ours %v reference %v ratio %v, want positive finite numbers", r.Measure, r.Ours, r.Reference, r.Ratio)
				}
				if r.Ratio != nil && (!finite(r.Ratio) || r.Reference == nil || math.Abs(*r.Ratio - *r.Ours / *r.Reference) > 1e-9**r.Ratio) {
					t.Errorf("%s: ratio %v is not ours/reference (%v, %v)", r.Measure, *r.Ratio, r.Ours, r.Reference)
				}
				if r.Ratio == nil && *r.Met {
					t.Errorf("%s: met without a ratio", r.Measure)
				}
			}
		})
	}
	t.Run("table", func(t *testing.T) {
		code, out, errs := runCLI(t, "bench", "speed", "--quick", "--measure", "sim-pard", "--scale", "2")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		for _, w := range []string{"Speed ratios (quick run)", "measure", "floor/peer", "ratio", "target", "sim-pard", "events/CPU-s", ">= 0.9"} {
			if !strings.Contains(out, w) {
				t.Errorf("table lacks %q:\n%s", w, out)
			}
		}
	})
}

func TestBenchSpeedBadInput(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--measure", "sim-gpu"}, `--measure "sim-gpu"`},
		{[]string{"--scale", "1"}, "--scale 1"},
		{[]string{"--serve-rates", "0"}, "--serve-rates 0"},
		{[]string{"--serve-window", "-1s"}, "--serve-window"},
	}
	for _, c := range cases {
		args := append([]string{"bench", "speed", "--quick"}, c.args...)
		code, out, errs := runCLI(t, args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 mentioning %q", c.args, code, errs, out, c.want)
		}
	}
}
