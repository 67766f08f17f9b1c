package sim

import (
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

// CDFPlot draws the empirical CDF (%) of each class's samples and of all of them, on a log
// axis (token timings span milliseconds to minutes; samples are clamped to ≥ 1 µs).
func CDFPlot(title, xLabel string, classes []string, samples map[string][]float64) (*plot.Plot, error) {
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
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(name, l)
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
