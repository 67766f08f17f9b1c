package formats

// This file turns measured batch-latency points into the curve the planners and the data plane
// use (issue 31 item 1). Real measurements are noisy: a dip at one batch (BERT-base measured
// 39.6 ms at batch 71 against ~76 ms at its neighbours) would otherwise become a model's
// per-sample cost, and a falling last pair, extended by its slope, went negative past the
// table (bert-mini at batch 1000: −9,158 µs).
//
// The fit. Serving systems batch because a batch of b costs at most b batches of one and at
// least one batch of b−1: per-batch latency L(b) is non-decreasing in b and per-item time
// L(b)/b is non-increasing (CascadeServe §4.5 and PPipe §4 both plan on this shape). The set of
// curves with both properties is the intersection of two convex cones, so the least-squares
// fit onto it is unique; we compute it with Dykstra's alternating projections (Dykstra 1983;
// Boyle & Dykstra 1986), each projection an isotonic regression by pool-adjacent-violators
// (Barlow et al. 1972): non-decreasing on L, and non-increasing on L/b weighted by b² (the
// same Euclidean norm on L). Least squares pulls a lone outlier only part of the way, so a
// point the first fit leaves more than FitTolerance off is reported and left out of a second
// fit, and its batch takes the curve of its neighbours. Between measured batches the curve is
// linear (which keeps both properties); below the first it is flat; beyond the last it is
// extended at the last fitted per-item time, L(b) = L(n)·b/n: never below the last measured
// per-item time and never negative.
//
// Two exceptions keep what the data says. A curve whose per-item time rises from its first
// measured batch to its last (an analytic compute-bound curve, some roofline blocks) is fitted
// non-decreasing only: that rise is its shape, not noise. And a curve within FitSlack of its
// fit everywhere, none left out, is planned on as measured: such wobble moves no plan, and
// the bundled profiles keep the plans they always gave. More than a third of a curve's points
// off the fit is not noise around one curve (a bimodal regime): the first fit stands and they
// are reported.

import (
	"fmt"
	"math"
	"sort"
)

// FitTolerance is the relative distance between a measured point and the monotone fit of
// its neighbours past which the point is reported and left out of the fit (25%: a
// measurement's spread on a shared GPU is a few percent; a quarter is a different regime, a
// stall or a cache effect, not the batch's cost).
const FitTolerance = 0.25

// FitMonotone names the fit in ModelProfile.Fit.
const FitMonotone = "monotone"

// FitWarning is one measured point the fit left out.
type FitWarning struct {
	Model string
	GPU   string
	VGPU  int
	// Block is the block index (-1: the whole model's total_us).
	Block, Blocks int
	Batch         int
	Us, FitUs     float64
	// Neighbours are the nearest measured batches either side and their measured values.
	Neighbours [][2]float64
	// More counts the further points of the same curve off the fit, not reported one by one.
	More int
}

// maxFitWarnings bounds the points reported one by one per curve.
const maxFitWarnings = 5

func (w FitWarning) String() string {
	what := ""
	switch {
	case w.Block < 0:
		what = " total_us"
	case w.Blocks > 1:
		what = fmt.Sprintf(" block %d", w.Block)
	}
	var nb string
	for i, n := range w.Neighbours {
		if i > 0 {
			nb += ", "
		}
		nb += fmt.Sprintf("batch %d: %.6g µs", int(n[0]), n[1])
	}
	if nb == "" {
		nb = "none"
	}
	dir := "above"
	if w.Us < w.FitUs {
		dir = "below"
	}
	more := ""
	if w.More > 0 {
		more = fmt.Sprintf(" (and %d more batches of this curve more than %.0f%% off)", w.More, 100*FitTolerance)
	}
	return fmt.Sprintf("profile: model %s on %s (vgpu %d)%s: batch %d measured %.6g µs, %.0f%% %s the monotone fit of its neighbours (%s): planning on %.6g µs%s",
		w.Model, w.GPU, w.VGPU, what, w.Batch, w.Us, 100*math.Abs(w.Us-w.FitUs)/w.FitUs, dir, nb, w.FitUs, more)
}

// FitProfile replaces every model's latency table by its monotone fit, per (GPU, vGPU) and
// per block (sums of such curves keep both properties, so the whole model's does too), and
// keeps the measured values beside it (raw_block_us, raw_total_us) where they differ; a
// model whose table changed is marked fit: monotone. It fits from the raw values when the
// profile already records them, so fitting twice changes nothing. It returns the points
// left out, for the caller to warn about.
func FitProfile(p *Profile) []FitWarning {
	var out []FitWarning
	for i := range p.Models {
		out = append(out, p.Models[i].fit()...)
	}
	return out
}

