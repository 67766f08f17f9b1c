package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestRateScale: --rate-scale replays a trace at multiples of its recorded rate (1.0 = as
// recorded: the counts trace's mean of 2,500 req/s), where --load 1 rescales it to the
// plan's 14,000 req/s; it needs a trace file and excludes --load.
func TestRateScale(t *testing.T) {
	plan := goldenPlan("cascade-sentiment.json")
	trace := filepath.Join("..", "..", "..", "..", "testdata", "cascade", "trace-counts.json")
	cases := []struct {
		name    string
		args    []string
		code    int
		offered []float64
		stderr  string
	}{
		{name: "as recorded", args: []string{"--trace", trace, "--rate-scale", "1"}, offered: []float64{2500}},
		{name: "scaled", args: []string{"--trace", trace, "--rate-scale", "0.5,2"}, offered: []float64{1250, 5000}},
		{name: "load rescales the trace to the plan", args: []string{"--trace", trace, "--load", "1"}, offered: []float64{14000}},
		{name: "no trace", args: []string{"--rate-scale", "1"}, code: 2, stderr: `--rate-scale: needs a Trace file (--trace FILE): "poisson" has no recorded rate`},
		{name: "with --load", args: []string{"--trace", trace, "--rate-scale", "1", "--load", "1"}, code: 2, stderr: "--rate-scale: exclusive with --load"},
		{name: "bad scale", args: []string{"--trace", trace, "--rate-scale", "x"}, code: 2, stderr: "--rate-scale: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"simulate", plan, "--duration", "1s", "-q", "-O", "json"}, c.args...)
			code, out, errs := runCLI(t, args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, errs)
			}
			if c.code != 0 {
				if !strings.Contains(errs, c.stderr) {
					t.Errorf("stderr lacks %q: %s", c.stderr, errs)
				}
				return
			}
			var rep struct {
				Points []struct {
					Total struct {
						OfferedRPS float64 `json:"offered_rps"`
					} `json:"total"`
				} `json:"points"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			var got []float64
			for _, p := range rep.Points {
				got = append(got, p.Total.OfferedRPS)
			}
			if len(got) != len(c.offered) {
				t.Fatalf("offered %v, want %v", got, c.offered)
			}
			for i := range got {
				if d := got[i] - c.offered[i]; d > 1e-6 || d < -1e-6 {
					t.Errorf("offered %v, want %v", got, c.offered)
				}
			}
		})
	}
}
