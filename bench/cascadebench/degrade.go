package cascadebench

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
	"github.com/plan-dev/plan/sim"
)

// Degradation is one system's run beyond its plan (CascadeServe §6.4, Figs. 8/9): each system
// on the GPUs it needed for the set-up's degradation target, replaying the same window
// under a Scenario: more load than planned, or slower GPUs.
type Degradation struct {
	Setup    string  `json:"setup"`
	Scenario string  `json:"scenario"`
	System   string  `json:"system"`
	GPUs     float64 `json:"gpus"`
	Served   Served  `json:"served"`
	// Series: per WindowS seconds of arrivals, accuracy and p95 latency (ms) over the
	// answered requests (-1 where none was answered), and the requests dropped.
	WindowS float64   `json:"window_s"`
	Acc     []float64 `json:"window_accuracy"`
	P95Ms   []float64 `json:"window_p95_ms"`
	Dropped []int64   `json:"window_dropped"`
}

// Scenario degrades a replay: Load multiplies the arrival rates, Slow every GPU's batch
// latency; Fail loses the plan's highest GPU.
type Scenario struct {
	Name string
	Load float64
	Slow float64
	Fail bool
}

// Scenarios are the degradation runs: as planned, 1.5× the planned load (the trace beyond
// the plan's peak), every GPU 1.5× slower than profiled, and one GPU lost before the
// replay starts while the plan stays as it was (what a failure does until the planner
// runs again; a 1-GPU plan has nothing left and is skipped).
var Scenarios = []Scenario{{Name: "nominal", Load: 1, Slow: 1}, {Name: "load-x1.5", Load: 1.5, Slow: 1}, {Name: "slow-x1.5", Load: 1, Slow: 1.5},
	{Name: "gpu-fail", Load: 1, Slow: 1, Fail: true}}

// failGPU returns cp without its highest GPU: the replicas on it are gone, each gear's
// shares are renormalized over the replicas left, and a model left without replicas drops
// out of the gears' cascades (the model before it forwards, at its own threshold, to the
// model after it; a last model's predecessor answers everything). Errors when no GPU or no
// model of some gear is left.
func failGPU(cp *cascadesec.CascadePlan) (*cascadesec.CascadePlan, error) {
	g := -1
	for _, r := range cp.Placement {
		for _, x := range r.GPUs {
			g = max(g, x)
		}
	}
	out := *cp
	out.Placement = nil
	keep := map[string][]bool{} // per model, per replica in placement order: survives
	for _, r := range cp.Placement {
		ok := !slices.Contains(r.GPUs, g)
		keep[r.Model] = append(keep[r.Model], ok)
		if ok {
			out.Placement = append(out.Placement, r)
		}
	}
	if len(out.Placement) == 0 {
		return nil, fmt.Errorf("no GPU left after losing GPU %d", g)
	}
	out.Gears = nil
	for gi, gr := range cp.Gears {
		ng := gr
		ng.Models, ng.Thr, ng.Share = nil, nil, map[string][]float64{}
		last := -1 // the last model kept: its own exit threshold leads to the next kept one
		for i, m := range gr.Models {
			var sh []float64
			var sum float64
			for k, ok := range keep[m] {
				if ok {
					x := 1.0
					if k < len(gr.Share[m]) {
						x = gr.Share[m][k]
					}
					sh = append(sh, x)
					sum += x
				}
			}
			if len(sh) == 0 {
				continue // the model is gone: its predecessor's threshold now leads past it
			}
			for k := range sh {
				if sum > 0 {
					sh[k] /= sum
				} else {
					sh[k] = 1 / float64(len(sh))
				}
			}
			if last >= 0 {
				ng.Thr = append(ng.Thr, gr.Thr[last])
			}
			last = i
			ng.Models = append(ng.Models, m)
			ng.Share[m] = sh
		}
		if len(ng.Models) == 0 {
			return nil, fmt.Errorf("gear %d has no model left after losing GPU %d", gi, g)
		}
		if ng.Thr == nil {
			ng.Thr = []float64{}
		}
		out.Gears = append(out.Gears, ng)
	}
	return &out, nil
}

// degradationSystems are the systems the degradation runs compare (the ablations are
// covered by the GPU table).
var degradationSystems = []string{"cascadeserve", "ms+", "dynba", SystemCocktailRuntime}

