package kerneltab

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/plan-dev/plan/internal/base/quantile"
	"github.com/plan-dev/plan/profiler/gpus"
	"github.com/plan-dev/plan/profiler/roofline"
)

// The roofline alternative to the tables: roofline.Kernels with per-op efficiencies fitted
// to a GPU's measurements. It times GPUs that have no tables (calibrated on the nearest
// measured architecture) and is the baseline the interpolation was chosen over (Compare).

// sample is one measured node the fit and the comparison read.
type sample struct {
	op string    // gemm, prefill, decode
	x  []float64 // the grid axes of its table
	hd float64   // head size (attention)
	us float64
}

// samples are the LLM-shaped BF16 nodes of t (LLMShapes), every stride-th.
func (t *Tables) samples(stride int) []sample {
	var out []sample
	n := 0
	for _, table := range []string{TableGEMM, TableContextAttn, TableGenAttn} {
		keep := LLMShapes(table)
		for _, s := range t.sliceKeys(table) {
			if !strings.HasSuffix(s, string(BF16)) {
				continue
			}
			hd := 0.0
			if table != TableGEMM {
				h, _, _ := strings.Cut(s, "/")
				hd, _ = parseFloat(h)
			}
			g := t.slices[table+"/"+s]
			for at, v := range g.vals {
				if math.IsNaN(v) {
					continue
				}
				x := g.node(at)
				if !keep(s, x) || (table == TableContextAttn && x[0] != 1) {
					continue
				}
				if n++; n%stride != 0 {
					continue
				}
				op := map[string]string{TableGEMM: "gemm", TableContextAttn: "prefill", TableGenAttn: "decode"}[table]
				out = append(out, sample{op: op, x: x, hd: hd, us: v * 1e3})
			}
		}
	}
	return out
}

func parseFloat(s string) (float64, bool) {
	var f float64
	var ok bool
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		f, ok = f*10+float64(c-'0'), true
	}
	return f, ok
}

// node is the axis values of grid index at.
func (g *grid) node(at int) []float64 {
	x := make([]float64, len(g.axes))
	for i := range g.axes {
		x[i] = g.axes[i][at/g.stride[i]]
		at %= g.stride[i]
	}
	return x
}

// predict is the roofline's time for a sample.
func predict(k roofline.Kernels, s sample) float64 {
	switch s.op {
	case "gemm":
		return k.GEMMUs(int(s.x[0]), int(s.x[1]), int(s.x[2]))
	case "prefill":
		return k.PrefillAttentionUs(int(s.x[1]), 0, int(s.x[2]), int(s.x[3]), int(s.hd))
	default:
		b := s.x[0]
		return k.DecodeAttentionUs(int(b), b*s.x[3], int(s.x[1]), int(s.x[2]), int(s.hd))
	}
}

// Errors is the median and 90th-percentile absolute relative error (%) of a prediction
// per op.
type Errors map[string][2]float64

func errorsOf(k roofline.Kernels, ss []sample) Errors {
	by := map[string][]float64{}
	for _, s := range ss {
		by[s.op] = append(by[s.op], math.Abs(predict(k, s)-s.us)/s.us*100)
	}
	out := Errors{}
	for op, e := range by {
		sort.Float64s(e)
		out[op] = [2]float64{quantile.NearestRank(e, 50), quantile.NearestRank(e, 90)}
	}
	return out
}

// FitRoofline fits the roofline's GEMM, memory, attention and kernel-overhead constants to
// gpu's measured GEMM and attention tables: coordinate descent (golden section on each
// constant in its range, four sweeps) on the mean squared log error over every third
// LLM-shaped node. The collective constants are left as base has them.
func FitRoofline(spec gpus.Spec, base roofline.KernelParams) (roofline.KernelParams, error) {
	t, err := Load(spec.Name)
	if err != nil {
		return base, err
	}
	ss := t.samples(3)
	k := roofline.NewKernels(spec)
	k.Params = base
	loss := func() float64 {
		var sum float64
		for _, s := range ss {
			d := math.Log(predict(k, s) / s.us)
			sum += d * d
		}
		return sum / float64(len(ss))
	}
	type knob struct {
		p      *float64
		lo, hi float64
	}
	knobs := []knob{
		{&k.Params.EtaGEMM, 0.2, 1}, {&k.Params.GEMMHalfM, 0, 512}, {&k.Params.EtaMem, 0.2, 1},
		{&k.Params.EtaAttn, 0.1, 1}, {&k.Params.KernelUs, 0.5, 15},
	}
	for sweep := 0; sweep < 4; sweep++ {
		for _, kn := range knobs {
			a, b := kn.lo, kn.hi
			const phi = 0.6180339887498949
			for i := 0; i < 30; i++ {
				c, d := b-phi*(b-a), a+phi*(b-a)
				*kn.p = c
				fc := loss()
				*kn.p = d
				if fd := loss(); fc < fd {
					b = d
				} else {
					a = c
				}
			}
			*kn.p = math.Round((a+b)/2*1000) / 1000
		}
	}
	return k.Params, nil
}

// Comparison is the table interpolation's leave-one-out error beside the fitted
// roofline's error, per op, on one GPU: the measurement that chose the interpolation.
type Comparison struct {
	GPU string
	// Table and Roofline: op → {median, p90} absolute relative error, %.
	Table, Roofline Errors
}

// Compare measures both models on gpu's LLM-shaped BF16 nodes: the interpolation
// leave-one-out (LeaveOneOut) and the roofline fitted to the same nodes (in-sample, which
// favours the roofline).
func Compare(spec gpus.Spec, fitted roofline.KernelParams) (Comparison, error) {
	t, err := Load(spec.Name)
	if err != nil {
		return Comparison{}, err
	}
	c := Comparison{GPU: spec.Name, Table: Errors{}}
	for op, table := range map[string]string{"gemm": TableGEMM, "prefill": TableContextAttn, "decode": TableGenAttn} {
		keep := LLMShapes(table)
		st := t.LeaveOneOut(table, 1, func(s string, x []float64) bool {
			return strings.HasSuffix(s, string(BF16)) && keep(s, x) && (table != TableContextAttn || x[0] == 1)
		})
		c.Table[op] = [2]float64{st.MedianPct, st.P90Pct}
	}
	k := roofline.NewKernels(spec)
	k.Params = fitted
	c.Roofline = errorsOf(k, t.samples(1))
	return c, nil
}

// CrossError is the error of the roofline fitted on one measured GPU predicting another's
// tables: what an unmeasured GPU calibrated on its nearest measured architecture can
// expect (op → {median, p90}, %).
func CrossError(target gpus.Spec, fittedOn roofline.KernelParams) (Errors, error) {
	t, err := Load(target.Name)
	if err != nil {
		return nil, err
	}
	k := roofline.NewKernels(target)
	k.Params = fittedOn
	return errorsOf(k, t.samples(1)), nil
}

// Ops lists an Errors' ops, sorted.
func (e Errors) Ops() []string {
	var out []string
	for op := range e {
		out = append(out, op)
	}
	slices.Sort(out)
	return out
}
