package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/run/frontier"
)

// TestBadInputCost: --objective cost's bad inputs exit 2 naming file, field and value and write
// nothing: a negative price, a currency without default prices and a type left unpriced, a
// rate the available GPUs cannot serve (the message names the rates they serve: none of
// m0's and m1's together on 1 L4 + 1 P4, each model needing a GPU of its own), a cost
// objective without rates, an unknown objective, and a plan whose currency differs from a
// cluster's beside it.
func TestBadInputCost(t *testing.T) {
	pp := []string{"solve", "-q", "--profile", "testdata/ppipe/profile.json", "--objective", "cost"}
	runBadInput(t, []badInputCase{
		{name: "negative price", args: append(pp, "--cluster", "testdata/cost/cluster-negative-price.yaml", "--workload", "testdata/cost/workload.yaml"),
			keep: "plan.json", code: ExitUsage, want: []string{"cluster-negative-price.yaml", "gpus[0].price_per_hour", "-0.5", "must be >= 0"}},
		{name: "unpriced type in EUR", args: append(pp, "--cluster", "testdata/cost/cluster-eur-unpriced.yaml", "--workload", "testdata/cost/workload.yaml"),
			keep: "plan.json", code: ExitUsage, want: []string{"cluster-eur-unpriced.yaml", "price_per_hour", "P4", "EUR"}},
		{name: "available below the rate", args: append(pp, "--cluster", "testdata/cost/cluster-scarce.yaml", "--workload", "testdata/cost/workload.yaml"),
			keep: "plan.json", code: ExitUsage, solver: true, want: []string{"rate_rps", "available", "serve none of these rates together"}},
		{name: "no rate", args: append(pp, "--cluster", "testdata/cost/cluster-priced.yaml", "--workload", "testdata/cost/workload-norate.yaml"),
			keep: "plan.json", code: ExitUsage, solver: true, want: []string{"rate_rps", "required for --objective cost"}},
		{name: "dyorc available below the rate", args: []string{"solve", "-q", "--objective", "cost", "--cluster", "testdata/cost/cluster-dyorc-scarce.yaml",
			"--workload", "testdata/dyorc/small.json"}, keep: "plan.json", code: ExitUsage, solver: true,
			want: []string{"cluster-dyorc-scarce.yaml: gpus[type=L4].available: 1", "serve at most"}},
		{name: "unknown objective", args: []string{"solve", "-q", "--objective", "cheap"}, keep: "plan.json", code: ExitUsage, want: []string{`--objective "cheap"`}},
		{name: "pard available below the rate", args: []string{"solve", "-q", "--objective", "cost", "--profile", "testdata/pard/profile.json",
			"--cluster", "testdata/cost/cluster-pard-scarce.yaml", "--workload", "testdata/pard/workload.json"},
			keep: "plan.json", code: ExitUsage, solver: true, want: []string{"rate_rps", "serve at most"}},
		{name: "no sweep", args: []string{"frontier", "--profile", "testdata/cost/llm-profile.json"}, code: ExitUsage, want: []string{"exactly one of --rate, --slo and --accuracy"}},
		{name: "two sweeps", args: []string{"frontier", "--rate", "1", "--slo", "1s"}, code: ExitUsage, want: []string{"exactly one of"}},
		{name: "bad slo", args: []string{"frontier", "--slo", "fast"}, code: ExitUsage, want: []string{`--slo "fast"`}},
	})
}