// degrade replays, for each system feasible at target, its winning run under every
// scenario, with per-window accuracy and p95 (Cocktail+'s runtime policy, rarely within
// the SLO, with its lowest-p95 setting).
func (d *data) degrade(rows []MinGPUs, target float64, win []float64) ([]Degradation, error) {
	var out []Degradation
	ws := math.Max(1, math.Round(float64(len(win))/20))
	for _, sc := range Scenarios {
		q := make([]float64, len(win))
		for i, x := range win {
			q[i] = x * sc.Load
		}
		for _, sys := range degradationSystems {
			i := slices.IndexFunc(rows, func(r MinGPUs) bool { return r.System == sys && r.Target == target && r.plan != nil })
			if i < 0 {
				continue
			}
			r := rows[i]
			n := int(math.Ceil(float64(len(win)) / ws))
			lats := make([][]float64, n)
			right := make([]float64, n)
			dropped := make([]int64, n)
			rp := r.rp
			rp.slow = sc.Slow
			rp.each = func(arrS float64, drop bool, latMs float64, ok bool) {
				k := min(n-1, int(arrS/ws))
				if drop {
					dropped[k]++
					return
				}
				lats[k] = append(lats[k], latMs)
				if ok {
					right[k]++
				}
			}
			plan := r.plan
			if sc.Fail {
				cp, err := failGPU(cascadesec.PlanOf(plan))
				if err != nil {
					continue // nothing left to serve with
				}
				plan = cascadesec.SetPlan(&formats.Plan{}, cp)
			}
			sv, err := d.replay(plan, rp, q)
			if err != nil {
				return nil, fmt.Errorf("%s %s %s: %w", d.s.Name, sc.Name, sys, err)
			}
			gpus := r.GPUs
			if sc.Fail {
				gpus--
			}
			if sv.AvgGPUs > 0 {
				gpus = sv.AvgGPUs // an autoscaler's time-averaged GPUs in this run
			}
			dg := Degradation{Setup: d.s.Name, Scenario: sc.Name, System: sys, GPUs: gpus, Served: sv, WindowS: ws, Dropped: dropped}
			for k := range lats {
				acc, p95 := -1.0, -1.0 // nothing answered in the window
				if len(lats[k]) > 0 {
					sort.Float64s(lats[k])
					acc = right[k] / float64(len(lats[k]))
					p95 = lats[k][min(len(lats[k])-1, int(math.Ceil(0.95*float64(len(lats[k]))))-1)]
				}
				dg.Acc = append(dg.Acc, round4(acc))
				dg.P95Ms = append(dg.P95Ms, math.Round(p95))
			}
			out = append(out, dg)
		}
	}
	return out, nil
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// palette is a fixed color cycle (deterministic plots).
var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
}

type series struct {
	name string
	xy   plotter.XYs
	// color indexes palette: one color per system in every plot
	color int
}

// colorOf is a system's palette index (CascadeServe's per-GPU-count curve takes the last).
func colorOf(sys string) int {
	if i := slices.Index(degradationSystems, sys); i >= 0 {
		return i
	}
	return len(palette) - 1
}

// linePlot draws series with an optional dashed horizontal reference line.
func linePlot(title, xl, yl string, ss []series, ref float64, refName string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = xl, yl
	p.Legend.Top = true
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		var xy plotter.XYs
		for _, v := range s.xy {
			if v.Y >= 0 && !math.IsInf(v.Y, 0) {
				xy = append(xy, v)
				xmin, xmax = math.Min(xmin, v.X), math.Max(xmax, v.X)
			}
		}
		if len(xy) == 0 {
			continue
		}
		if err := sim.AddSeries(p, s.name, xy, palette[s.color%len(palette)]); err != nil {
			return nil, err
		}
	}
	if ref > 0 && xmax > xmin {
		l, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: ref}, {X: xmax, Y: ref}})
		if err != nil {
			return nil, err
		}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		l.Color = color.Gray{Y: 0x60}
		p.Add(l)
		p.Legend.Add(refName, l)
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// writePlots draws, into dir, accuracy vs p95 per system (every GPU-count row and
// CascadeServe's curve) and, per set-up and scenario, the degradation time series (p95
// and accuracy per window), as PNG and SVG. It returns the files written.
func writePlots(dir string, rep Report, setups []Setup) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	save := func(p *plot.Plot, base string) error {
		fs, err := sim.SavePlot(p, dir, base, 16*vg.Centimeter, 10*vg.Centimeter)
		files = append(files, fs...)
		return err
	}
	for _, s := range setups {
		var ss []series
		var cs series
		cs.name, cs.color = "cascadeserve (per GPU count)", colorOf("")
		for _, c := range rep.Curves {
			if c.Setup == s.Name && c.Served.Requests > 0 {
				cs.xy = append(cs.xy, plotter.XY{X: c.Served.P95Ms, Y: c.Served.Accuracy})
			}
		}
		if len(cs.xy) > 0 {
			ss = append(ss, cs)
		}
		for _, sys := range degradationSystems {
			sr := series{name: sys + " (min GPUs per target)", color: colorOf(sys)}
			for _, r := range rep.MinGPUs {
				if r.System == sys && r.Feasible && r.Served.Requests > 0 && slices.Contains(s.Targets, r.Target) {
					sr.xy = append(sr.xy, plotter.XY{X: r.Served.P95Ms, Y: r.Served.Accuracy})
				}
			}
			sort.Slice(sr.xy, func(i, j int) bool { return sr.xy[i].X < sr.xy[j].X })
			if len(sr.xy) > 0 {
				ss = append(ss, sr)
			}
		}
		if len(ss) > 0 {
			p, err := linePlot(fmt.Sprintf("%s: served accuracy vs p95 (trace replay)", s.Name), "p95 latency (ms)", "accuracy", ss, 0, "")
			if err != nil {
				return files, err
			}
			if err := save(p, "accuracy-vs-p95-"+s.Name); err != nil {
				return files, err
			}
		}
		for _, sc := range Scenarios {
			var lat, acc []series
			for _, dg := range rep.Degradation {
				if dg.Setup != s.Name || dg.Scenario != sc.Name {
					continue
				}
				name := fmt.Sprintf("%s (%g GPUs)", dg.System, dg.GPUs)
				l, a := series{name: name, color: colorOf(dg.System)}, series{name: name, color: colorOf(dg.System)}
				for k := range dg.P95Ms {
					x := (float64(k) + 0.5) * dg.WindowS
					l.xy = append(l.xy, plotter.XY{X: x, Y: dg.P95Ms[k]})
					a.xy = append(a.xy, plotter.XY{X: x, Y: dg.Acc[k]})
				}
				lat, acc = append(lat, l), append(acc, a)
			}
			if len(lat) == 0 {
				continue
			}
			p, err := linePlot(fmt.Sprintf("%s, %s: p95 per window", s.Name, sc.Name), "time (s)", "p95 latency (ms)", lat, float64(s.Latency.Milliseconds()), "latency SLO")
			if err != nil {
				return files, err
			}
			if err := save(p, fmt.Sprintf("degradation-%s-%s-p95", s.Name, sc.Name)); err != nil {
				return files, err
			}
			if p, err = linePlot(fmt.Sprintf("%s, %s: accuracy per window", s.Name, sc.Name), "time (s)", "accuracy", acc, degradeTarget(s), "accuracy target"); err != nil {
				return files, err
			}
			if err := save(p, fmt.Sprintf("degradation-%s-%s-accuracy", s.Name, sc.Name)); err != nil {
				return files, err
			}
		}
	}
	return files, nil
}

