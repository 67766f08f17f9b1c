package ppipesys

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/sim"
)

// TestStatePrediction: plan solve's rule on the bundled two-model plan: the note names what
// each model serves, its capacity and the formulation's objective; a model that serves
// nothing refuses the plan as infeasible, unless the miss is accepted. A plan that misses
// at its stated rates while the time limit stopped the headroom search before it held any
// load was not checked in time: refused as such (it is written when the miss is accepted).
func TestStatePrediction(t *testing.T) {
	for _, tc := range []struct {
		name       string
		zero       bool
		stopped    bool
		acceptMiss bool
		wantErr    error
	}{
		{name: "served"},
		{name: "serves nothing", zero: true, wantErr: planner.ErrInfeasible},
		{name: "serves nothing, miss accepted", zero: true, acceptMiss: true},
		{name: "search stopped before any load held", zero: true, stopped: true, wantErr: sim.ErrHeadroomDeadline},
		{name: "search stopped, miss accepted", zero: true, stopped: true, acceptMiss: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, err := formats.ReadInto[*formats.Plan]("../../../../testdata/golden/ppipe-2models.json", intree.Sections())
			if err != nil {
				t.Fatal(err)
			}
			if tc.zero {
				pl.Prediction.Apps[0].SustainedRPS = 0
			}
			if tc.stopped {
				pl.Prediction.HeadroomSearch = &formats.HeadroomSearch{StoppedEarly: true, Reason: formats.SearchStoppedDeadline, LoadsTried: []float64{1}}
			}
			note, err := (&Planner{}).StatePrediction(pl, tc.acceptMiss)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), "model m0") {
					t.Fatalf("want a refusal (%v) naming m0, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"m1 83.82 req/s (capacity 135.5)", "objective 67.73"} {
				if !strings.Contains(note, want) {
					t.Errorf("note %q lacks %q", note, want)
				}
			}
			// Stopped before it held any load, the search leaves m0's rate as stated (no rule
			// applies); otherwise a model that serves nothing states 0.
			if got := ppipesec.PlanOf(pl).Models[0].ThroughputRPS; (tc.zero && !tc.stopped) != (got == 0) {
				t.Errorf("m0 states %g", got)
			}
		})
	}
}

// TestPredictionReserve: the reserve grows with the rates up to the prediction's request cap
// and with how little of a CPU the process gets.
func TestPredictionReserve(t *testing.T) {
	small, big, capped := predictionReserve(100, 1), predictionReserve(2000, 1), predictionReserve(1e6, 1)
	if !(predictionFixed < small && small < big && big <= capped) || capped != predictionReserve(1e7, 1) {
		t.Errorf("reserves %s, %s, %s: must grow with the rate up to the cap", small, big, capped)
	}
	if busy := predictionReserve(2000, 0.25); busy != 4*big {
		t.Errorf("at a quarter of a CPU %s, want 4 × %s", busy, big)
	}
	if floor := predictionReserve(2000, 0); floor != time.Duration(float64(big)/minCPUShare) {
		t.Errorf("no CPU measured: %s", floor)
	}
}
