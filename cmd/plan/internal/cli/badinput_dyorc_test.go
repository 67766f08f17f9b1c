package cli

import "testing"

// TestDyOrcBadInput runs DyOrc's bad inputs end to end through `plan solve` on the fixtures
// of testdata/dyorc/bad: an unbounded loop, a step or choice naming an unknown service, a
// guard that cannot be evaluated, choice probabilities that do not sum to 1, a service larger
// than any GPU of the cluster, and a work spread outside [0, 1). Each exits 2 naming the
// file, the field and the value, and leaves an existing plan as it was.
func TestDyOrcBadInput(t *testing.T) {
	solve := func(wl string) []string {
		return []string{"solve", "-q", "--workload", "testdata/dyorc/bad/" + wl, "--cluster", "testdata/dyorc/cluster-small.json"}
	}
	runBadInput(t, []badInputCase{
		{name: "unbounded loop", args: solve("unbounded-loop.json"), keep: "plan.json", code: ExitUsage,
			want: []string{"unbounded-loop.json: workflows.apps.loop.loop.max_iter: 0: unbounded loop"}},
		{name: "unknown service", args: solve("unknown-service.json"), keep: "plan.json", code: ExitUsage,
			want: []string{`unknown-service.json: workflows.apps.image.steps[0].svc: "detector9": unknown service`,
				`workflows.apps.image.steps[1].choice.ocr2: "ocr2": unknown service`}},
		{name: "guard", args: solve("bad-guard.json"), keep: "plan.json", code: ExitUsage,
			want: []string{`bad-guard.json: workflows.apps.gill.steps[2].when: "gen.img_tokens>0": guard cannot be evaluated`}},
		{name: "probabilities", args: solve("probabilities.json"), keep: "plan.json", code: ExitUsage,
			want: []string{"probabilities.json: workflows.apps.image.steps[1].choice: 0.8: branch probabilities must sum to 1"}},
		{name: "service larger than any GPU", args: solve("too-large.json"), keep: "plan.json", code: ExitUsage,
			want: []string{"too-large.json: workflows.services.sd15.weights_gb: 90: the service needs 108.0 GB, a GPU has 85.9 GB"}},
		{name: "work spread", args: solve("work-spread.json"), keep: "plan.json", code: ExitUsage,
			want: []string{"work-spread.json: workflows.services.llm7b.work_spread: 1.5: must be at least 0 and below 1"}},
	})
}
