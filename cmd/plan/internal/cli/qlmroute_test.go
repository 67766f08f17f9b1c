package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/plan-dev/plan/internal/base/goldencases"
)

// TestQLMCostMixAttainment: the least-cost mixed LLM fleet holds its SLOs in simulation as
// well as the single-type fleet (within one point of attainment at load 1.0, mean
// of three seeds). It needs both halves of the fix: buckets sized at their upper edges (sized
// at their centres, the bundled mixed plan held 88.5% against 98.8%) and the runtime routing
// each request size to the GPU types the ILP chose (qlm.routes; unrouted, short and long
// requests mix on every type: 98.1% against 100%).
func TestQLMCostMixAttainment(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join("..", "..", "..", "..", "testdata", "cost")
	prof, wl := filepath.Join(root, "llm-profile.json"), filepath.Join(root, "workload-llm-busy.yaml")
	one := filepath.Join(dir, "a100.yaml")
	if err := os.WriteFile(one, []byte("apiVersion: plan/v1\nkind: Cluster\nmetadata: {name: a100}\ngpus:\n  - {type: A100, count: 0, per_server: 8}\nnic_gbps: 100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(plan string) (cost float64, types map[string]bool) {
		t.Helper()
		raw, err := os.ReadFile(plan)
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			Fleet struct {
				Cost float64 `json:"cost_per_hour"`
			} `json:"fleet"`
			QLM struct {
				Instances []struct{ GPU string } `json:"instances"`
			} `json:"qlm"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		types = map[string]bool{}
		for _, in := range p.QLM.Instances {
			types[in.GPU] = true
		}
		return p.Fleet.Cost, types
	}
	solve := func(cluster, out string) (cost float64, types map[string]bool) {
		t.Helper()
		if code, _, errs := runCLI(t, "solve", "--profile", prof, "--cluster", cluster, "--workload", wl, "--objective", "cost", "-o", out); code != 0 {
			t.Fatalf("solve %s: exit %d: %s", cluster, code, errs)
		}
		return read(out)
	}
	// The mixed fleet is the golden plan solved from these inputs (cluster-llm.yaml),
	// which TestSolveGolden holds byte-identical to a fresh solve: read, not solved again.
	if !slices.ContainsFunc(goldenCases, func(c goldencases.Case) bool {
		return c.File == "qlm-cost.json" && strings.Join(c.Args, " ") == "--profile testdata/cost/llm-profile.json --cluster testdata/cost/cluster-llm.yaml --workload testdata/cost/workload-llm-busy.yaml --objective cost"
	}) {
		t.Fatal("goldenCases' qlm-cost.json is no longer solved from this test's inputs")
	}
	mixed, single := filepath.Join("..", "..", "..", "..", "testdata", "golden", "qlm-cost.json"), filepath.Join(dir, "single.json")
	mc, mt := read(mixed)
	sc, _ := solve(one, single)
	if len(mt) < 2 {
		t.Fatalf("mixed fleet %v at %.2f/h: want a mix of types", mt, mc)
	}
	// Both plans now meet their targets in solve's own prediction; the mix the cost ILP
	// picks (sized in closed form, then topped up and given a rate margin until it meets)
	// is no longer the cheaper one: 14.81/h against A100 alone at 11.79/h. The ILP's
	// cheaper mixes (9.88-12.79/h) missed 99% in simulation. Logged, not asserted: a cost
	// search with the simulation in the loop is what would make the mix cheaper again.
	t.Logf("mixed fleet %v at %.2f/h, A100 alone %.2f/h", mt, mc, sc)
	att := func(plan string) float64 {
		t.Helper()
		var sum float64
		for _, seed := range []string{"1", "2", "3"} {
			code, out, errs := runCLI(t, "simulate", plan, "--load", "1", "--duration", "60s", "--seed", seed)
			if code != 0 {
				t.Fatalf("simulate %s: exit %d: %s", plan, code, errs)
			}
			a := -1.0
			for _, line := range strings.Split(out, "\n") {
				f := strings.Fields(line)
				if len(f) > 3 && f[0] == "1.00" && strings.HasSuffix(f[2], "%") {
					a, _ = strconv.ParseFloat(strings.TrimSuffix(f[2], "%"), 64)
					break
				}
			}
			if a < 0 {
				t.Fatalf("simulate %s: no attainment at load 1.00 in\n%s", plan, out)
			}
			sum += a
		}
		return sum / 3
	}
	ma, sa := att(mixed), att(single)
	t.Logf("mixed %v %.2f/h: %.2f%%; A100 alone %.2f/h: %.2f%%", mt, mc, ma, sc, sa)
	if ma < sa-1 {
		t.Errorf("mixed fleet attainment %.2f%%, single type %.2f%%: want within 1 point", ma, sa)
	}
}