// degradeTarget is the accuracy target whose GPU counts the degradation runs use: the
// set-up's middle target (BERT 0.84, Llama 0.625: the paper's Fig. 8/9 operating points
// are p95 ≤ 400 ms on BERT and acc ≥ 0.60–0.625 on Llama).
func degradeTarget(s Setup) float64 { return s.Targets[len(s.Targets)/2] }

// paperDegradation is the paper's Figs. 8/9 summary (§6.4).
var paperDegradation = map[string]string{
	"bert":  "paper Fig. 8 (BERT, p95 ≤ 400 ms): CS on 1 GPU meets the SLO with slight accuracy loss; DynBa on 4 GPUs ≈4 s p95 at the peak; MS+ on 3 meets latency below CS's accuracy; Cocktail+ spikes at every peak (model loads)",
	"llama": "paper Fig. 9 (Llama, acc ≥ 0.60): CS on 4 GPUs keeps accuracy, latency rises after ~500 s; MS+ on 8 violates accuracy at the large peak; DynBa on 16 cannot absorb the second spike; Cocktail+ jumps at every peak",
}

func (o *Command) printDegradation(env benchapi.Env, rep Report) {
	if len(rep.Degradation) == 0 {
		return
	}
	var rows [][]string
	for _, dg := range rep.Degradation {
		worst := 0.0
		for _, x := range dg.P95Ms {
			worst = math.Max(worst, x)
		}
		minAcc := 1.0
		for _, x := range dg.Acc {
			if x >= 0 {
				minAcc = math.Min(minAcc, x)
			}
		}
		rows = append(rows, []string{dg.Setup, dg.Scenario, dg.System, fmt.Sprintf("%g", dg.GPUs), fmt.Sprintf("%.4f", dg.Served.Accuracy),
			fmt.Sprintf("%.4f", dg.Served.AccuracyAll), fmt.Sprint(dg.Served.Dropped), fmt.Sprintf("%.0f", dg.Served.P95Ms), fmt.Sprintf("%.4f", minAcc), fmt.Sprintf("%.0f", worst)})
	}
	fmt.Fprintln(env.Out, "Degradation beyond the plan (each system on its GPUs for the middle target; ACC over answered requests, ACC_ALL over all, drops counting as not right; per-window worst):")
	env.Table([]string{"SETUP", "SCENARIO", "SYSTEM", "GPUS", "ACC", "ACC_ALL", "DROPPED", "P95_MS", "MIN_WINDOW_ACC", "MAX_WINDOW_P95_MS"}, rows)
	for _, s := range []string{"bert", "llama"} {
		if slices.ContainsFunc(rep.Degradation, func(d Degradation) bool { return d.Setup == s }) {
			fmt.Fprintln(env.Out, paperDegradation[s])
		}
	}
	fmt.Fprintln(env.Out)
}
