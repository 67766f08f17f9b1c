package sim

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
)

// TestLatencyError: the band spans the replications' scatter around the first run,
// widened in quadrature by the profile's measurement noise, and its basis names both — or
// that the profile is an estimate with no error of its own to read.
func TestLatencyError(t *testing.T) {
	measured := profileNoise{cv: 0.05, entries: 4}
	estimated := profileNoise{estimated: []string{"m0"}}
	cases := []struct {
		name       string
		first      [2]float64
		reps       [][2]float64
		noise      profileNoise
		p50, p99   formats.ErrorBand
		basis      []string
		wantAbsent bool
	}{
		{name: "seeds only", first: [2]float64{100, 200}, reps: [][2]float64{{90, 220}, {105, 190}}, noise: estimated,
			p50: formats.ErrorBand{LowerPct: -10, UpperPct: 5}, p99: formats.ErrorBand{LowerPct: -5, UpperPct: 10},
			basis: []string{"3 runs at load 1", "m0 estimated by the roofline"}},
		{name: "noise only", first: [2]float64{100, 200}, noise: measured,
			p50: formats.ErrorBand{LowerPct: -6.41, UpperPct: 6.41}, p99: formats.ErrorBand{LowerPct: -6.41, UpperPct: 6.41},
			basis: []string{"one run at load 1", "median CV 5.0% over 4 measured entries"}},
		{name: "both, in quadrature", first: [2]float64{100, 200}, reps: [][2]float64{{100, 230}}, noise: measured,
			p50: formats.ErrorBand{LowerPct: -6.41, UpperPct: 6.41}, p99: formats.ErrorBand{LowerPct: -6.41, UpperPct: 16.31},
			basis: []string{"2 runs at load 1", "measurement noise"}},
		{name: "nothing answered", first: [2]float64{0, 0}, wantAbsent: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := latencyError(c.first, c.reps, c.noise)
			if c.wantAbsent {
				if e != nil {
					t.Fatalf("band %+v for a run with no answered request", e)
				}
				return
			}
			if e == nil || e.P50 != c.p50 || e.P99 != c.p99 {
				t.Fatalf("band %+v, want p50 %+v p99 %+v", e, c.p50, c.p99)
			}
			for _, w := range c.basis {
				if !strings.Contains(e.Basis, w) {
					t.Errorf("basis %q lacks %q", e.Basis, w)
				}
			}
		})
	}
}

// TestNoiseOf: the median CV over a measured profile's entries; roofline models are named
// as estimates and add no noise.
func TestNoiseOf(t *testing.T) {
	plan := &formats.Plan{}
	plan.Provenance.Embedded = &formats.EmbeddedInputs{Profiles: []formats.Profile{{Models: []formats.ModelProfile{
		{Name: "measured", Backend: "onnx", Latency: []formats.LatencyEntry{{CV: []float64{0.02, 0.04}}, {CV: []float64{0.10}}, {}}},
		{Name: "est", Backend: "roofline", Latency: []formats.LatencyEntry{{CV: []float64{0.9}}}},
	}}}}
	n := noiseOf(plan)
	if n.cv != 0.04 || n.entries != 2 || len(n.estimated) != 1 || n.estimated[0] != "est" {
		t.Errorf("noise %+v, want median CV 0.04 over 2 entries, est estimated", n)
	}
	if n := noiseOf(nil); n.cv != 0 || n.entries != 0 {
		t.Errorf("nil plan: %+v", n)
	}
}
