package workload

import "testing"

// TestPredictionSpan: enough seconds for PredictionMinRequests of the slowest application,
// at least PredictionMinSeconds, at most PredictionMaxSeconds and PredictionMaxRequests in all.
func TestPredictionSpan(t *testing.T) {
	for _, tc := range []struct {
		rates []float64
		want  float64
	}{
		{nil, 20},
		{[]float64{0}, 20},
		{[]float64{1000}, 20},
		{[]float64{10}, 200},
		{[]float64{2.3}, 600},
		{[]float64{100, 3}, 600},
		{[]float64{40, 40}, 50},
		{[]float64{20000}, 10},
		{[]float64{300, 7}, 285.714},
	} {
		if got := PredictionSpan(tc.rates); got != tc.want {
			t.Errorf("PredictionSpan(%v) = %g, want %g", tc.rates, got, tc.want)
		}
	}
}
