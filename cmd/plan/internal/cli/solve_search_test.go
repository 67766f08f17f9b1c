package cli

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
)

// The deployment search (plan solve --objective cost --search, planner/llmdeploy) on the
// bundled two-GPU-type example: Llama-3.1-8B chat and Llama-3.1-70B RAG on H100 servers and
// L40S VMs.
// searchArgs solve the example with a time limit no busy test machine reaches (20 s of wall
// time idle, 60 s beside the other test packages on 2 cores): a deadline that binds cuts the
// capacity and headroom searches short, and the plan then differs from the golden.
var searchArgs = []string{"solve", "--objective", "cost", "--search", "--deterministic", "--time-limit", "10m",
	"--workload", "testdata/llmdeploy/workload.yaml", "--cluster", "testdata/llmdeploy/cluster.yaml"}

const (
	searchGoldenPlan = "testdata/llmdeploy/golden/plan.json"
	searchGoldenOut  = "testdata/llmdeploy/golden/solve.txt"
)

// TestSolveSearchGolden: the plan and what solve prints (the plan's tables on stdout; the
// candidates, the comparison fleets and the engine flags on stderr) are byte-identical to
// the goldens (-update rewrites them), and check re-solves the plan to the same fleet.
func TestSolveSearchGolden(t *testing.T) {
	// 30-45 s on 2 cores, run in every `make test`: a golden only the heavy set checked
	// drifted from a fresh solve without anyone noticing.
	repoRoot(t)
	out := filepath.Join(t.TempDir(), "plan.json")
	if *update {
		out = searchGoldenPlan
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := runCLI(t, append(searchArgs, "-o", out)...)
	skipWithoutHiGHS(t, stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	text := strings.ReplaceAll(stdout+"--- stderr\n"+stderr, out, "PLAN")
	if *update {
		if err := os.WriteFile(searchGoldenOut, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ got, golden string }{{text, searchGoldenOut}} {
		want, err := os.ReadFile(c.golden)
		if err != nil {
			t.Fatal(err)
		}
		if c.got != string(want) {
			t.Errorf("solve's output differs from %s (go test ./cmd/plan/internal/cli -run SolveSearchGolden -update):\n%s", c.golden, c.got)
		}
	}
	got, _ := os.ReadFile(out)
	want, err := os.ReadFile(searchGoldenPlan)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from a fresh solve (-update rewrites it)", searchGoldenPlan)
	}
	for _, w := range []string{"TTFT P99", "TPOT P99", "TOK/S/GPU", "$/M TOK", "aggregated TP1 only", "aggregated TP8 only", "H100 only", "L40S only",
		"--tensor-parallel-size", "--max-num-batched-tokens"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q", w)
		}
	}
	code, stdout, stderr = runCLI(t, "check", searchGoldenPlan, "--golden", searchGoldenPlan, "--resolve")
	if code != 0 {
		t.Errorf("check --resolve: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestSolveSearchHoldsTenTimesLonger: the plan meets every class's SLO percentiles in a
// simulation ten times longer than its prediction's, with another seed.
func TestSolveSearchHoldsTenTimesLonger(t *testing.T) {
	repoRoot(t)
	holdsTenTimesLonger(t, searchGoldenPlan)
}

// TestSolveSearchDisaggregated: on long documents with a tight TPOT, over single-GPU nodes
// (no tensor parallelism to shorten the steps instead), the search's fleet is disaggregated
// (prefill and decode instances over the cluster's KV link), cheaper than every
// aggregated-only comparison, passes plan check, and holds its SLOs ten times longer.
func TestSolveSearchDisaggregated(t *testing.T) {
	repoRoot(t)
	out := filepath.Join(t.TempDir(), "plan.json")
	code, _, stderr := runCLI(t, "solve", "--objective", "cost", "--search", "--deterministic", "--workload", "testdata/llmdeploy/workload-longdoc.yaml",
		"--cluster", "testdata/llmdeploy/cluster-1gpu.yaml", "-o", out)
	skipWithoutHiGHS(t, stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	p, err := formats.ReadInto[*formats.Plan](out, intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]int{}
	for _, in := range qlmsec.PlanOf(p).Instances {
		roles[in.Role]++
	}
	if roles[llmspec.RolePrefill] == 0 || roles[llmspec.RoleDecode] == 0 || roles[""] != 0 {
		t.Errorf("instances by role %v, want prefill and decode only", roles)
	}
	for _, w := range []string{"  prefill   ", "  decode    ", "disaggregated 2:1"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	for _, line := range strings.Split(stderr, "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[0] == "aggregated" && f[3] != "-" {
			if !strings.HasPrefix(f[4], "+") || f[4] == "+0.0%" {
				t.Errorf("an aggregated-only fleet is as cheap as the search's: %s", line)
			}
		}
	}
	if code, stdout, stderr := runCLI(t, "check", out); code != 0 {
		t.Errorf("check: exit %d\n%s%s", code, stdout, stderr)
	}
	// The roles reach the deployment: a producer (prefill) and a consumer (decode) service.
	dir := filepath.Join(t.TempDir(), "kserve")
	if code, _, stderr := runCLI(t, "export", out, "--to", "kserve", "-o", dir); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	var all strings.Builder
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		all.Write(b)
	}
	for _, w := range []string{`"kv_role":"kv_producer"`, `"kv_role":"kv_consumer"`} {
		if !strings.Contains(all.String(), w) {
			t.Errorf("the export lacks %s", w)
		}
	}
	holdsTenTimesLonger(t, out)
}

// holdsTenTimesLonger simulates plan for ten times its prediction's span with seed 7 and
// requires every class's SLOs at their percentiles.
func holdsTenTimesLonger(t *testing.T, plan string) {
	t.Helper()
	p, err := formats.ReadInto[*formats.Plan](plan, intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	span := math.Round(10 * p.Prediction.DurationS)
	code, stdout, stderr := runCLI(t, "simulate", plan, "--load", "1", "--duration", formats.Duration(span*1e9).String(), "--seed", "7", "-O", "json", "-q")
	if code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, stderr)
	}
	var rep struct {
		Points []workload.Point `json:"points"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	classes := llmspec.ClassesOf(p.Provenance.Embedded.Workload)
	if len(rep.Points) != 1 || len(rep.Points[0].Apps) != len(classes) {
		t.Fatalf("want one point with %d classes: %s", len(classes), stdout[:min(len(stdout), 400)])
	}
	for i, cl := range classes {
		m := rep.Points[0].Apps[i]
		e2e, ttft, tpot := cl.Percentiles()
		us := func(d formats.Duration) dataplane.Time { return dataplane.Time(d.D().Microseconds()) }
		checks := workload.LLMChecks(workload.LLMSLOs{E2E: us(cl.SLO), TTFT: us(cl.TTFTSLO), TPOT: us(cl.TPOTSLO), E2EP: e2e, TTFTP: ttft, TPOTP: tpot}, &m)
		if len(checks) == 0 || !workload.AllMet(checks) {
			t.Errorf("class %s over %.0f s (seed 7, %d requests): %+v", cl.Name, span, m.Requests, checks)
		}
	}
}

func TestSolveSearchBadInput(t *testing.T) {
	base := []string{"solve", "--objective", "cost", "--search", "--cluster", "testdata/llmdeploy/cluster.yaml"}
	w := []string{"--workload", "testdata/llmdeploy/workload.yaml"}
	runBadInput(t, []badInputCase{
		{name: "TP beyond a server", args: append(append(append([]string{}, base...), w...), "--profile", "testdata/llmdeploy/profile-tp16.json", "-o", "$TMP/p.json"), code: ExitUsage, out: "p.json", solver: true,
			want: []string{"testdata/llmdeploy/profile-tp16.json: llms[0].gpu_count: 16: tensor-parallel size 16 exceeds the 8 H100 GPUs"}},
		{name: "TP not dividing the heads", args: append(append(append([]string{}, base...), w...), "--profile", "testdata/llmdeploy/profile-tp3.json", "-o", "$TMP/p.json"), code: ExitUsage, out: "p.json", solver: true,
			want: []string{"testdata/llmdeploy/profile-tp3.json: llms[0].gpu_count: 3:", "does not divide llama-3.1-8b's 32 attention heads"}},
		{name: "model fits no GPU type", args: []string{"solve", "--objective", "cost", "--search", "--cluster", "testdata/llmdeploy/cluster-l40s.yaml", "--workload", "testdata/llmdeploy/workload.yaml", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", solver: true, want: []string{`testdata/llmdeploy/workload.yaml: llm_classes[1].model: "llama-3.1-70b": fits no GPU type of the cluster (L40S)`}},
		{name: "percentile", args: append(append([]string{}, base...), "--workload", "testdata/llmdeploy/workload-badpct.yaml", "-o", "$TMP/p.json"), code: ExitUsage, out: "p.json",
			want: []string{"workload-badpct.yaml", "ttft_percentile", "p42"}},
		{name: "a class without a rate", args: append(append([]string{}, base...), "--workload", "testdata/llmdeploy/workload-rate0.yaml", "-o", "$TMP/p.json"), code: ExitUsage, out: "p.json",
			want: []string{"testdata/llmdeploy/workload-rate0.yaml: llm_classes[1].rate_rps: 0: the deployment search sizes a fleet for each class's rate: must be > 0"}},
		{name: "search without cost", args: []string{"solve", "--search", "--cluster", "testdata/llmdeploy/cluster.yaml", "--workload", "testdata/llmdeploy/workload.yaml", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", solver: true, want: []string{"--search: searches the least-cost fleet: give --objective cost"}},
		{name: "strategy with search", args: append(append(append([]string{}, base...), w...), "--strategy", "round-robin", "-o", "$TMP/p.json"),
			code: ExitUsage, out: "p.json", solver: true, want: []string{`--strategy: "round-robin": not with --search`}},
		{name: "memory too small", args: []string{"solve", "--objective", "cost", "--search", "--cluster", "testdata/llmdeploy/cluster-tiny.yaml", "--workload", "testdata/llmdeploy/workload.yaml", "-o", "$TMP/p.json"},
			code: ExitUsage, out: "p.json", solver: true, want: []string{`llm_classes[0].model: "llama-3.1-8b": fits no GPU type of the cluster (H100)`}},
	})
}

// TestSolveSearchExportsEngineFlags: the engine settings the search chose reach the
// deployment files (plan export reads them from the plan's embedded profiles).
func TestSolveSearchExportsEngineFlags(t *testing.T) {
	repoRoot(t)
	out := filepath.Join(t.TempDir(), "kserve")
	code, _, stderr := runCLI(t, "export", searchGoldenPlan, "--to", "kserve", "-o", out)
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	var all strings.Builder
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(out, e.Name()))
		all.Write(b)
	}
	p, err := formats.ReadInto[*formats.Plan](searchGoldenPlan, intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range p.Provenance.Embedded.Profiles[0].LLMs {
		for _, w := range []string{"--tensor-parallel-size=" + itoa(pr.GPUCount), "--max-num-batched-tokens=" + itoa(pr.Engine.MaxNumBatchedTokens), "--max-num-seqs=" + itoa(pr.Engine.MaxNumSeqs)} {
			if !strings.Contains(all.String(), w) {
				t.Errorf("%s on %s: the export lacks %s", pr.Model, pr.GPU, w)
			}
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
