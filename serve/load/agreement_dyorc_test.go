package load

import (
	"fmt"
	"path/filepath"
	"testing"

	dpdyorc "github.com/plan-dev/plan/dataplane/dyorc"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/sim"
)

// TestAgreementDyOrc is the serve-vs-simulate check for DyOrc: on the bundled small DyOrc plan (GILL
// and the image pipeline on 4 GPUs, testdata/export/dyorc/plan.json), `plan load` against
// `plan serve --workers emulated` and `plan simulate` on the same trace agree on SLO
// attainment within 2 points, under the dyorc policy (speculative DP scheduling, proactive
// loads) with the branches drawn alike in both (Deployment.Emulated with
// dataplane.EmulatedU, a hash of the request's trace key, stage and visit: `plan load` sends
// each request's index in the trace as kserve.TraceIndexHeader, and the simulator numbers its
// arrivals the same way, so a request draws the same path in both whatever order it reaches
// the server in; TestTraceIndexKeysDraws in serve/workflow checks that).
//
// What the bound measures, and what it does not. Request by request the two execute the
// same schedule (latencies within ~1 ms on the seed-1 trace) until two requests arriving
// within a few milliseconds of each other reach the server in the other order (the load
// generator's connections race; early in a run a request can wait for a dial while the next
// one takes an open connection). Their paths no longer swap, but they queue in the other
// order and the predictor's rollouts, drawn from one sequential generator, follow another
// sequence; past that point the runs are two realizations of the same model. With ~830
// (load 1) and ~1,300 (load 1.5) requests per 40 s trace and multi-second paths, the
// attainment of one realization is a wide statistic: before the LLMs' work spread
// (work_spread 0.5: each call's output length U(0.5, 1.5) of the profile's), the simulator
// alone, on the same arrivals with only the branch draws re-salted (11 salts), gave
// 95.2–100% (mean 98.2%) at load 1 and 84.4–98.3% (mean 93.4%) at load 1.5. The spread
// moved the knee: at load 1.5 the simulator's 10 s trace is at 89% and two serve runs gave
// 89.3% and 99.0%, so the bound is checked at loads 1 and 1.25, below the knee. There
// 40 s traces agree too (serve 90.73% vs simulate 90.49% at load 1, 95.45% vs 93.04% at
// 1.25 on a busy machine); without the spread, load 1.5 on 40 s traces gave serve 81.5%
// against the simulator's 94.75%, serve's image-pipeline latency drifting above the
// simulator's from the tenth second on. Past the knee the check would measure chaos, not
// the executor.
func TestAgreementDyOrc(t *testing.T) {
	skipUnlessAgreement(t)
	plan, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "export", "dyorc", "plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	dep, def, err := testDeploy(plan)
	if err != nil {
		t.Fatal(err)
	}
	if dep.Kind != dpdyorc.Kind || def == "" {
		t.Fatalf("deployment kind %q, default policy %q: want a dyorc deployment", dep.Kind, def)
	}
	dur := agreementDuration(t)
	spec, _ := sim.ParseArrival("poisson")
	for _, lf := range []float64{1, 1.25} {
		t.Run(fmt.Sprint(lf), func(t *testing.T) {
			compareWithin(t, plan, dep, def, spec, dur, lf, 0.02)
		})
	}
}
