package sim

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"strconv"

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
// rounded down to a multiple of 10 (of 1 above 90%), never above target-4 points so the
// target line keeps room below it. A fixed 0–100 axis squashed the 90–100 band where the
// systems differ.
func attainmentYMin(curves []Curve, target float64) float64 {
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
	return max(0, min(math.Floor(100*target)-4, math.Floor(lo/step)*step-step))
}

// AttainmentPlot draws attainment (%) against load factor with the 99% target line.
func AttainmentPlot(title string, curves []Curve) (*plot.Plot, error) {
	return AttainmentPlotTarget(title, curves, 0.99)
}

// AttainmentPlotTarget draws attainment (%) against load factor with a dashed line at
// target (a share: 0.99 for the p99 SLO; a class's own percentile where it states one).
// The axis starts near the lowest value, and its label says so ("axis from 92%"): a cut
// axis must not pass for a full one.
func AttainmentPlotTarget(title string, curves []Curve, target float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "load factor"
	p.Y.Min, p.Y.Max = attainmentYMin(curves, target), 101
	p.Y.Label.Text = "SLO attainment (%)" + AxisCutNote(p.Y.Min, "%")
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for i, c := range curves {
		xy := make(plotter.XYs, len(c.Loads))
		for j := range c.Loads {
			xy[j].X, xy[j].Y = c.Loads[j], 100*c.Values[j]
			xmin, xmax = min(xmin, c.Loads[j]), max(xmax, c.Loads[j])
		}
		if err := AddSeriesNth(p, c.Name, xy, palette[i%len(palette)], i); err != nil {
			return nil, err
		}
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax = 0, 1
	}
	if xmax <= xmin {
		xmax = xmin + 1
	}
	if err := addHLine(p, xmin, xmax, 100*target, fmt.Sprintf("%s target", pct(target))); err != nil {
		return nil, err
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// AxisCutNote is the label suffix of an axis that does not start at zero: " (axis from
// 80%)", the broken-axis mark a reader needs to not misread the differences' size.
func AxisCutNote(from float64, unit string) string {
	if from <= 0 {
		return ""
	}
	return fmt.Sprintf(" (axis from %s%s)", strconv.FormatFloat(from, 'g', 4, 64), unit)
}

// pct writes a share as a percentage: 0.99 → "99%", 0.995 → "99.5%".
func pct(share float64) string {
	return strconv.FormatFloat(100*share, 'f', -1, 64) + "%"
}

// targetStyle is the grey dash of every SLO and target line.
func targetStyle(l *plotter.Line, c color.Color) {
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	l.Color = c
	l.Width = vg.Points(1)
}

// addLine draws xy as a solid line of color c, width points wide, named name in the legend.
func addLine(p *plot.Plot, xy plotter.XYs, c color.Color, width vg.Length, name string) error {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	l.Color, l.Width = c, width
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// addHLine draws a dashed horizontal line at y over [x0, x1], named name in the legend.
func addHLine(p *plot.Plot, x0, x1, y float64, name string) error {
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}})
	if err != nil {
		return err
	}
	targetStyle(l, color.Gray{0x60})
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// legendGap separates the data area from a legend drawn beside it.
const legendGap = 8

// SavePlot writes p as DIR/BASE.png and DIR/BASE.svg (atomically) and returns the paths.
// The legend is drawn in a column right of the plot, never over the data.
func SavePlot(p *plot.Plot, dir, base string, w, h vg.Length) ([]string, error) {
	return saveCanvases(dir, base, w, h, func(dc draw.Canvas) { DrawLegendOutside(p, dc) })
}

// saveCanvases draws a PNG and an SVG canvas of w × h with drawTo and writes each
// (atomically) as DIR/BASE.png and DIR/BASE.svg, returning the paths.
func saveCanvases(dir, base string, w, h vg.Length, drawTo func(dc draw.Canvas)) ([]string, error) {
	var paths []string
	for _, ext := range []string{"png", "svg"} {
		c, err := draw.NewFormattedCanvas(w, h, ext)
		if err != nil {
			return nil, err
		}
		drawTo(draw.New(c))
		var buf bytes.Buffer
		if _, err := c.WriteTo(&buf); err != nil {
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

// AddSeries adds xy to p as a line with a dot at every point, in col, named name in the
// legend: the one style the simulator's and the benches' plots draw a series in.
func AddSeries(p *plot.Plot, name string, xy plotter.XYs, col color.Color) error {
	return AddSeriesNth(p, name, xy, col, 0)
}

// seriesGlyphs and seriesDashes tell the n-th series of a plot from the others where their
// lines coincide (a least-cost fleet that is the single-type one, a schedule whose
// attainment equals the peak plan's): a later series is drawn over an earlier one, so it is
// dashed, narrower and marked with another glyph, and the earlier one shows through.
var (
	seriesGlyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}, draw.RingGlyph{}, draw.PlusGlyph{}}
	seriesDashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}, {vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}}
)

