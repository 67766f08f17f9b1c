package sim

import (
	"reflect"
	"testing"
)

// TestTokenSamplesOf: TTFT and TPOT come from answered requests with a first token, per
// class and over all.
func TestTokenSamplesOf(t *testing.T) {
	ft := func(us int64) *int64 { return &us }
	recs := []RequestRecord{
		{Class: "chat", ArrivalUs: 1000, FirstTokenUs: ft(3000), DoneUs: 12000, Outcome: "completed", OutputTokens: 10},
		{Class: "batch", ArrivalUs: 0, FirstTokenUs: ft(5000), DoneUs: 5000, Outcome: "late", OutputTokens: 1},
		{Class: "chat", ArrivalUs: 0, DoneUs: 9000, Outcome: "completed", OutputTokens: 10},                       // no first token
		{Class: "chat", ArrivalUs: 0, FirstTokenUs: ft(1000), DoneUs: 2000, Outcome: "dropped", OutputTokens: 10}, // not answered
	}
	ts := TokenSamplesOf(recs)
	want := &TokenSamples{Classes: []string{"chat", "batch"},
		TTFT: map[string][]float64{"chat": {2}, "batch": {5}, "all": {2, 5}},
		TPOT: map[string][]float64{"chat": {1}, "all": {1}}}
	if !reflect.DeepEqual(ts, want) {
		t.Fatalf("got %+v, want %+v", ts, want)
	}
	if _, err := CDFPlot("t", "ms", ts.Classes, ts.TTFT); err != nil {
		t.Fatal(err)
	}
}

// TestTicks125: a log axis is labelled at 1-2-5 steps, finer where the range is narrow.
func TestTicks125(t *testing.T) {
	cases := []struct {
		lo, hi float64
		want   []float64
	}{
		{1, 1000, []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}},
		{3, 45, []float64{5, 10, 20}},
		{25, 95, []float64{30, 40, 50, 60, 70, 80, 90}},
		{0, 10, nil},
	}
	for _, c := range cases {
		var got []float64
		for _, tk := range (ticks125{}).Ticks(c.lo, c.hi) {
			if tk.Label != "" {
				got = append(got, tk.Value)
			}
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("[%g, %g]: %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
}
