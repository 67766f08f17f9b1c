package sim

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// CostPlot draws cost per hour against a swept quantity (rate scale, SLO or accuracy
// target), one line per series (`plan frontier`); a series' NaN points (no
// feasible fleet there) are left out. Curve.Loads are the x values, Values the costs.
func CostPlot(title, xLabel, currency string, curves []Curve) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = "cost per hour (" + currency + ")"
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	for i, c := range curves {
		var xy plotter.XYs
		for j := range c.Loads {
			if v := c.Values[j]; !math.IsNaN(v) && !math.IsInf(v, 0) {
				xy = append(xy, plotter.XY{X: c.Loads[j], Y: v})
			}
		}
		if len(xy) == 0 {
			continue
		}
		if err := AddSeriesNth(p, c.Name, xy, palette[i%len(palette)], i); err != nil {
			return nil, err
		}
	}
	p.Add(plotter.NewGrid())
	return p, nil
}
