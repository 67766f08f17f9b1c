package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
)

// TestSolveCheckArrivals: a plan is predicted, sized and checked under the arrival process
// --arrivals names. Planners size for mean rates, so burstier traffic than Poisson needs a
// plan that holds its SLO there: DyOrc's small workload holds 99% on Poisson and on Gamma
// arrivals with CV 2, and misses with CV 3 (a replication falls below the target, and no
// rate margin the cluster carries fixes it). The prediction records the arrivals, and plan
// check re-runs under them, or under others it is asked for (then without comparing the
// recorded prediction).
func TestSolveCheckArrivals(t *testing.T) {
	repoRoot(t)
	dir := t.TempDir()
	dyorc := []string{"--cluster", "testdata/dyorc/cluster-small.json", "--workload", "testdata/dyorc/small.json", "--deterministic"}
	golden := "testdata/golden/dyorc-small.json"
	written := filepath.Join(dir, "bursty2.json")
	cases := []struct {
		name     string
		args     []string
		code     int
		out, err []string
		records  string // the written plan's prediction.arrivals ("" = nothing written)
	}{
		{name: "solve bursty:2 holds", args: append([]string{"solve", "--arrivals", "bursty:2", "-o", written}, dyorc...),
			out: []string{"simulated 600 s of bursty:2 arrivals at its own rates", "meets its targets"}, records: "bursty:2"},
		{name: "check re-runs the recorded arrivals", args: []string{"check", written},
			out: []string{"image: predicted attainment", "(workload rates, bursty:2 arrivals)"}},
		{name: "solve bursty:3 misses", args: append([]string{"solve", "--arrivals", "bursty:3", "-o", filepath.Join(dir, "b3.json")}, dyorc...), code: 2,
			err: []string{"solving for 2× the rates", "in simulation of bursty:3 arrivals: image: predicted attainment", "it holds the target up to 7.5 req/s"}},
		{name: "check a Poisson plan on bursty:3", args: []string{"check", golden, "--arrivals", "bursty:3"}, code: 1,
			out: []string{"MISS", "image at 12 req/s, the rate the plan is sized for", "image: predicted attainment", "bursty:3 arrivals", "below the target in a replication"}},
		{name: "check a Poisson plan on mmpp", args: []string{"check", golden, "--arrivals", "mmpp"},
			out: []string{"(workload rates, mmpp arrivals)"}},
		{name: "solve: not an arrival process", args: append([]string{"solve", "--arrivals", "nosuch", "-o", filepath.Join(dir, "x.json")}, dyorc...), code: 2,
			err: []string{`--arrivals "nosuch": must be poisson, bursty[:CV] or mmpp`}},
		{name: "check: a trace file is no arrival process", args: []string{"check", golden, "--arrivals", "testdata/sim/trace.json"}, code: 2,
			err: []string{`--arrivals "testdata/sim/trace.json": must be poisson, bursty[:CV] or mmpp`}},
		{name: "solve: bad CV", args: append([]string{"solve", "--arrivals", "bursty:0", "-o", filepath.Join(dir, "y.json")}, dyorc...), code: 2,
			err: []string{`--arrivals "bursty:0": the coefficient of variation must be a number in [0.01, 100]`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(t, c.args...)
			skipWithoutHiGHS(t, errs)
			if code != c.code {
				t.Fatalf("exit %d, want %d:\n%s\n%s", code, c.code, out, errs)
			}
			for _, s := range c.out {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			for _, s := range c.err {
				if !strings.Contains(errs, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errs)
				}
			}
			if c.records == "" {
				return
			}
			p, err := formats.ReadInto[*formats.Plan](written, intree.Sections())
			if err != nil {
				t.Fatal(err)
			}
			if p.Prediction == nil || p.Prediction.Arrivals != c.records {
				t.Errorf("prediction.arrivals %v, want %q", p.Prediction, c.records)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "b3.json")); err == nil {
		t.Error("a solve that misses on bursty:3 wrote a plan")
	}
}