// AddSeriesNth adds the n-th series (0-based) of p: AddSeries's line and points, with the
// n-th glyph, dash pattern and a width that narrows with n, so coinciding series stay
// visible.
func AddSeriesNth(p *plot.Plot, name string, xy plotter.XYs, col color.Color, n int) error {
	l, pts, err := plotter.NewLinePoints(xy)
	if err != nil {
		return err
	}
	n = max(n, 0)
	l.Color, pts.Color = col, col
	l.Width = vg.Points(max(1.5-0.25*float64(n), 0.75))
	l.Dashes = seriesDashes[n%len(seriesDashes)]
	pts.Shape = seriesGlyphs[n%len(seriesGlyphs)]
	pts.Radius = vg.Points(2)
	p.Add(l, pts)
	p.Legend.Add(name, l, pts)
	return nil
}

// DrawLegendOutside draws p into c with its legend in a column at the right, top-aligned
// under the title; the column is at most half the width (longer names then run past the
// canvas edge rather than over the data). A plot without legend entries is drawn as is.
func DrawLegendOutside(p *plot.Plot, c draw.Canvas) {
	drawLegendOutside(p, c, legendWidth(p, c))
}

// legendWidth is the width of p's legend column on c (0: no legend).
func legendWidth(p *plot.Plot, c draw.Canvas) vg.Length {
	lw := p.Legend.Rectangle(c).Size().X
	if lw <= 0 {
		return 0
	}
	return min(lw+2*vg.Points(legendGap), c.Size().X/2)
}

// drawLegendOutside draws p with its legend in a column lw wide (stacked panels share the
// widest one, so their time axes line up).
func drawLegendOutside(p *plot.Plot, c draw.Canvas, lw vg.Length) {
	leg := p.Legend
	if lw <= 0 {
		p.Draw(c)
		return
	}
	p.Legend = plot.NewLegend()
	p.Draw(draw.Crop(c, 0, -lw, 0, 0))
	p.Legend = leg
	top := vg.Length(0)
	if p.Title.Text != "" {
		top = p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding + vg.Points(legendGap)
	}
	out := leg
	out.Top, out.Left, out.XOffs, out.YOffs = true, true, 0, 0
	out.Draw(draw.Crop(c, c.Size().X-lw+vg.Points(legendGap), 0, 0, -top))
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
// keeps memory flat and the garbage collector's work small (a 1,600-GPU run held
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
	srcs, expect, err := pointSources(cfg, load)
	if err != nil {
		return nil, err
	}
	opts := Options{
		Duration: cfg.Duration, Seed: PointSeed(cfg.Seed, load, -1), Jitter: cfg.Jitter,
		ExpectedRequests: int(math.Min(expect*1.1+1024, 1<<26)), Failures: cfg.Failures, CancelFraction: cfg.CancelFraction, Warmup: cfg.Warmup,
		LLM: cfg.LLM, Ctx: cfg.Ctx,
	}
	if compact {
		CompactAsSweeps(&opts)
	}
	return New(cfg.Dep, pol, srcs, opts)
}

// pointSources are a load point's arrival sources, one per application (nil: no arrivals),
// and the arrivals expected of them in the run.
func pointSources(cfg *SweepConfig, load float64) ([]Source, float64, error) {
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
		var err error
		if srcs[a], err = cfg.Arrival.New(rate*load, cfg.Dep.Apps[a].Name, PointSeed(cfg.Seed, load, a)); err != nil {
			return nil, 0, err
		}
	}
	return srcs, expect, nil
}

// CompactAsSweeps sets o to compact the engine as every sweep's load point does: every
// compactEvery events, with the request tables presized for what is in flight and the
// latency record for every expected answer.
func CompactAsSweeps(o *Options) {
	o.CompactEvery = compactEvery
	o.ExpectedAnswers = o.ExpectedRequests
	o.ExpectedRequests = min(o.ExpectedRequests, 4*compactEvery)
}
