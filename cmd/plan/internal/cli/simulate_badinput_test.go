package cli

import "testing"

// TestBadInputSimulate: flag values and plan/policy mismatches that used to run (or be
// killed for memory) are refused up front with exit 2.
func TestBadInputSimulate(t *testing.T) {
	plan := "testdata/sim/one-gpu.json" // one `plan check` passes
	base := []string{"simulate", plan, "--load", "0.5", "--duration", "1s"}
	with := func(extra ...string) []string { return append(append([]string{}, base...), extra...) }
	runBadInput(t, []badInputCase{
		{name: "jitter NaN", args: with("--jitter", "NaN"), code: ExitUsage, want: []string{"--jitter: NaN: must be a finite number"}},
		{name: "negative parallel", args: with("--parallel", "-3"), code: ExitUsage, want: []string{"--parallel: -3: must be >= 0"}},
		{name: "report is a file", args: with("--report", "testdata/sim/mixed.json"), code: ExitUsage, want: []string{`--report: "testdata/sim/mixed.json": is not a directory`}},
		{name: "too many requests", args: with("--duration", "1000000h"), code: ExitUsage, want: []string{"requests in one load point", "shorten --duration"}},
		{name: "huge load", args: []string{"simulate", plan, "--load", "1e9", "--duration", "1s"}, code: ExitUsage, want: []string{"--load 1e+09"}},
		{name: "policy cannot serve plan", args: with("--policy", "pard"), code: ExitUsage, want: []string{"--policy: testdata/sim/one-gpu.json: policy does not serve this deployment: policy pard serves pard plans; the plan's ppipe section is served by ppipe, ppipe-paper, reactive"}},
		{name: "empty load range", args: []string{"simulate", plan, "--load", "0.9:0.1:0.1"}, code: ExitUsage, want: []string{"--load"}},
	})
}
