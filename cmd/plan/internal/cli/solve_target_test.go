package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
)

// TestSolveTargetKeptOrRefused: a solve that cannot meet its accuracy or latency
// target on the GPUs given exits 2, writes nothing, and names the miss, the best attainable
// value and what would reach the target; one that meets it writes the plan;
// --accuracy-margin plans above the target (`--strategy dynba --slo 10s
// --accuracy 0.84` printed "optimal, objective 0.81" and exited 0; PPipe below a model's
// rate_rps, QLM and DyOrc with more load than the cluster serves did the same).
func TestSolveTargetKeptOrRefused(t *testing.T) {
	repoRoot(t)
	dir := t.TempDir()
	cascade := []string{"--profile", "testdata/cascade/profile.json", "--cluster", "testdata/cascade/cluster.yaml", "--workload", "testdata/cascade/workload-small.yaml"}
	cases := []struct {
		name   string
		inputs []string // default: cascade
		args   []string
		code   int
		stderr []string
		minObj float64
	}{
		{name: "dynba below the accuracy target", args: []string{"--strategy", "dynba", "--slo", "10s", "--accuracy", "0.84"}, code: 2,
			stderr: []string{"--accuracy 0.84: SLO cannot be met: accuracy 0.8100 < 0.8400", "weighted accuracy 0.8100",
				"no GPU count reaches it: the strategy's most accurate cascade reaches 0.8100"}},
		{name: "overloaded on one GPU", args: []string{"--accuracy", "0.81", "--gpus", "1"}, code: 2,
			stderr: []string{"gear 3 (QPS 7000) overloaded", "the best plan on 1 GPU(s)", "--gpus 2 reaches it"}},
		{name: "latency above the SLO", args: []string{"--slo", "50ms", "--gpus", "1"}, code: 2,
			stderr: []string{"--slo 50ms: SLO cannot be met: gear 1 (QPS 3500): p95 latency 51 ms > 50ms", "no GPU count of the cluster (2) reaches it"}},
		{name: "met on one GPU", args: []string{"--slo", "100ms", "--gpus", "1"}},
		{name: "accuracy margin", args: []string{"--accuracy", "0.8", "--accuracy-margin", "0.015"}, minObj: 0.815},
		{name: "margin out of range", args: []string{"--accuracy", "0.8", "--accuracy-margin", "1"}, code: 2,
			stderr: []string{"--accuracy-margin: 1: must be in [0, 1)"}},
		{name: "ppipe below rate_rps", inputs: []string{"--profile", "testdata/ppipe/profile.json", "--cluster", "testdata/ppipe/cluster.yaml", "--workload", "testdata/ppipe/workload-rate.yaml"},
			code: 2, stderr: []string{"testdata/ppipe/workload-rate.yaml: models[0].rate_rps: 200: SLO cannot be met: the best plan on this cluster guarantees 67.7 req/s", "about 3.0× the cluster's GPUs"}},
		{name: "qlm overloaded", inputs: []string{"--profile", "testdata/qlm/profile.json", "--cluster", "testdata/qlm/cluster.yaml", "--workload", "testdata/qlm/workload-overload.yaml"},
			code: 2, stderr: []string{"testdata/qlm/workload-overload.yaml: llm_classes[0] (mistral-chat): rate_rps: SLO cannot be met: model mistral-7b's classes need", "one A100 instance serves at most 19.2 req/s", "about 32 instances would"}},
		{name: "qlm sustained", inputs: []string{"--profile", "testdata/qlm/profile.json", "--cluster", "testdata/qlm/cluster.yaml", "--workload", "testdata/qlm/workload.yaml"}},
		{name: "dyorc overloaded", inputs: []string{"--cluster", "testdata/dyorc/cluster-small.json", "--workload", "testdata/dyorc/small-overload.json"},
			code: 2, stderr: []string{"testdata/dyorc/small-overload.json: workflows.apps: rate_rps: SLO cannot be met: the busiest of the cluster's 4 GPUs has an expected load of 4.40", "about 18 GPUs"}},
		{name: "dyorc sustained", inputs: []string{"--cluster", "testdata/dyorc/cluster-small.json", "--workload", "testdata/dyorc/small.json"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, "plan"+string(rune('a'+i))+".json")
			inputs := c.inputs
			if inputs == nil {
				inputs = cascade
			}
			args := append(append([]string{"solve", "-o", out}, inputs...), c.args...)
			if c.code == 2 {
				// A refusal is explained by a search of relaxations bounded by the time
				// limit; a short one keeps the test's time to what it checks (the
				// explanation's own tests are internal/run/solve's).
				args = append(args, "--time-limit", "8s")
			}
			code, _, errs := runCLI(t, args...)
			skipWithoutHiGHS(t, errs)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, errs)
			}
			for _, s := range c.stderr {
				if !strings.Contains(errs, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errs)
				}
			}
			_, err := os.Stat(out)
			if c.code != 0 {
				if err == nil {
					t.Error("a refused solve wrote a plan")
				}
				return
			}
			p, err := formats.ReadInto[*formats.Plan](out, intree.Sections())
			if err != nil {
				t.Fatal(err)
			}
			if p.Provenance.Objective < c.minObj {
				t.Errorf("objective %g, want >= %g", p.Provenance.Objective, c.minObj)
			}
		})
	}
}
