package schedule

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// fakeSolve prices a workload at 1 per request/s of its models, counting its calls.
func fakeSolve(calls *int) SolveFunc {
	return func(_ context.Context, w *formats.Workload) (*formats.Plan, error) {
		*calls++
		var c float64
		for _, m := range ppipesec.ModelsOf(w) {
			c += m.RateRPS
		}
		return &formats.Plan{Fleet: &formats.Fleet{Objective: "cost", Currency: "USD", CostPerHour: c}}, nil
	}
}

// TestBuild: every window is priced at its own peak, windows with equal peaks share one
// solve, a window where a target is silent plans it at MinShare of its day's peak, the peak
// plan is the highest window peak of every target, and the total and saving add up.
func TestBuild(t *testing.T) {
	w := ppipesec.SetModels(&formats.Workload{}, []ppipesec.ModelWorkload{{Name: "a", RateRPS: 5}, {Name: "b"}})
	cases := []struct {
		name      string
		csv       string
		window    float64
		wantPeaks [][]float64
		wantCalls int
		wantTotal float64
		wantPeak  float64 // cost of the peak plan all trace
		wantErr   string
	}{
		{name: "three windows", csv: "time_s,a,b\n0,10,20\n60,30,40\n120,5,5\n", window: 60,
			wantPeaks: [][]float64{{10, 20}, {30, 40}, {5, 5}}, wantCalls: 3, wantTotal: (30 + 70 + 10) / 60.0, wantPeak: 70 * 3 / 60.0},
		{name: "equal windows share a solve", csv: "time_s,a,b\n0,10,20\n60,10,20\n120,30,40\n", window: 60,
			wantPeaks: [][]float64{{10, 20}, {10, 20}, {30, 40}}, wantCalls: 2, wantTotal: (30 + 30 + 70) / 60.0, wantPeak: 70 * 3 / 60.0},
		{name: "a silent window keeps a minimal deployment", csv: "time_s,a,b\n0,100,200\n60,0,0\n", window: 60,
			wantPeaks: [][]float64{{100, 200}, {1, 2}}, wantCalls: 2, wantTotal: (300 + 3) / 60.0, wantPeak: 300 * 2 / 60.0},
		{name: "a column without requests", csv: "time_s,a,b\n0,0,200\n60,0,0\n", window: 60, wantErr: "column a: no requests"},
		{name: "a column the workload lacks", csv: "time_s,a,b,c\n0,1,1,1\n60,1,1,1\n", window: 60, wantErr: `column "c"`},
		{name: "a model without a column", csv: "time_s,a\n0,1\n60,1\n", window: 60, wantErr: `no column for "b"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseRates("day.csv", strings.NewReader(tc.csv))
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			s, err := Build(context.Background(), r, w, tc.window, Peaks{Quantile: 1, Margin: 1, Bucket: 60}, fakeSolve(&calls))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range s.Windows {
				if !slices.Equal(e.PeakRPS, tc.wantPeaks[i]) {
					t.Errorf("window %d peak %v, want %v", i, e.PeakRPS, tc.wantPeaks[i])
				}
			}
			if calls != tc.wantCalls { // the peak plan shares the solve of the window holding every maximum
				t.Errorf("%d solves, want %d", calls, tc.wantCalls)
			}
			if math.Abs(s.TotalCost-round6(tc.wantTotal)) > 1e-6 || math.Abs(s.PeakCost-round6(tc.wantPeak)) > 1e-6 {
				t.Errorf("total %v, peak %v; want %v, %v", s.TotalCost, s.PeakCost, tc.wantTotal, tc.wantPeak)
			}
			if want := round6(1 - s.TotalCost/s.PeakCost); s.Saving != want {
				t.Errorf("saving %v, want %v", s.Saving, want)
			}
		})
	}
}

// TestBuildKeeps: a window whose peak the previous window's plan covers at no higher cost
// keeps that plan (no switch), recording the peak it was planned for; one it does not cover,
// or covers at a higher cost, gets its own.
func TestBuildKeeps(t *testing.T) {
	w := ppipesec.SetModels(&formats.Workload{}, []ppipesec.ModelWorkload{{Name: "a"}, {Name: "b"}})
	// GPUs of 100 requests/s at 1 each: ceil(Σ rates / 100).
	solve := func(_ context.Context, w *formats.Workload) (*formats.Plan, error) {
		var c float64
		for _, m := range ppipesec.ModelsOf(w) {
			c += m.RateRPS
		}
		return &formats.Plan{Metadata: formats.Metadata{Name: strconv.FormatFloat(c, 'g', -1, 64)},
			Fleet: &formats.Fleet{Objective: "cost", Currency: "USD", CostPerHour: math.Ceil(c / 100)}}, nil
	}
	r, err := ParseRates("day.csv", strings.NewReader("time_s,a,b\n0,60,30\n60,50,30\n120,40,40\n180,20,20\n240,150,10\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Build(context.Background(), r, w, 60, Peaks{Quantile: 1, Margin: 1, Bucket: 60}, solve)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		kept       bool
		plannedFor []float64
	}{
		{false, nil},
		{true, []float64{60, 30}}, // 50,30 ≤ 60,30 at the same 1 GPU
		{false, nil},              // 40,40: b above the plan's 30
		{true, []float64{40, 40}}, // 20,20 ≤ 40,40
		{false, nil},              // 150,10 needs 2 GPUs
	}
	for i, e := range s.Windows {
		if e.Kept != want[i].kept || !slices.Equal(e.PlannedFor, want[i].plannedFor) {
			t.Errorf("window %d: kept %v planned for %v, want %v %v", i, e.Kept, e.PlannedFor, want[i].kept, want[i].plannedFor)
		}
		if e.Kept && !bytes.Equal(e.Plan, s.Windows[i-1].Plan) {
			t.Errorf("window %d keeps a plan other than window %d's", i, i-1)
		}
	}
}
