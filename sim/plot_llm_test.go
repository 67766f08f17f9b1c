package sim

import (
	"reflect"
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
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
	if _, err := CDFPlot("t", "ms", ts.Classes, ts.TTFT, nil); err != nil {
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

// TestCDFSLOLines: a class's ttft_slo is drawn as a line at its bound, with its target
// share, and named in the legend; the x axis reaches the bound even past every sample.
func TestCDFSLOLines(t *testing.T) {
	samples := map[string][]float64{"all": {2, 5, 9}, "chat": {2, 9}, "batch": {5}}
	dep := &dataplane.Deployment{Apps: []dataplane.App{{Name: "chat"}, {Name: "batch"}}}
	classes := []LLMClass{{TTFTSLO: 300 * dataplane.Millisecond, TTFTP: 0.99}, {TPOTSLO: 50 * dataplane.Millisecond, TPOTP: 0.9}}
	cases := []struct {
		name  string
		ttft  bool
		want  []string
		xmax  float64
		marks int
	}{
		{"ttft", true, []string{">SLO chat: 300 ms<", ">99% target<"}, 300, 1},
		{"tpot", false, []string{">SLO batch: 50 ms<", ">90% target<"}, 50, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			marks := SLOMarks(dep, classes, c.ttft)
			if len(marks) != c.marks {
				t.Fatalf("marks %+v, want %d", marks, c.marks)
			}
			p, err := CDFPlot("t", "ms", []string{"chat", "batch"}, samples, marks)
			if err != nil {
				t.Fatal(err)
			}
			svg := svgText(t, p)
			for _, w := range c.want {
				if !strings.Contains(svg, w) {
					t.Errorf("SVG lacks %q", w)
				}
			}
			if p.X.Max < c.xmax {
				t.Errorf("x axis ends at %g, before the SLO %g", p.X.Max, c.xmax)
			}
		})
	}
}
