package cli

import (
	"testing"
)

// TestNoBoundPlanChecks: a written plan with no bound and no gap (testdata/ppipe/
// nobound-plan.json: good-plan.json marked time-limit, bound and gap removed) validates and
// passes plan check.
func TestNoBoundPlanChecks(t *testing.T) {
	repoRoot(t)
	const file = "testdata/ppipe/nobound-plan.json"
	for _, cmd := range []string{"validate", "check"} {
		if code, out, errs := runCLI(t, cmd, file); code != 0 {
			t.Errorf("plan %s: exit %d\n%s%s", cmd, code, out, errs)
		}
	}
}
