package check

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
)

// staleFixture is the bundled PPipe demo plan as solve wrote it before plans stated what
// they serve (git 447eb16e, testdata/golden/demo-ppipe.json): model demo states 2267 req/s,
// its pipelines' capacity, and its recorded prediction serves 2125 req/s within the SLO.
const staleFixture = "testdata/stated-capacity.json"

// TestStaleRuleLoadsAndFailsCheck: a plan stating a figure by its system's older rule loads
// (simulate and serve deploy it) with a warning naming the file, the model, the stated and
// the served rate, and plan check fails it (exit 1, a failed check) with the served rate as
// the limit, while the plan written by the current rule passes.
func TestStaleRuleLoadsAndFailsCheck(t *testing.T) {
	reg := systems.Default()
	for _, tc := range []struct {
		plan  string
		stale bool
	}{
		{plan: staleFixture, stale: true},
		{plan: "../../../testdata/golden/demo-ppipe.json"},
	} {
		t.Run(tc.plan, func(t *testing.T) {
			plan, dep, _, err := run.LoadPlanDeploymentPolicy(reg, tc.plan)
			if err != nil || dep == nil {
				t.Fatalf("the plan does not load: %v", err)
			}
			var warn strings.Builder
			run.WarnStale(&run.IO{Streams: run.Streams{Err: &warn}, Quiet: true}, reg, tc.plan, plan)
			if tc.stale {
				for _, s := range []string{"warning: " + tc.plan + ":", "model demo", "throughput_rps 2267", "serves 2125 req/s"} {
					if !strings.Contains(warn.String(), s) {
						t.Errorf("warning %q lacks %q", warn.String(), s)
					}
				}
			} else if warn.Len() > 0 {
				t.Errorf("warned about a plan stating what it serves: %s", warn.String())
			}

			var out, errb strings.Builder
			io := &run.IO{Streams: run.Streams{Out: &out, Err: &errb}, Output: "json", Quiet: true}
			err = Run(context.Background(), Args{Systems: reg, Plan: tc.plan, Tolerance: "1%"}, io)
			var rep Report
			if jerr := json.Unmarshal([]byte(out.String()), &rep); jerr != nil {
				t.Fatalf("report: %v\n%s", jerr, out.String())
			}
			var stale *Line
			for i := range rep.Checks {
				if rep.Checks[i].Name == "stated_throughput" {
					stale = &rep.Checks[i]
				}
			}
			if !tc.stale {
				if err != nil || stale != nil {
					t.Fatalf("check: %v, stale finding %+v", err, stale)
				}
				return
			}
			var ee *run.ExitError
			if !errors.As(err, &ee) || ee.Code != run.ExitFailure {
				t.Fatalf("check of a stale plan: %v, want exit %d", err, run.ExitFailure)
			}
			if stale == nil || stale.OK || stale.Subject != "demo" || stale.Value == nil || stale.Limit == nil {
				t.Fatalf("no failed stated_throughput finding for model demo: %+v", rep.Checks)
			}
			if int(*stale.Value) != 2267 || int(*stale.Limit) != 2125 {
				t.Errorf("stated %g, served %g: want 2267 and 2125", *stale.Value, *stale.Limit)
			}
			// It is still simulated: the predict stage ran.
			predicted := false
			for _, c := range rep.Checks {
				predicted = predicted || c.Stage == "predict"
			}
			if !predicted {
				t.Errorf("the stale plan was not simulated: %+v", rep.Checks)
			}
		})
	}
}
