package load

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	dppard "github.com/plan-dev/plan/dataplane/pard"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/sim"
)

// TestAgreementPARD is the serve-vs-simulate check for PARD, as TestAgreement is for
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
	plan, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "golden", "pard-4apps.json"), intree.Sections())
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
			compareAt(t, plan, dep, def, spec, dur, lf)
		})
	}
}
