package autopilot

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// naive forecasts the last window: the baseline a forecaster must beat.
type naive struct{ last float64 }

func (n *naive) Update(x float64)     { n.last = x }
func (n *naive) Forecast(int) float64 { return n.last }
func (n *naive) Name() string         { return "naive" }

// TestForecastersOnTraces checks the default forecaster against the traces it serves
// (bench/RESULTS.md "Autopilot on traces", the forecasters' table): over the 10 s window rates of the
// diurnal day and of the Azure LLM conversation arrivals, Holt's one-window-ahead MAPE is
// below the last window's (naive) — on the day by the trend it follows.
func TestForecastersOnTraces(t *testing.T) {
	cases := []struct {
		file    string
		maxHolt float64
	}{
		{"day.json", 0.03},
		{"azure-conv.json", 0.18},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "autopilot", c.file))
			if err != nil {
				t.Fatal(err)
			}
			var tr struct {
				Counts struct {
					Interval string  `json:"interval"`
					Counts   []int64 `json:"counts"`
				} `json:"counts"`
			}
			if err := json.Unmarshal(data, &tr); err != nil {
				t.Fatal(err)
			}
			if tr.Counts.Interval != "10s" || len(tr.Counts.Counts) < 100 {
				t.Fatalf("%s: interval %q, %d counts: want 10 s windows, ≥ 100", c.file, tr.Counts.Interval, len(tr.Counts.Counts))
			}
			holt, base := &Tracked{Forecaster: NewHolt(0, 0)}, &Tracked{Forecaster: &naive{}}
			for _, n := range tr.Counts.Counts {
				holt.Update(float64(n) / 10)
				base.Update(float64(n) / 10)
			}
			t.Logf("%s: %d windows, MAPE holt %.3f, naive %.3f", c.file, holt.Observations(), holt.MAPE(), base.MAPE())
			if holt.MAPE() >= base.MAPE() || holt.MAPE() > c.maxHolt {
				t.Errorf("Holt's MAPE %.3f: want below the naive forecast's %.3f and ≤ %g", holt.MAPE(), base.MAPE(), c.maxHolt)
			}
		})
	}
}
