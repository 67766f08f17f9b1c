package load

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	dppard "github.com/plan-dev/plan/dataplane/pard"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/sim"
)

// TestAgreementPARD is issue 10's serve-vs-simulate check for PARD, as TestAgreement is for
// PPipe: the bundled PARD plan (testdata/golden/pard-4apps.json, solved from testdata/pard) under
// its own dropping policy, served with emulated workers and driven by `plan load`, against
// `plan simulate` on the same trace, at load factors 0.5 and 0.9: attainment within 3 points.
func TestAgreementPARD(t *testing.T) {
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
	plan, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "golden", "pard-4apps.json"))
	if err != nil {
		t.Fatal(err)
	}
	dep, def, err := testDeploy(plan)
	if err != nil {
		t.Fatal(err)
	}
	if dep.Kind != dppard.Kind || def == "" {
		t.Fatalf("deployment kind %q, default policy %q: want a PARD deployment", dep.Kind, def)
	}
	dur := agreementDuration(t)
	spec, _ := sim.ParseArrival("poisson")
	for _, lf := range []float64{0.5, 0.9} {
		t.Run(fmt.Sprint(lf), func(t *testing.T) {
			pt, err := sim.RunPoint(&sim.SweepConfig{Policies: testPolicies, Policy: dataplane.Config{Policy: def}, Dep: dep, Arrival: spec,
				Loads: []float64{lf}, Duration: dataplane.Time(dur / time.Microsecond), Seed: 1}, lf)
			if err != nil {
				t.Fatal(err)
			}
			s, err := serve.New(serve.Options{Plan: plan, Deploy: testDeploy, Policies: testPolicies})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(s)
			defer ts.Close()
			defer s.Shutdown(context.Background())
			res, err := Run(context.Background(), Options{Deploy: testDeploy, URL: ts.URL, Load: lf, Duration: dur, Arrival: spec, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			got, want := res.Report.Points[0].Total, pt.Total
			t.Logf("PARD load %.1f: serve %d requests, attainment %.2f%% (drops %v); simulate %d requests, %.2f%% (drops %v)",
				lf, got.Requests, 100*got.Attainment, got.Drops, want.Requests, 100*want.Attainment, want.Drops)
			if got.Requests != want.Requests {
				t.Errorf("the load generator sent %d requests, the simulator's trace has %d", got.Requests, want.Requests)
			}
			if d := math.Abs(got.Attainment - want.Attainment); d > 0.03 {
				if late, late99 := s.TimerLateness(0.95), s.TimerLateness(0.99); late > 500*time.Microsecond || late99 > time.Millisecond {
					t.Skipf("attainment differs by %.2f points, but the driver's timers fired up to %v late (p95), %v (p99)", 100*d, late, late99)
				}
				t.Errorf("attainment differs by %.2f points (serve %.2f%%, simulate %.2f%%)", 100*d, 100*got.Attainment, 100*want.Attainment)
			}
		})
	}
}
