package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// TestBadInputRangesAndOutputs runs bad input that crosses files, out-of-range numbers and
// the output rule end to end: each exits 2 naming the file as given, the field and the
// value, and writes nothing (a time limit that finds no plan exits 1).
func TestBadInputRangesAndOutputs(t *testing.T) {
	const plan = "testdata/serve/demo-plan.json"
	const trace = "testdata/badinput/trace-unknown-model.json"
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "..", "..", plan), intree.Sections()) // runBadInput moves to the repository root
	if err != nil {
		t.Fatal(err)
	}
	ppipesec.PlanOf(p).Models[0].Pipelines[0].Partitions[0].StageLatencyUs = 1e308
	data, _ := formats.Marshal(p)
	huge := filepath.Join(t.TempDir(), "huge.json")
	if err := os.WriteFile(huge, data, 0o644); err != nil {
		t.Fatal(err)
	}
	runBadInput(t, []badInputCase{
		// A trace naming a model the plan does not serve.
		{name: "simulate trace against plan", args: []string{"simulate", plan, "--trace", trace, "--load", "0.5", "--duration", "1s", "--report", "$TMP/out"}, code: ExitUsage,
			want: []string{trace + `: requests[1].target: "nosuch": unknown target: not a model or application served by ` + plan + " (demo) (2 requests)"}, out: "out"},
		// Durations and rates beyond the engine's µs clock.
		{name: "simulate latency 1e308", args: []string{"simulate", huge, "--load", "0.5", "--duration", "1s"}, code: ExitUsage,
			want: []string{huge + ": ppipe.models[0].pipelines[0].partitions[0].stage_latency_us: 1e+308: must be <= 3.1536e+13"}},
		{name: "serve latency 1e308", args: []string{"serve", huge, "--addr", "127.0.0.1:0"}, code: ExitUsage,
			want: []string{huge + ": ppipe.models[0].pipelines[0].partitions[0].stage_latency_us: 1e+308: must be <= 3.1536e+13"}},
		{name: "validate latency 1e308", args: []string{"validate", huge}, code: ExitUsage,
			want: []string{huge + ": ppipe.models[0].pipelines[0].partitions[0].stage_latency_us: 1e+308: must be <= 3.1536e+13"}},
		// A solver time limit without any provisioning is no plan (exit 1), not bad input.
		{name: "pard time limit", args: []string{"solve", "-q", "--profile", "testdata/pard/profile.json", "--cluster", "testdata/pard/cluster.json",
			"--workload", "testdata/pard/workload.json", "--time-limit", "1ns", "-o", "$TMP/plan.json"}, code: ExitFailure, solver: true,
			want: []string{"no plan found within the time limit (1ns", "raise --time-limit", "nothing written"}, out: "plan.json"},
		// One output rule, checked before any work: the output may be created, the
		// directory it goes in must exist; "" is refused; the path is named as given.
		{name: "simulate report empty", args: []string{"simulate", plan, "--load", "0.5", "--duration", "1s", "--report", ""}, code: ExitUsage,
			want: []string{`--report: "": must not be empty`}},
		{name: "simulate report in a missing directory", args: []string{"simulate", plan, "--load", "0.5", "--duration", "1s", "--report", "$TMP/no/such/out"}, code: ExitUsage,
			want: []string{`--report: "`, `/no/such/out": `, "/no/such: no such directory"}, out: "no"},
		{name: "solve out in a missing directory", args: []string{"solve", "-q", "-o", "$TMP/no/plan.json"}, code: ExitUsage,
			want: []string{`--out: "`, "/no: no such directory"}, out: "no"},
		{name: "solve out empty", args: []string{"solve", "-q", "-o", ""}, code: ExitUsage, want: []string{"--out: must not be empty"}},
		// Errors name the path as given, not its base name.
		{name: "golden named as given", args: []string{"check", "testdata/ppipe/good-plan.json", "--golden", "testdata/ppipe/broken/count.json"}, code: ExitUsage,
			want: []string{"testdata/ppipe/broken/count.json: ppipe.models[0].pipelines[0].partitions[0].count: 0: must be >= 1"}},
	})
}
