package sim

import (
	"bytes"
	"errors"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/plan-dev/plan/formats"
)

// Curve is one attainment-vs-load series.
type Curve struct {
	Name   string
	Loads  []float64
	Values []float64 // attainment in [0, 1]
}

// CurvesOf returns the total and per-application attainment curves of a report.
func CurvesOf(rep *Report, prefix string) []Curve {
	total := Curve{Name: prefix + "all"}
	apps := make([]Curve, len(rep.BaseRPS))
	for i, a := range rep.BaseRPS {
		apps[i].Name = prefix + a.App
	}
	for _, p := range rep.Points {
		total.Loads = append(total.Loads, p.Load)
		total.Values = append(total.Values, p.Total.Attainment)
		for i := range apps {
			if i < len(p.Apps) {
				apps[i].Loads = append(apps[i].Loads, p.Load)
				apps[i].Values = append(apps[i].Values, p.Apps[i].Attainment)
			}
		}
	}
	if len(apps) <= 1 {
		return []Curve{total}
	}
	return append([]Curve{total}, apps...)
}

// palette is a fixed color cycle (deterministic output).
var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, color.RGBA{0x7f, 0x7f, 0x7f, 0xff}, color.RGBA{0xbc, 0xbd, 0x22, 0xff},
	color.RGBA{0x17, 0xbe, 0xcf, 0xff},
}

// attainmentYMin chooses the attainment axis's bottom from the data: the lowest value
// rounded down to a multiple of 10 (of 1 above 90%), never above 95 so the 99% target
// line keeps room below it. A fixed 0–100 axis squashed the 90–100 band where the
// systems differ (issue 37 item 4).
func attainmentYMin(curves []Curve) float64 {
	lo := 100.0
	for _, c := range curves {
		for _, v := range c.Values {
			if !math.IsNaN(v) {
				lo = min(lo, 100*v)
			}
		}
	}
	step := 10.0
	if lo >= 90 {
		step = 1
	}
	return max(0, min(95, math.Floor(lo/step)*step-step))
}

// AttainmentPlot draws attainment (%) against load factor with the 99% target line.
func AttainmentPlot(title string, curves []Curve) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "load factor"
	p.Y.Label.Text = "SLO attainment (%)"
	p.Y.Min, p.Y.Max = attainmentYMin(curves), 101
	p.Legend.Top = false
	p.Legend.Left = true
	xmin, xmax := 0.0, 1.0
	for i, c := range curves {
		xy := make(plotter.XYs, len(c.Loads))
		for j := range c.Loads {
			xy[j].X, xy[j].Y = c.Loads[j], 100*c.Values[j]
			if j == 0 || c.Loads[j] < xmin {
				xmin = min(xmin, c.Loads[j])
			}
			xmax = max(xmax, c.Loads[j])
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, err
		}
		col := palette[i%len(palette)]
		l.Color, pts.Color = col, col
		l.Width = vg.Points(1.5)
		pts.Shape = draw.CircleGlyph{}
		pts.Radius = vg.Points(2)
		p.Add(l, pts)
		p.Legend.Add(c.Name, l, pts)
	}
	target, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: 99}, {X: xmax, Y: 99}})
	if err != nil {
		return nil, err
	}
	target.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	target.Color = color.Gray{0x60}
	p.Add(target)
	p.Legend.Add("99% target", target)
	p.Add(plotter.NewGrid())
	return p, nil
}

// SavePlot writes p as DIR/BASE.png and DIR/BASE.svg (atomically) and returns the paths.
func SavePlot(p *plot.Plot, dir, base string, w, h vg.Length) ([]string, error) {
	var paths []string
	for _, ext := range []string{"png", "svg"} {
		wt, err := p.WriterTo(w, h, ext)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		if _, err := wt.WriteTo(&buf); err != nil {
			return nil, err
		}
		path := filepath.Join(dir, base+"."+ext)
		if err := formats.WriteAtomic(path, buf.Bytes()); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// RunForTimeline re-runs one load point and returns the finished simulation (for its
// batches); runs are deterministic, so it reproduces the point in the report exactly.
func RunForTimeline(cfg *SweepConfig, load float64) (*Sim, error) {
	s, err := newPointSim(cfg, load)
	if err != nil {
		return nil, err
	}
	if _, err := s.Run(); err != nil {
		return nil, err
	}
	return s, nil
}

// newPointSim builds the simulation of one load point: a fresh policy instance and one
// source per application seeded by PointSeed.
func newPointSim(cfg *SweepConfig, load float64) (*Sim, error) {
	return newPointSimCompact(cfg, load, false)
}

// compactEvery is how often a sweep point forgets finished requests (Engine.Compact): a
// large run then holds only the requests in flight, not every request it ever saw, which
// keeps memory flat and the garbage collector's work small (issue 15: a 1,600-GPU run held
// ~1 GB). Outcomes are unchanged: metrics are collected as requests finish.
const compactEvery = 1 << 16

func newPointSimCompact(cfg *SweepConfig, load float64, compact bool) (*Sim, error) {
	if cfg.Policies == nil {
		return nil, errors.New("sim: SweepConfig.Policies is nil")
	}
	pol, err := cfg.Policies.New(cfg.Dep, cfg.Policy, "")
	if err != nil {
		return nil, err
	}
	if cfg.Replay != nil {
		return newReplaySim(cfg, pol, load, compact)
	}
	srcs := make([]Source, len(cfg.Dep.Apps))
	var expect float64
	for a := range cfg.Dep.Apps {
		rate := cfg.Dep.Apps[a].RateRPS
		if a < len(cfg.BaseRPS) {
			rate = cfg.BaseRPS[a]
		}
		if rate*load <= 0 {
			continue
		}
		expect += rate * load * float64(cfg.Duration) / 1e6
		if srcs[a], err = cfg.Arrival.New(rate*load, cfg.Dep.Apps[a].Name, PointSeed(cfg.Seed, load, a)); err != nil {
			return nil, err
		}
	}
	opts := Options{
		Duration: cfg.Duration, Seed: PointSeed(cfg.Seed, load, -1), Jitter: cfg.Jitter,
		ExpectedRequests: int(math.Min(expect*1.1+1024, 1<<26)), Failures: cfg.Failures, CancelFraction: cfg.CancelFraction, Warmup: cfg.Warmup,
		LLM: cfg.LLM,
	}
	if compact {
		opts.CompactEvery = compactEvery
		opts.ExpectedAnswers = opts.ExpectedRequests
		opts.ExpectedRequests = min(opts.ExpectedRequests, 4*compactEvery)
	}
	return New(cfg.Dep, pol, srcs, opts)
}
