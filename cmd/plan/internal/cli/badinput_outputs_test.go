package cli

import "testing"

// TestBadInputOutputsAndTraces: the second day's bad input end to end. Every output path
// (--report, --requests-out, --out, --csv, --plot) in a directory that does not exist, a
// trace from-trace cannot classify, and a gzip file cut short each exit 2 naming the file
// (or the flag) and the value, before any work, with no output written — not even the other
// outputs of the same run. testdata/badinput/truncated-trace.json.gz is the first 400 bytes
// of `gzip -9 -n testdata/fromtrace/llm-two-classes.json`.
func TestBadInputOutputsAndTraces(t *testing.T) {
	const plan = "testdata/serve/demo-plan.json"
	const gz = "testdata/badinput/truncated-trace.json.gz"
	const missing = `/no/such: no such directory`
	cost := []string{"--profile", "testdata/ppipe/profile.json", "--cluster", "testdata/cost/cluster-priced.yaml", "--workload", "testdata/cost/workload.yaml"}
	runBadInput(t, []badInputCase{
		{name: "simulate --report missing, --requests-out fine", args: []string{"simulate", plan, "--load", "0.5", "--duration", "1s",
			"--report", "$TMP/no/such/rep", "--requests-out", "$TMP/requests.jsonl"}, code: ExitUsage,
			want: []string{`--report: "`, missing}, out: "requests.jsonl"},
		{name: "simulate --requests-out missing, --report fine", args: []string{"simulate", plan, "--load", "0.5", "--duration", "1s",
			"--report", "$TMP/rep", "--requests-out", "$TMP/no/such/r.jsonl"}, code: ExitUsage,
			want: []string{"--requests-out: ", "/no/such/r.jsonl: its directory does not exist"}, out: "rep"},
		{name: "simulate --autopilot --report missing", args: append([]string{"simulate", plan, "--trace", "testdata/autopilot/step.json", "--load", "0.1059",
			"--report", "$TMP/no/such/ap"}, agreeArgs...), code: ExitUsage, want: []string{`--report: "`, missing}},
		{name: "simulate --llm --requests-out missing", args: []string{"simulate", "--llm", "--profile", "cmd/plan/internal/cli/testdata/engine/profile.json",
			"--trace", "cmd/plan/internal/cli/testdata/engine/trace.json", "--requests-out", "$TMP/no/such/r.jsonl"}, code: ExitUsage,
			want: []string{"--requests-out: ", "its directory does not exist"}},
		{name: "bench --report missing", args: []string{"bench", "solver", "--quick", "--report", "$TMP/no/such/b"}, code: ExitUsage,
			want: []string{`--report: "`, missing}},
		{name: "frontier --csv missing, --plot fine", args: append([]string{"frontier", "--rate", "0.5", "--csv", "$TMP/no/such/f.csv", "--plot", "$TMP/f"}, cost...),
			code: ExitUsage, want: []string{`--csv: "`, missing}, out: "f.png"},
		{name: "frontier --plot missing", args: append([]string{"frontier", "--rate", "0.5", "--plot", "$TMP/no/such/f"}, cost...),
			code: ExitUsage, want: []string{`--plot: "`, missing}},
		{name: "workload -o missing", args: []string{"workload", "from-trace", "testdata/fromtrace/llm-two-classes.json", "--slo", "20s", "-o", "$TMP/no/such/w.json"},
			code: ExitUsage, want: []string{`--out: "`, missing}},
		{name: "profile -o missing", args: []string{"profile", "--zoo", "resnet50", "--gpu", "L4", "-o", "$TMP/no/such/p.json"},
			code: ExitUsage, want: []string{`--out: "`, missing}},
		// Traces from-trace cannot classify: no timestamps; LLM and DNN requests mixed (token
		// lengths on some requests only); requests naming no model.
		{name: "from-trace no timestamps", args: []string{"workload", "from-trace", "testdata/fromtrace/no-timestamps.json", "--slo", "1s", "-o", "$TMP/w.json"},
			code: ExitUsage, want: []string{"testdata/fromtrace/no-timestamps.json: requests[].t_us: all 0"}, out: "w.json"},
		{name: "from-trace lengths on some requests", args: []string{"workload", "from-trace", "testdata/fromtrace/mixed.json", "-o", "$TMP/w.json"},
			code: ExitUsage, want: []string{"testdata/fromtrace/mixed.json: requests[].input_tokens: 1 of 2"}, out: "w.json"},
		{name: "from-trace no model", args: []string{"workload", "from-trace", "testdata/fromtrace/no-model.json", "-o", "$TMP/w.json"},
			code: ExitUsage, want: []string{"testdata/fromtrace/no-model.json: requests[0].target: empty: the request names no model; give --model"}, out: "w.json"},
		// A gzip file cut short: named, with gzip's reason, wherever a trace is read.
		{name: "from-trace truncated gz", args: []string{"workload", "from-trace", gz, "--slo", "20s", "-o", "$TMP/w.json"},
			code: ExitUsage, want: []string{gz + ": cannot read: gzip: truncated compressed file"}, out: "w.json"},
		{name: "simulate truncated gz", args: []string{"simulate", "testdata/export/qlm/plan.json", "--trace", gz, "--load", "1", "--duration", "5s",
			"--report", "$TMP/rep"}, code: ExitUsage, want: []string{gz + ": cannot read: gzip: truncated compressed file"}, out: "rep"},
		{name: "validate truncated gz", args: []string{"validate", gz}, code: ExitUsage, want: []string{gz + ": cannot read: gzip: truncated compressed file"}},
	})
}
