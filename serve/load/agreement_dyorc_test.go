package load

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	dpdyorc "github.com/plan-dev/plan/dataplane/dyorc"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/sim"
)

// TestAgreementDyOrc is issue 14's agreement target: on the bundled small DyOrc plan (GILL
// and the image pipeline on 4 GPUs, testdata/export/dyorc/plan.json), `plan load` against
// `plan serve --workers emulated` and `plan simulate` on the same trace agree on SLO
// attainment within 2 points, under the dyorc policy (speculative DP scheduling, proactive
// loads) with the branches drawn alike in both (Deployment.Emulated with
// dataplane.EmulatedU, a hash of request ID, stage and visit).
//
// What the bound measures, and what it does not. Request by request the two execute the
// same schedule: on the seed-1 trace at load 1.5 every request's latency agrees within
// ~2 ms (serve's timer lateness) until two requests arriving within a millisecond of each
// other reach the server in the other order (the load generator's goroutines race). serve
// then numbers them the other way round, and since the branch draw and the ingress worker
// are keyed on the request ID, the two swap paths (their latencies swap exactly: 1538 and
// 2317 ms); from there the runs are two different realizations of the same model. With
// ~830 (load 1) and ~1,300 (load 1.5) requests per 40 s trace and multi-second paths, the
// attainment of one realization is a wide statistic: the simulator alone, on the same
// arrivals with only the branch draws re-salted (11 salts), gives 95.2–100% (mean 98.2%) at
// load 1 and 84.4–98.3% (mean 93.4%) at load 1.5. Seed 1's own draw is 96.5% and 93.75%;
// serve's 98.6–100% and 86.5–90% are inside those spreads, so a 40 s gap of 2–7 points is
// the realization, not a difference between the executors. Short traces (10 s, ~235 and
// ~310 requests) usually finish before a swap changes much, hence the usual agreement
// there and the occasional 4-point miss. Agreeing on long traces needs the ID (or the draw)
// to follow the trace's order rather than the order requests reach the server. Load 2 (past
// saturation) is left out of the bound for the same reason, only more so.
func TestAgreementDyOrc(t *testing.T) {
	if testing.Short() {
		t.Skip("wall-clock run of several seconds")
	}
	if os.Getenv("PLAN_AGREEMENT") != "1" {
		t.Skip("set PLAN_AGREEMENT=1 to run (make agreement does, on an otherwise idle machine)")
	}
	if raceEnabled {
		t.Skip("the race detector slows the HTTP path by an order of magnitude; timing agreement is meaningless under it")
	}
	if l := timerLateness(); l > 2*time.Millisecond {
		t.Skipf("this machine is too loaded for a wall-clock comparison: 1 ms timers fire %v late (p95)", l)
	}
	plan, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "export", "dyorc", "plan.json"))
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
	for _, lf := range []float64{1, 1.5} {
		t.Run(fmt.Sprint(lf), func(t *testing.T) {
			compareWithin(t, plan, dep, def, spec, dur, lf, 0.02)
		})
	}
}