func (m *ModelProfile) fit() []FitWarning {
	type key struct {
		gpu  string
		vgpu int
	}
	groups := map[key][]int{}
	var order []key
	for i, e := range m.Latency {
		k := key{e.GPU, e.VGPU}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	var warns []FitWarning
	changed := false
	for _, k := range order {
		idx := groups[k]
		sort.SliceStable(idx, func(a, b int) bool { return m.Latency[idx[a]].Batch < m.Latency[idx[b]].Batch })
		bs := make([]float64, len(idx))
		for j, i := range idx {
			bs[j] = float64(m.Latency[i].Batch)
		}
		nb := len(m.Latency[idx[0]].rawBlocks())
		for blk := -1; blk < nb; blk++ {
			ys := make([]float64, len(idx))
			ok := true
			for j, i := range idx {
				e := &m.Latency[i]
				if blk < 0 {
					ys[j] = e.rawTotal()
					ok = ok && ys[j] > 0
				} else if raw := e.rawBlocks(); blk < len(raw) {
					ys[j] = raw[blk]
				} else {
					ok = false
				}
				ok = ok && ys[j] >= 0 && !math.IsInf(ys[j], 0) && !math.IsNaN(ys[j])
			}
			if !ok {
				continue
			}
			fit, out := MonotoneFit(bs, ys)
			if withinSlack(ys, fit, out) {
				continue
			}
			warned := 0
			for j, o := range out {
				if o && warned < maxFitWarnings {
					warns = append(warns, FitWarning{Model: m.Name, GPU: k.gpu, VGPU: k.vgpu, Block: blk, Blocks: nb,
						Batch: int(bs[j]), Us: ys[j], FitUs: fit[j], Neighbours: neighbours(bs, ys, out, j)})
					warned++
				} else if o {
					warns[len(warns)-1].More++
				}
			}
			for j, i := range idx {
				if fit[j] == ys[j] {
					continue
				}
				changed = true
				m.Latency[i].setFit(blk, nb, fit[j])
			}
		}
	}
	if changed {
		m.Fit = FitMonotone
	}
	return warns
}

// FitSlack is the measurement noise planned on as measured: a curve whose every point lies
// within 5% of its monotone fit (and none left out) keeps its measured values. Such noise moves
// no plan noticeably, and the bundled analytic profiles, whose per-item time wobbles by a few
// percent around a flat curve, keep the plans they always gave.
const FitSlack = 0.05

func withinSlack(ys, fit []float64, out []bool) bool {
	for j := range ys {
		if out[j] || math.Abs(ys[j]-fit[j]) > FitSlack*math.Abs(fit[j]) {
			return false
		}
	}
	return true
}

// neighbours returns the nearest kept measured points either side of j.
func neighbours(bs, ys []float64, out []bool, j int) [][2]float64 {
	var nb [][2]float64
	for i := j - 1; i >= 0; i-- {
		if !out[i] {
			nb = append(nb, [2]float64{bs[i], ys[i]})
			break
		}
	}
	for i := j + 1; i < len(bs); i++ {
		if !out[i] {
			nb = append(nb, [2]float64{bs[i], ys[i]})
			break
		}
	}
	return nb
}

func (e *LatencyEntry) rawBlocks() []float64 {
	if len(e.RawBlockUs) > 0 {
		return e.RawBlockUs
	}
	return e.BlockUs
}

func (e *LatencyEntry) rawTotal() float64 {
	if e.RawTotalUs > 0 {
		return e.RawTotalUs
	}
	return e.TotalUs
}

// setFit stores the fitted value v of block blk (-1: total_us), keeping the raw value.
func (e *LatencyEntry) setFit(blk, nb int, v float64) {
	if blk < 0 {
		if e.RawTotalUs == 0 {
			e.RawTotalUs = e.TotalUs
		}
		e.TotalUs = v
		return
	}
	if len(e.RawBlockUs) == 0 {
		e.RawBlockUs = append([]float64(nil), e.BlockUs...)
		e.BlockUs = append([]float64(nil), e.BlockUs...)
	}
	if blk < len(e.BlockUs) && blk < nb {
		e.BlockUs[blk] = v
	}
}

// MonotoneFit fits latencies ys measured at increasing batches bs (> 0) with the curve that is
// non-decreasing and whose per-item time ys/bs is non-increasing, and reports the points more
// than FitTolerance off it. Up to a third of the points so reported are left out of a second
// fit (their fitted value is the curve of their neighbours, CurveAt); more are not noise
// around one curve (a bimodal regime, a stall over a range of batches), so the first fit
// stands and they are only reported.
func MonotoneFit(bs, ys []float64) (fit []float64, off []bool) {
	n := len(bs)
	off = make([]bool, n)
	fit = starShaped(bs, ys)
	flagged := 0
	for j := range ys {
		if fit[j] > 0 && math.Abs(ys[j]-fit[j]) > FitTolerance*fit[j] {
			off[j] = true
			flagged++
		}
	}
	if flagged == 0 || 3*flagged > n {
		return fit, off
	}
	var kb, ky []float64
	for j := range ys {
		if !off[j] {
			kb, ky = append(kb, bs[j]), append(ky, ys[j])
		}
	}
	kf := starShaped(kb, ky)
	for j := range ys {
		fit[j] = CurveAt(kb, kf, bs[j])
	}
	return fit, off
}

// CurveAt evaluates the fitted curve (bs, fit) at batch b: linear between points, flat below
// the first, extended at the last per-item time past the last.
func CurveAt(bs, fit []float64, b float64) float64 {
	n := len(bs)
	switch {
	case n == 0 || b <= 0:
		return 0
	case b <= bs[0]:
		return fit[0]
	case b >= bs[n-1]:
		return fit[n-1] * b / bs[n-1]
	}
	i := sort.SearchFloat64s(bs, b)
	if bs[i] == b {
		return fit[i]
	}
	t := (b - bs[i-1]) / (bs[i] - bs[i-1])
	return fit[i-1] + t*(fit[i]-fit[i-1])
}

// starShaped is the least-squares projection of ys onto {L non-decreasing, L/b
// non-increasing} by Dykstra's algorithm, finished with one pass that makes the constraints
// hold exactly (the iteration converges to them only in the limit).
func starShaped(bs, ys []float64) []float64 {
	n := len(ys)
	x := append([]float64(nil), ys...)
	if n < 2 || starShapedAlready(bs, ys) {
		return x
	}
	if ys[n-1]*bs[0] > ys[0]*bs[n-1] {
		// Per-item time rises from the first batch to the last: that is the profile's shape
		// (an analytic compute-bound curve), not noise; only L non-decreasing applies.
		ones := make([]float64, n)
		for i := range ones {
			ones[i] = 1
		}
		return pava(x, ones, false)
	}
	ones := make([]float64, n)
	w2 := make([]float64, n)
	for i, b := range bs {
		ones[i] = 1
		w2[i] = b * b
	}
	scale := 0.0
	for _, y := range ys {
		scale = math.Max(scale, math.Abs(y))
	}
	p := make([]float64, n)
	q := make([]float64, n)
	y := make([]float64, n)
	tmp := make([]float64, n)
	for it := 0; it < 2000; it++ {
		for i := range x {
			tmp[i] = x[i] + p[i]
		}
		copy(y, pava(tmp, ones, false))
		for i := range x {
			p[i] = tmp[i] - y[i]
			tmp[i] = (y[i] + q[i]) / bs[i]
		}
		z := pava(tmp, w2, true)
		moved := 0.0
		for i := range x {
			nx := z[i] * bs[i]
			q[i] = y[i] + q[i] - nx
			moved = math.Max(moved, math.Abs(nx-x[i]))
			x[i] = nx
		}
		if moved <= 1e-12*scale {
			break
		}
	}
	for i := 1; i < n; i++ {
		x[i] = math.Min(math.Max(x[i], x[i-1]), x[i-1]*bs[i]/bs[i-1])
	}
	return x
}

// starShapedAlready reports whether ys already has both properties (a monotone profile is
// planned on exactly as measured).
func starShapedAlready(bs, ys []float64) bool {
	for i := 1; i < len(ys); i++ {
		if ys[i] < ys[i-1] || ys[i]*bs[i-1] > ys[i-1]*bs[i] {
			return false
		}
	}
	return true
}

// pava is the weighted isotonic regression of v (non-decreasing; non-increasing when down)
// by pool-adjacent-violators.
func pava(v, w []float64, down bool) []float64 {
	type block struct {
		sum, wt float64
		n       int
	}
	var st []block
	for i := range v {
		x := v[i]
		if down {
			x = -x
		}
		st = append(st, block{x * w[i], w[i], 1})
		for len(st) > 1 {
			a, b := st[len(st)-2], st[len(st)-1]
			if a.sum/a.wt <= b.sum/b.wt {
				break
			}
			st = st[:len(st)-2]
			st = append(st, block{a.sum + b.sum, a.wt + b.wt, a.n + b.n})
		}
	}
	out := make([]float64, 0, len(v))
	for _, b := range st {
		m := b.sum / b.wt
		if down {
			m = -m
		}
		for k := 0; k < b.n; k++ {
			out = append(out, m)
		}
	}
	return out
}

// WholeCurve returns the measured batches (ascending) of the model on (gpu, vgpu) and its
// whole-model latency at each (the block sum, WholeUs); CurveAt evaluates it at any batch.
func (m *ModelProfile) WholeCurve(gpu string, vgpu int) (bs, us []float64) {
	var es []*LatencyEntry
	for i := range m.Latency {
		if e := &m.Latency[i]; e.GPU == gpu && e.VGPU == vgpu && e.Batch > 0 {
			es = append(es, e)
		}
	}
	sort.SliceStable(es, func(a, b int) bool { return es[a].Batch < es[b].Batch })
	for _, e := range es {
		bs = append(bs, float64(e.Batch))
		us = append(us, e.WholeUs())
	}
	return bs, us
}
