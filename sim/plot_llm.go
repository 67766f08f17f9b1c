package sim

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/plan-dev/plan/dataplane"
)

// TokenSamples are, per class (in order of first appearance) and over all, the TTFT and TPOT
// of answered requests' records in ms (LLM engine digest §3): TTFT = first token − arrival,
// TPOT = (finish − first token) / (output tokens − 1). Records without a first token add
// nothing.
type TokenSamples struct {
	Classes    []string
	TTFT, TPOT map[string][]float64 // class ("all" too) → ms
}

// TokenSamplesOf collects the samples of recs.
func TokenSamplesOf(recs []RequestRecord) *TokenSamples {
	ts := &TokenSamples{TTFT: map[string][]float64{}, TPOT: map[string][]float64{}}
	seen := map[string]bool{}
	for _, r := range recs {
		if r.FirstTokenUs == nil || (r.Outcome != dataplane.Completed.String() && r.Outcome != dataplane.Late.String()) {
			continue
		}
		if !seen[r.Class] {
			seen[r.Class] = true
			ts.Classes = append(ts.Classes, r.Class)
		}
		ttft := float64(*r.FirstTokenUs-r.ArrivalUs) / 1000
		for _, k := range []string{r.Class, "all"} {
			ts.TTFT[k] = append(ts.TTFT[k], ttft)
			if r.OutputTokens > 1 {
				ts.TPOT[k] = append(ts.TPOT[k], float64(r.DoneUs-*r.FirstTokenUs)/1000/float64(r.OutputTokens-1))
			}
		}
	}
	return ts
}

// SLOMark is one SLO drawn on a CDF: a vertical line at the bound (ms) and a horizontal one
// at the share of requests that must meet it; the class meets it where its curve crosses
// the horizontal line left of the vertical one.
type SLOMark struct {
	Class  string
	Bound  float64 // ms
	Target float64 // share, e.g. 0.99
}

// SLOMarks returns the marks of the classes' TTFT (ttft true) or TPOT SLOs: one per class
// that sets it (llmspec.LLMClass ttft_slo, tpot_slo), named by the deployment's app.
func SLOMarks(dep *dataplane.Deployment, classes []LLMClass, ttft bool) []SLOMark {
	var out []SLOMark
	for a, c := range classes {
		if a >= len(dep.Apps) {
			break
		}
		bound, target := c.TPOTSLO, c.TPOTP
		if ttft {
			bound, target = c.TTFTSLO, c.TTFTP
		}
		if bound > 0 {
			out = append(out, SLOMark{Class: dep.Apps[a].Name, Bound: float64(bound) / 1000, Target: target})
		}
	}
	return out
}

// CDFPlot draws the empirical CDF (%) of each class's samples and of all of them, on a log
// axis (token timings span milliseconds to minutes; samples are clamped to ≥ 1 µs), with a
// dashed line at each SLO of slos (in its class's colour) and at each target share.
func CDFPlot(title, xLabel string, classes []string, samples map[string][]float64, slos []SLOMark) (*plot.Plot, error) {
	return CDFPlotColored(title, xLabel, classes, samples, slos, nil)
}

// seriesColor is name's colour: colors' where it gives one, else the i-th of the cycle.
func seriesColor(colors map[string]color.Color, name string, i int) color.Color {
	if c, ok := colors[name]; ok {
		return c
	}
	return palette[i%len(palette)]
}

// CDFPlotColored is CDFPlot with each class in colors[class] where given (AppColors: the
// colour the timeline draws its requests in, so a class looks the same in every figure of
// a report); the others, and "all", take the cycle's.
func CDFPlotColored(title, xLabel string, classes []string, samples map[string][]float64, slos []SLOMark, colors map[string]color.Color) (*plot.Plot, error) {
	p := plot.New()
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = ticks125{}
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = "requests (%)"
	p.Y.Min, p.Y.Max = 0, 100
	p.Legend.Top = false
	p.Legend.Left = false
	names := append([]string{"all"}, classes...)
	if len(classes) <= 1 {
		names = names[:1]
	}
	for i, name := range names {
		xs := append([]float64(nil), samples[name]...)
		if len(xs) == 0 {
			continue
		}
		sort.Float64s(xs)
		xy := make(plotter.XYs, 0, 2*len(xs))
		for j, x := range xs {
			x = max(x, 1e-3)
			// A step: the CDF jumps at each sample.
			xy = append(xy, plotter.XY{X: x, Y: 100 * float64(j) / float64(len(xs))}, plotter.XY{X: x, Y: 100 * float64(j+1) / float64(len(xs))})
		}
		if err := addLine(p, xy, seriesColor(colors, name, i), vg.Points(1.5), name); err != nil {
			return nil, err
		}
	}
	if err := addSLOMarks(p, names, samples, slos, colors); err != nil {
		return nil, err
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// ticks125 labels a log axis at 1, 2 and 5 times each power of ten in range (plot.LogTicks
// labels powers of ten only: none inside a 10–20 ms TPOT range); then every integer
// multiple; a range narrower still gets linear ticks.
type ticks125 struct{}

// Ticks implements plot.Ticker.
func (ticks125) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi >= lo) {
		return nil
	}
	for _, ms := range [][]float64{{1, 2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9}} {
		var out []plot.Tick
		for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
			for _, m := range ms {
				v := m * math.Pow(10, e)
				if v >= lo && v <= hi {
					out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 6, 64)})
				}
			}
		}
		if len(out) >= 3 {
			return out
		}
	}
	return plot.DefaultTicks{}.Ticks(lo, hi)
}

// addSLOMarks draws slos on a CDF whose curves are names (palette order): a vertical line
// per class's bound in the class's colour (grey when the class has no curve), and one
// horizontal line per distinct target share.
func addSLOMarks(p *plot.Plot, names []string, samples map[string][]float64, slos []SLOMark, colors map[string]color.Color) error {
	if len(slos) == 0 {
		return nil
	}
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for _, n := range names {
		for _, x := range samples[n] {
			x = max(x, 1e-3)
			xmin, xmax = min(xmin, x), max(xmax, x)
		}
	}
	targets := map[float64]bool{}
	for _, m := range slos {
		if m.Bound <= 0 {
			continue
		}
		xmin, xmax = min(xmin, m.Bound), max(xmax, m.Bound)
		l, err := plotter.NewLine(plotter.XYs{{X: m.Bound, Y: 0}, {X: m.Bound, Y: 100}})
		if err != nil {
			return err
		}
		col := color.Color(color.Gray{0x60})
		for i, n := range names {
			if n == m.Class {
				col = seriesColor(colors, n, i)
			}
		}
		targetStyle(l, col)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("SLO %s: %s ms", m.Class, strconv.FormatFloat(m.Bound, 'g', 4, 64)), l)
		if m.Target > 0 {
			targets[m.Target] = true
		}
	}
	ts := make([]float64, 0, len(targets))
	for t := range targets {
		ts = append(ts, t)
	}
	sort.Float64s(ts)
	for _, t := range ts {
		if err := addHLine(p, xmin, xmax, 100*t, fmt.Sprintf("%s target", pct(t))); err != nil {
			return err
		}
	}
	return nil
}
