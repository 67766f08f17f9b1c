package pardbench

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats/sections/pardsec"
	demo "github.com/plan-dev/plan/internal/onformats/demo/pard"
)

// TestLongestTwoD: the bench's "% SLO" column is the longest entry→sink path's Σ 2·d, not the
// sum over every module (da forks into face ∥ pose).
func TestLongestTwoD(t *testing.T) {
	da, _ := demo.AppByName("da")
	tm, _ := demo.AppByName("tm")
	lat := func(app demo.App, us ...float64) []pardsec.ModulePlan {
		var out []pardsec.ModulePlan
		for i, m := range app.Modules {
			out = append(out, pardsec.ModulePlan{Name: m.Name, LatencyUs: us[i]})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		app  demo.App
		mods []pardsec.ModulePlan
		want float64
	}{
		// det 10, face 30, pose 20, expression 5, eye 1: det→face→expression→eye = 46 µs, ×2.
		{"da face longer", da, lat(da, 10, 30, 20, 5, 1), 92},
		{"da pose longer", da, lat(da, 10, 20, 40, 5, 1), 112},
		{"tm chain", tm, lat(tm, 1, 2, 3, 4, 5, 6, 7, 8)[:len(tm.Modules)], 2 * sumTo(len(tm.Modules))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := longestTwoD(tc.app, tc.mods); got != tc.want {
				t.Errorf("longestTwoD = %g, want %g", got, tc.want)
			}
		})
	}
}

func sumTo(n int) float64 { return float64(n * (n + 1) / 2) }

// TestModuleRowsWithinBudget: PARD provisions Σ 2·d ≤ 0.8·SLO on every path, so no app's
// reported share of its SLO exceeds 80%; da's summed modules reported 105%.
func TestModuleRowsWithinBudget(t *testing.T) {
	o := BenchOptions{Apps: []string{"da"}, RateRPS: demo.DefaultRateRPS}
	plans, err := benchPlans(context.Background(), o)
	if err != nil && strings.Contains(err.Error(), "HiGHS backend unavailable") && os.Getenv("PLAN_REQUIRE_ALL") != "1" {
		t.Skipf("provisioning needs the solver: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	var res BenchResult
	res.moduleRows(o, plans)
	if len(res.Modules) == 0 {
		t.Fatal("no module rows")
	}
	for _, m := range res.Modules {
		if m.SLOFrac > 0.8+1e-9 || m.SLOFrac <= 0 || math.IsNaN(m.SLOFrac) {
			t.Errorf("%s/%s: %.1f%% of the SLO, want in (0, 80%%]", m.App, m.Name, 100*m.SLOFrac)
		}
	}
}
