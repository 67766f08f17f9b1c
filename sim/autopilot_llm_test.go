package sim

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	ap "github.com/plan-dev/plan/dataplane/autopilot"
	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/intree"
)

// TestAutopilotLLMTokens: on an LLM plan (the QLM autopilot fixture) every request gets its
// class's tokens seeded by its application and index, so it carries the same tokens on
// whichever plan serves it — each segment of the autopilot run and the static plan — and
// the loop observes them (without AutopilotRun.LLM the policy drew them from the engine's
// request ID, which differs between segments, and the loop saw none).
func TestAutopilotLLMTokens(t *testing.T) {
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "testdata", "autopilot", "qlm-plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	dep, err := dq.FromPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	small := ap.Candidate{Digest: "small", GPUs: 8, Capacity: []float64{4, 2}, Plan: p}
	large := ap.Candidate{Digest: "large", GPUs: 16, Capacity: []float64{40, 20}, Plan: p}
	// 20 s at 2 and 1 rps, then 20 s at 10 and 5 rps: the loop switches up under load.
	arrivals := make([][]dataplane.Time, 2)
	for a, base := range []float64{2, 1} {
		t0 := dataplane.Time(0)
		for _, f := range []float64{1, 5} {
			gap := dataplane.Time(1e6 / (base * f))
			for at := t0; at < t0+20*dataplane.Second; at += gap {
				arrivals[a] = append(arrivals[a], at)
			}
			t0 += 20 * dataplane.Second
		}
	}
	type key struct {
		app   dataplane.AppID
		trace int64
	}
	seen := map[string]map[key][2]int32{"autopilot": {}, "static": {}}
	run := &AutopilotRun{
		Loop:     ap.Config{Window: 2 * dataplane.Second, MinInterval: 4 * dataplane.Second, Hold: 1},
		Start:    small,
		Solver:   twoPlans{small, large},
		Arrivals: arrivals,
		Duration: 40 * dataplane.Second,
		LoadTime: dataplane.Second,
		Seed:     1,
		LLM:      LLMClassesOf(dep, llmspec.ClassesOf(p.Provenance.Embedded.Workload)),
		Deploy: func(ap.Candidate) (*dataplane.Deployment, dataplane.Policy, error) {
			pol, err := dq.Registry().New(dep, dataplane.Config{Policy: dq.PolicyQLM}, dq.PolicyQLM)
			return dep, pol, err
		},
	}
	into := "autopilot"
	run.OnFinish = func(_ int, _ dataplane.Time, r *dataplane.Request) {
		seen[into][key{r.App, r.Attrs.Trace}] = [2]int32{r.Attrs.InTokens, r.Attrs.OutTokens}
	}
	res, err := RunAutopilot(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	into = "static"
	if _, err := RunStatic(run, large); err != nil {
		t.Fatal(err)
	}
	if res.Switches == 0 {
		t.Fatalf("no switch: the run must span segments (decisions %+v)", res.Decisions)
	}
	n := len(arrivals[0]) + len(arrivals[1])
	if len(seen["autopilot"]) != n || len(seen["static"]) != n {
		t.Fatalf("requests seen: autopilot %d, static %d, want %d", len(seen["autopilot"]), len(seen["static"]), n)
	}
	for k, tok := range seen["autopilot"] {
		if tok[0] <= 0 || tok[1] <= 0 || seen["static"][k] != tok {
			t.Fatalf("app %d request %d: tokens %v on the autopilot's plans, %v on the static plan: want the same, drawn", k.app, k.trace, tok, seen["static"][k])
		}
	}
}
