package cli

import (
	"strings"
	"testing"
)

// TestSimulateDisagg: `plan simulate` of a plan with prefill and decode instances runs them
// (dataplane/qlm's disaggpol.go) and says so: at load 1 the fixture's 8,000-token prompts
// get a TTFT of one prefill (3 chunks of 2,048 at 80 ms and one of 1,856) plus the 21 ms KV
// transfer at low load, and a TPOT near the decode-only step.
func TestSimulateDisagg(t *testing.T) {
	repoRoot(t)
	code, stdout, stderr := rootRun(t, "simulate", "testdata/disagg/plan.json", "--load", "0.05,1")
	if code != ExitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	for _, w := range []string{"fcfs per role, KV link 50 GB/s", "333.9/333.9/333.9"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout)
		}
	}
}

// TestDisaggBadInput: roles, the KV link and speculative decoding's settings are checked
// where they are read, naming file, field and value (exit 2).
func TestDisaggBadInput(t *testing.T) {
	runBadInput(t, []badInputCase{
		{name: "link zero", args: []string{"validate", "testdata/disagg/bad/cluster-link-zero.yaml"}, code: ExitUsage,
			want: []string{"testdata/disagg/bad/cluster-link-zero.yaml: kv_link_gbps: 0: must be in (0, 10000] GB/s"}},
		{name: "simulate link zero", args: []string{"simulate", "testdata/disagg/bad/plan-link-zero.json"}, code: ExitUsage,
			want: []string{"testdata/disagg/bad/plan-link-zero.json: provenance.embedded.cluster.kv_link_gbps: 0"}},
		{name: "role", args: []string{"simulate", "testdata/disagg/bad/plan-role.json"}, code: ExitUsage,
			once: []string{`testdata/disagg/bad/plan-role.json: qlm.instances[0].role: "both": must be one of prefill, decode`}},
		{name: "decode only", args: []string{"validate", "testdata/disagg/bad/plan-decode-only.json"}, code: ExitUsage,
			want: []string{`qlm.instances[0].role: "decode": model "m8b" has 2 decode instances and no prefill instance`}},
		{name: "acceptance rate", args: []string{"validate", "testdata/disagg/bad/profile-spec-alpha.json"}, code: ExitUsage,
			want: []string{"testdata/disagg/bad/profile-spec-alpha.json: llms[0].engine.speculative.acceptance_rate: 1: must be in [0, 1)"}},
	})
}