// TestSolveCostPPipe: plan solve --objective cost writes a plan whose fleet is the GPUs it
// deploys at the cluster's prices, within the available counts, whose cluster is sized to
// them, that plan check passes; a cluster in another currency beside it fails validation.
func TestSolveCostPPipe(t *testing.T) {
	repoRoot(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "plan.json")
	code, _, stderr := rootRun(t, "solve", "-q", "--profile", "testdata/ppipe/profile.json", "--cluster", "testdata/cost/cluster-priced.yaml",
		"--workload", "testdata/cost/workload.yaml", "--objective", "cost", "-o", out)
	skipWithoutHiGHS(t, stderr)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "default on-demand list prices") || !strings.Contains(stderr, "P4 0.79 (GCE n1-standard-4 + 1×P4") || !strings.Contains(stderr, "2025-06") {
		t.Errorf("stderr does not say P4 was priced by default, with its source and date:\n%s", stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	p, err := formats.DecodeInto[*formats.Plan]("plan.json", b, intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	if p.Fleet == nil || p.Fleet.Objective != "cost" || p.Fleet.CostPerHour <= 0 {
		t.Fatalf("fleet = %+v", p.Fleet)
	}
	total := 0.0
	for _, g := range p.Fleet.GPUsUsed {
		total += g.PricePerHour * float64(g.Count)
		if pool, ok := p.Cluster.Pool(g.GPU); !ok || pool.Count != g.Count {
			t.Errorf("%s: fleet uses %d, plan cluster has %v", g.GPU, g.Count, pool)
		}
	}
	if d := total - p.Fleet.CostPerHour; d > 1e-6 || d < -1e-6 {
		t.Errorf("cost %g, Σ price·count %g", p.Fleet.CostPerHour, total)
	}
	if code, _, stderr := rootRun(t, "check", out); code != ExitOK {
		t.Errorf("plan check: exit %d:\n%s", code, stderr)
	}
	if code, _, stderr := rootRun(t, "validate", out, "testdata/cost/cluster-eur-unpriced.yaml"); code != ExitUsage || !strings.Contains(stderr, "fleet.currency") {
		t.Errorf("a USD plan beside a EUR cluster: exit %d, want %d naming fleet.currency:\n%s", code, ExitUsage, stderr)
	}
}

// TestFrontier: plan frontier sweeps the rate and reports at each point a least-cost fleet
// no dearer than the cheapest single GPU type, as JSON, CSV and PNG + SVG plots; a point no
// single type serves within its available count has no single-type cost.
// The second point is 1.5×: at 2× the summarize class misses 99% in simulation on every fleet
// within the 4 available A100s, so that point is now refused.
func TestFrontier(t *testing.T) {
	repoRoot(t)
	dir := t.TempDir()
	csvPath, plotPath := filepath.Join(dir, "f.csv"), filepath.Join(dir, "f")
	code, stdout, stderr := rootRun(t, "frontier", "--output", "json", "--profile", "testdata/cost/llm-profile.json", "--cluster", "testdata/cost/cluster-llm.yaml",
		"--workload", "testdata/cost/workload-llm-busy.yaml", "--rate", "1,1.5", "--csv", csvPath, "--plot", plotPath)
	skipWithoutHiGHS(t, stderr)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep frontier.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if len(rep.Points) != 2 || rep.System != "qlm" {
		t.Fatalf("report %+v", rep)
	}
	for _, p := range rep.Points {
		if p.Cost == nil {
			t.Fatalf("point %s: no fleet: %s", p.Label, p.Error)
		}
		if p.SingleCost != nil && *p.Cost > *p.SingleCost+1e-9 {
			t.Errorf("point %s: least cost %g above the single type's %g", p.Label, *p.Cost, *p.SingleCost)
		}
	}
	if p := rep.Points[0]; p.SingleCost == nil || p.SavingPct == nil || *p.SavingPct <= 0 {
		t.Errorf("1×: want a mix cheaper than any single type, got %+v", p)
	}
	if rep.Points[1].SingleCost != nil {
		t.Errorf("1.5×: no single type serves it within its available count, got %g", *rep.Points[1].SingleCost)
	}
	for _, f := range []string{csvPath, plotPath + ".png", plotPath + ".svg"} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	b, _ := os.ReadFile(csvPath)
	if lines := strings.Count(string(b), "\n"); lines != 3 {
		t.Errorf("csv has %d lines, want a header and 2 points:\n%s", lines, b)
	}
}

// TestSolveCostSystems: --objective cost plans every system's bundled workload on a priced
// cluster; each plan records a fleet within the available counts that plan check verifies
// and re-solves to the same cost.
func TestSolveCostSystems(t *testing.T) {
	repoRoot(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"pard", []string{"--profile", "testdata/pard/profile.json", "--cluster", "testdata/cost/cluster-pard.yaml", "--workload", "testdata/pard/workload.json"}},
		{"qlm", []string{"--profile", "testdata/cost/llm-profile.json", "--cluster", "testdata/cost/cluster-llm.yaml", "--workload", "testdata/cost/workload-llm.yaml"}},
		// DyOrc's cost search sizes by expected load, not latency: its least-cost fleet (L4s)
		// holds the image app's 5 s SLO for 61% of requests in simulation, so solve refuses
		// it; --accept-miss keeps this test on the fleet record.
		{"dyorc", []string{"--cluster", "testdata/cost/cluster-dyorc.yaml", "--workload", "testdata/dyorc/small.json", "--accept-miss"}},
		{"cascade", []string{"--profile", "testdata/cascade/profile.json", "--cluster", "testdata/cost/cluster-cascade.yaml", "--workload", "testdata/cascade/workload-small.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "plan.json")
			code, _, stderr := rootRun(t, append([]string{"solve", "-q", "--objective", "cost", "-o", out}, tc.args...)...)
			skipWithoutHiGHS(t, stderr)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			p, err := formats.DecodeInto[*formats.Plan]("plan.json", b, intree.Sections())
			if err != nil {
				t.Fatal(err)
			}
			if p.Fleet == nil || len(p.Fleet.GPUsUsed) == 0 || !(p.Fleet.CostPerHour > 0) {
				t.Fatalf("fleet %+v", p.Fleet)
			}
			if code, _, stderr := rootRun(t, "check", "--resolve", out); code != ExitOK {
				t.Errorf("plan check --resolve: exit %d:\n%s", code, stderr)
			}
		})
	}
}
