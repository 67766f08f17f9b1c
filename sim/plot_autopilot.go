package sim

import (
	"fmt"
	"image/color"
	"strings"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// AutopilotSeries is what an autopilot run's plot shows over time (seconds): the GPUs the
// served plan held (Segments), the trace's rate per window, the loop's forecasts at its
// decisions, and the served plan's capacity where the solver said it (capacity_rps).
type AutopilotSeries struct {
	Segments []Segment
	// RateT/Rate: the trace's total rate (req/s) over each window starting at RateT, of
	// RateW seconds (drawn as a step).
	RateT, Rate []float64
	RateW       float64
	// ForecastT/Forecast: the total forecast rate at each decision that made one.
	ForecastT, Forecast []float64
	// CapT/Cap: the served plan's total capacity from CapT on (a step); NaN: unknown.
	CapT, Cap []float64
	// RefGPUs are fixed fleets drawn for comparison (the plan for the peak, the static plan).
	RefGPUs []RefLine
}

// RefLine is a named horizontal reference.
type RefLine struct {
	Name  string
	Value float64
}

// AutopilotPlots returns the two panels of an autopilot run: GPUs held over time (with the
// reference fleets), and the trace's rate against the forecast and the plan's capacity.
// They share the time axis; SaveStacked draws them one above the other.
func AutopilotPlots(title string, s *AutopilotSeries) ([]*plot.Plot, error) {
	end := 0.0
	for _, g := range s.Segments {
		end = max(end, g.EndS)
	}
	for _, t := range s.RateT {
		end = max(end, t+s.RateW)
	}
	gp := plot.New()
	gp.Title.Text = title
	gp.Y.Label.Text = "GPUs held"
	gp.Y.Min = 0
	var steps plotter.XYs
	for _, g := range s.Segments {
		steps = append(steps, plotter.XY{X: g.StartS, Y: float64(g.GPUs)}, plotter.XY{X: g.EndS, Y: float64(g.GPUs)})
	}
	if len(steps) > 0 {
		if err := addLine(gp, steps, palette[0], vg.Points(2), "autopilot"); err != nil {
			return nil, err
		}
	}
	for i, r := range s.RefGPUs {
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: r.Value}, {X: max(end, 1), Y: r.Value}})
		if err != nil {
			return nil, err
		}
		targetStyle(l, palette[(i+3)%len(palette)])
		gp.Add(l)
		gp.Legend.Add(fmt.Sprintf("%s (%g)", r.Name, r.Value), l)
	}
	gp.Add(plotter.NewGrid())

	rp := plot.New()
	rp.X.Label.Text = "time (s)"
	rp.Y.Label.Text = "requests/s"
	rp.Y.Min = 0
	if len(s.Rate) > 0 {
		var xy plotter.XYs
		for i := range s.Rate {
			xy = append(xy, plotter.XY{X: s.RateT[i], Y: s.Rate[i]}, plotter.XY{X: min(s.RateT[i]+s.RateW, max(end, s.RateT[i])), Y: s.Rate[i]})
		}
		if err := addLine(rp, xy, color.Gray{0x70}, vg.Points(1), "trace rate"); err != nil {
			return nil, err
		}
	}
	var capXY plotter.XYs
	for i := range s.CapT {
		if s.Cap[i] != s.Cap[i] { // NaN: the solver did not say
			continue
		}
		to := end
		if i+1 < len(s.CapT) {
			to = s.CapT[i+1]
		}
		capXY = append(capXY, plotter.XY{X: s.CapT[i], Y: s.Cap[i]}, plotter.XY{X: to, Y: s.Cap[i]})
	}
	if len(capXY) > 0 {
		if err := addLine(rp, capXY, palette[0], vg.Points(1.5), "plan capacity"); err != nil {
			return nil, err
		}
	}
	if len(s.Forecast) > 0 {
		var xy plotter.XYs
		for i := range s.Forecast {
			xy = append(xy, plotter.XY{X: s.ForecastT[i], Y: s.Forecast[i]})
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, err
		}
		sc.Color, sc.Shape, sc.Radius = palette[1], draw.CrossGlyph{}, vg.Points(3)
		rp.Add(sc)
		rp.Legend.Add("forecast at a decision", sc)
	}
	rp.Add(plotter.NewGrid())
	for _, p := range []*plot.Plot{gp, rp} {
		p.X.Min, p.X.Max = 0, max(end, 1)
	}
	return []*plot.Plot{gp, rp}, nil
}

// SaveStacked writes plots one above the other (equal heights, legends outside) as
// DIR/BASE.png and DIR/BASE.svg, and returns the paths.
func SaveStacked(plots []*plot.Plot, dir, base string, w, h vg.Length) ([]string, error) {
	return saveCanvases(dir, base, w, h, func(dc draw.Canvas) {
		n := vg.Length(len(plots))
		var lw vg.Length
		for _, p := range plots {
			lw = max(lw, legendWidth(p, dc))
		}
		alignYTicks(plots)
		for i, p := range plots {
			top := dc.Max.Y - vg.Length(i)*dc.Size().Y/n
			drawLegendOutside(p, draw.Crop(dc, 0, 0, top-dc.Size().Y/n-dc.Min.Y, top-dc.Max.Y), lw)
		}
	})
}

// alignYTicks pads every panel's y tick labels to the longest one's length with figure
// spaces (the width of a digit), so the panels' y axes are equally wide and their data
// areas, sharing the time axis, line up.
func alignYTicks(plots []*plot.Plot) {
	width := 0
	for _, p := range plots {
		for _, t := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
			width = max(width, utf8.RuneCountInString(t.Label))
		}
	}
	for _, p := range plots {
		p.Y.Tick.Marker = paddedTicks{p.Y.Tick.Marker, width}
	}
}

// paddedTicks left-pads an inner ticker's labels to width runes.
type paddedTicks struct {
	inner plot.Ticker
	width int
}

// Ticks implements plot.Ticker.
func (t paddedTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := t.inner.Ticks(lo, hi)
	for i := range ts {
		if n := utf8.RuneCountInString(ts[i].Label); ts[i].Label != "" && n < t.width {
			ts[i].Label = strings.Repeat("\u2007", t.width-n) + ts[i].Label
		}
	}
	return ts
}
