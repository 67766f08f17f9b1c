package cli

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// TestSystemsDispatch: every command reaches the right system through the registry, for
// PPipe and PARD plans alike.
func TestSystemsDispatch(t *testing.T) {
	repoRoot(t)
	dir := t.TempDir()
	pardPlan := filepath.Join(dir, "pard.json")
	code, stdout, stderr := runCLI(t, "solve", "-q", "--deterministic", "--profile", "testdata/pard/profile.json",
		"--cluster", "testdata/pard/cluster.json", "--workload", "testdata/pard/workload.json", "-o", pardPlan)
	skipWithoutHiGHS(t, stderr)
	if code != 0 {
		t.Fatalf("solve pard: exit %d: %s%s", code, stdout, stderr)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"check pard", []string{"check", pardPlan}, 0, []string{"ok   " + pardPlan + ": verify: pard plan"}},
		{"check pard golden", []string{"check", pardPlan, "--golden", pardPlan}, 0, []string{"GPUs vs", "provisioned for"}},
		{"check pard resolve", []string{"check", pardPlan, "--resolve"}, 0, []string{"resolve: app"}},
		{"simulate pard default policy", []string{"simulate", pardPlan, "--load", "0.5", "--duration", "2s", "-O", "json"}, 0, []string{`"policy": "pard"`}},
		{"pard plan with a ppipe policy", []string{"simulate", pardPlan, "--policy", "ppipe", "--load", "0.5", "--duration", "1s"}, ExitUsage,
			[]string{"policy ppipe serves ppipe plans; the plan's pard section is served by", "nexus"}},
		{"ppipe plan with a pard policy", []string{"simulate", "testdata/golden/demo-ppipe.json", "--policy", "nexus", "--load", "0.5", "--duration", "1s"}, ExitUsage,
			[]string{"policy nexus serves pard plans; the plan's ppipe section is served by ppipe, ppipe-paper, reactive"}},
		{"flag of another planner", []string{"solve", "-q", "--profile", "testdata/pard/profile.json", "--cluster", "testdata/pard/cluster.json",
			"--workload", "testdata/pard/workload.json", "--max-partitions", "2", "-o", filepath.Join(dir, "x.json")}, ExitUsage,
			[]string{"--max-partitions: the pard planner (chosen by the workload's sections) does not take it"}},
		{"strategy of another planner", []string{"solve", "-q", "--profile", "testdata/pard/profile.json", "--cluster", "testdata/pard/cluster.json",
			"--workload", "testdata/pard/workload.json", "--strategy", "np", "-o", filepath.Join(dir, "x.json")}, ExitUsage,
			[]string{`--strategy "np": the pard planner takes pard`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.code {
				t.Fatalf("%v: exit %d, want %d\n%s%s", tc.args, code, tc.code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout+stderr, w) {
					t.Errorf("%v: output lacks %q:\n%s%s", tc.args, w, stdout, stderr)
				}
			}
		})
	}
}

// TestCheckGoldenPerModel: a multi-model plan whose one model lost throughput fails the
// golden comparison even though the max-min objective did not change.
func TestCheckGoldenPerModel(t *testing.T) {
	repoRoot(t)
	golden := "testdata/golden/ppipe-2models.json"
	p, err := formats.ReadInto[*formats.Plan](golden, intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	if len(ppipesec.PlanOf(p).Models) < 2 {
		t.Fatalf("%s: want a multi-model plan", golden)
	}
	// Lower the model with the most headroom over the worst weighted throughput (what each
	// model serves within its SLO, the plan's stated throughput), halfway: the objective
	// stays, only the per-model comparison can catch it. Its prediction says the same, so
	// the plan is consistent and fails on the comparison alone.
	models := ppipesec.PlanOf(p).Models
	best, worst := 0, math.Inf(1)
	for i, m := range models {
		worst = math.Min(worst, m.ThroughputRPS/m.Weight)
		if m.ThroughputRPS/m.Weight > models[best].ThroughputRPS/models[best].Weight {
			best = i
		}
	}
	m := &models[best]
	m.ThroughputRPS = worst*m.Weight + (m.ThroughputRPS-worst*m.Weight)*0.5
	for i := range p.Prediction.Apps {
		if p.Prediction.Apps[i].Name == m.Model {
			p.Prediction.Apps[i].SustainedRPS = m.ThroughputRPS
		}
	}
	changed := filepath.Join(t.TempDir(), "changed.json")
	data, err := formats.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := formats.WriteAtomic(changed, data); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "check", changed, "--golden", golden)
	if code != ExitFailure || !strings.Contains(stdout, "FAIL "+changed+": golden "+golden+": model "+m.Model+": throughput") {
		t.Fatalf("exit %d, want 1 with a per-model failure for %s:\n%s%s", code, m.Model, stdout, stderr)
	}
}
