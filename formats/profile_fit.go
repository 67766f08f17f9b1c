package formats

// This file decides which measured batch-latency points the planners and the data plane use
// (the fit). Measured data is planned as measured: a profile's numbers are the
// model being solved, and a clean published curve (PPipe's TensorRT block tables, whose
// per-item time wobbles and may rise between batches) must give the plan its own numbers
// give. Only a point that cannot be the batch's cost is replaced: a dip to half its
// neighbours (BERT-base measured 39.6 ms at batch 71 against ~76 ms either side) or a
// falling last pair (bert-mini's, extended by its slope, reached −9,158 µs at batch 1000).
//
// The rule. A larger batch never costs less than a smaller one (it could be padded), so a
// point is judged by the order of its neighbours: the isotonic fit of the other points (the
// least-squares non-decreasing curve, by pool-adjacent-violators, Barlow et al. 1972). A
// point more than FitTolerance (25%) below that curve at the nearest smaller batch, or more
// than 25% above it at the nearest larger batch, is a candidate. Anything in order is never
// touched: per-item time that wobbles or rises between batches (a batch-1 kernel, a
// compute-bound block) and a step up at a kernel switch are shapes of real curves.
//
// The candidates are left out and the others refitted, and a candidate still that far off the
// refit curve is an outlier. A fall pools its neighbour into the first look's fit, which the
// second look clears; and where the first look cannot tell which of an adjacent pair is
// wrong (6.1 ms at batch 1, 4.0 ms at batch 2, 17.5 ms at batch 3), the second also bounds a
// point from below by the next kept batch's per-item time times its batch (batching never
// makes an item slower: CascadeServe §4.5, PPipe §4), which names batch 2. Outliers take the
// refit curve's value at their batch (linear between the neighbours; past the last kept
// batch, its per-item time; below the first, the line through the first two kept points,
// between their per-item floor and the first); every other point keeps its measured value,
// noise and all. The tolerance is relative, not k × a robust noise estimate (a MAD of
// residuals): PPipe's grids hold 2 to 8 batches per curve (ppipe.md, "Block latency"), too
// few for a median of residuals to estimate anything, while a measurement's spread on a
// shared GPU is a few percent and a quarter is a different regime (a stall, a cache effect),
// not the batch's cost. When more than a third of a curve's points are outliers the curve is
// not noise around one curve (a second regime): nothing is replaced and they are only
// reported.
//
// Past the largest measured batch a batch costs the last point's per-item time, L(b) =
// L(n)·b/n (CurveAt): increasing in b, never below L(n), never negative; below the first
// measured batch the curve is flat; between batches, linear.

import (
	"fmt"
	"math"
	"sort"
)

// FitTolerance is the relative distance between a measured point and the isotonic fit of its
// neighbours past which the point is an outlier (25%: a measurement's spread on a shared GPU
// is a few percent; a quarter is a different regime, a stall or a cache effect, not the
// batch's cost).
const FitTolerance = 0.25

// ModelProfile.Fit values: what the fit did to the model's measured latencies.
const (
	// FitNone: every latency is as measured.
	FitNone = "none"
	// FitOutliers: the entries with raw_block_us or raw_total_us had outliers replaced (the
	// values that differ from the raw ones); every other value is as measured.
	FitOutliers = "outliers"
	// FitMonotone: plans written before outliers-only fitting hold a whole-curve least-squares
	// fit (latency non-decreasing, per-item time non-increasing); still read, never written.
	FitMonotone = "monotone"
)

// FitWarning is one measured point off the isotonic fit of its neighbours.
type FitWarning struct {
	Model string
	GPU   string
	VGPU  int
	// Block is the block index (-1: the whole model's total_us).
	Block, Blocks int
	Batch         int
	// Us is the measured value, FitUs the neighbours' curve at the batch.
	Us, FitUs float64
	// Kept: the point is planned as measured (more than a third of its curve is off the fit).
	Kept bool
	// Neighbours are the nearest kept measured batches either side and their measured values.
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
	use := fmt.Sprintf("planning on %.6g µs", w.FitUs)
	if w.Kept {
		use = "planned as measured: more than a third of the curve is this far off, not one outlier"
	}
	return fmt.Sprintf("profile: model %s on %s (vgpu %d)%s: batch %d measured %.6g µs, %.0f%% %s the monotone fit of its neighbours (%s): %s%s",
		w.Model, w.GPU, w.VGPU, what, w.Batch, w.Us, 100*math.Abs(w.Us-w.FitUs)/w.FitUs, dir, nb, use, more)
}

// FitProfile replaces the outliers of every model's latency curves, per (GPU, vGPU) and per
// block and total_us, by the curve of their neighbours (MonotoneFit) and keeps the measured
// values beside them (raw_block_us, raw_total_us) in the entries it changed; every other value
// stays as measured. Each model records fit: outliers when a value was replaced, fit: none
// otherwise. It fits from the raw values when the profile already records them, so fitting
// twice changes nothing. It returns the points off the fit, for the caller to warn about.
func FitProfile(p *Profile) []FitWarning {
	var out []FitWarning
	for i := range p.Models {
		out = append(out, p.Models[i].fit()...)
	}
	return out
}

// PlanAsMeasured restores every measured value a fit replaced and records fit: none: the
// profile as measured, outliers included (plan solve --profile-fit none).
func PlanAsMeasured(p *Profile) {
	for i := range p.Models {
		p.Models[i].restoreRaw()
		p.Models[i].Fit = FitNone
	}
}

// restoreRaw puts the measured values back where a fit replaced them.
func (m *ModelProfile) restoreRaw() {
	for i := range m.Latency {
		e := &m.Latency[i]
		if len(e.RawBlockUs) > 0 {
			e.BlockUs = e.RawBlockUs
			e.RawBlockUs = nil
		}
		if e.RawTotalUs > 0 {
			e.TotalUs = e.RawTotalUs
			e.RawTotalUs = 0
		}
	}
}

// FitPoint is one value a fit replaced: the measured value and the one planned on.
type FitPoint struct {
	GPU   string
	VGPU  int
	Batch int
	// Block is the block index (-1: total_us).
	Block      int
	MeasuredUs float64
	UsedUs     float64
}

func (f FitPoint) String() string {
	what := "total_us"
	if f.Block >= 0 {
		what = fmt.Sprintf("block %d", f.Block)
	}
	return fmt.Sprintf("%s (vgpu %d) batch %d %s: measured %.6g µs, planned on %.6g µs", f.GPU, f.VGPU, f.Batch, what, f.MeasuredUs, f.UsedUs)
}

// Replaced lists the values of the model planned on instead of the measured ones, in the
// order of its latency table: the entries recording raw_block_us or raw_total_us, where a
// value differs from the raw one.
func (m *ModelProfile) Replaced() []FitPoint {
	var out []FitPoint
	for _, e := range m.Latency {
		for b, raw := range e.RawBlockUs {
			if b < len(e.BlockUs) && e.BlockUs[b] != raw {
				out = append(out, FitPoint{GPU: e.GPU, VGPU: e.VGPU, Batch: e.Batch, Block: b, MeasuredUs: raw, UsedUs: e.BlockUs[b]})
			}
		}
		if e.RawTotalUs > 0 && e.RawTotalUs != e.TotalUs {
			out = append(out, FitPoint{GPU: e.GPU, VGPU: e.VGPU, Batch: e.Batch, Block: -1, MeasuredUs: e.RawTotalUs, UsedUs: e.TotalUs})
		}
	}
	return out
}

func (m *ModelProfile) fit() []FitWarning {
	m.restoreRaw()
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
	m.Fit = FitNone
	for _, k := range order {
		idx := groups[k]
		sort.SliceStable(idx, func(a, b int) bool { return m.Latency[idx[a]].Batch < m.Latency[idx[b]].Batch })
		bs := make([]float64, len(idx))
		for j, i := range idx {
			bs[j] = float64(m.Latency[i].Batch)
		}
		nb := len(m.Latency[idx[0]].BlockUs)
		for blk := -1; blk < nb; blk++ {
			ys := make([]float64, len(idx))
			ok := true
			for j, i := range idx {
				e := &m.Latency[i]
				if blk < 0 {
					ys[j] = e.TotalUs
					ok = ok && ys[j] > 0
				} else if blk < len(e.BlockUs) {
					ys[j] = e.BlockUs[blk]
				} else {
					ok = false
				}
				ok = ok && ys[j] >= 0 && !math.IsInf(ys[j], 0) && !math.IsNaN(ys[j])
			}
			if !ok {
				continue
			}
			used, off := MonotoneFit(bs, ys)
			kept := false
			for j := range ys {
				kept = kept || (off[j] && used[j] == ys[j])
			}
			warned := 0
			for j, o := range off {
				if !o {
					continue
				}
				if warned == maxFitWarnings {
					warns[len(warns)-1].More++
					continue
				}
				fu := used[j]
				if kept {
					fu = neighboursCurve(bs, ys, off, bs[j])
				}
				warns = append(warns, FitWarning{Model: m.Name, GPU: k.gpu, VGPU: k.vgpu, Block: blk, Blocks: nb,
					Batch: int(bs[j]), Us: ys[j], FitUs: fu, Kept: kept, Neighbours: neighbours(bs, ys, off, j)})
				warned++
			}
			for j, i := range idx {
				if used[j] != ys[j] {
					m.Latency[i].setFit(blk, used[j])
					m.Fit = FitOutliers
				}
			}
		}
	}
	return warns
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

// setFit stores the value v used for block blk (-1: total_us), keeping the measured one.
func (e *LatencyEntry) setFit(blk int, v float64) {
	if blk < 0 {
		if e.RawTotalUs == 0 {
			e.RawTotalUs = e.TotalUs
		}
		e.TotalUs = v
		return
	}
	if len(e.RawBlockUs) == 0 {
		e.RawBlockUs = e.BlockUs
		e.BlockUs = append([]float64(nil), e.BlockUs...)
	}
	e.BlockUs[blk] = v
}

// MonotoneFit returns the values planned on for latencies ys measured at increasing batches
// bs (> 0) and the points off the isotonic fit of their neighbours (the file comment's rule):
// used[j] = ys[j] except at an outlier, which takes the isotonic fit of the other points at
// its batch (CurveAt). More than a third of the points off is not one curve with outliers:
// they are reported and nothing is replaced.
func MonotoneFit(bs, ys []float64) (used []float64, off []bool) {
	n := len(bs)
	used = append([]float64(nil), ys...)
	off = make([]bool, n)
	// First look: each point against the isotonic fit of all the others.
	cand := 0
	for j := range ys {
		mask := make([]bool, n)
		mask[j] = true
		kb, kf := keptCurve(bs, ys, mask)
		if outsideNeighbours(kb, kf, bs[j], ys[j], false) {
			off[j] = true
			cand++
		}
	}
	if cand == 0 || cand == n {
		return used, off // nothing off, or no neighbours to judge by: planned as measured
	}
	// Second look: a candidate stays an outlier when it is still off the fit of the points
	// that are not candidates (a fall pools its neighbour into the first look's fit).
	kb, kf := keptCurve(bs, ys, off)
	outliers := 0
	for j := range ys {
		if off[j] {
			off[j] = outsideNeighbours(kb, kf, bs[j], ys[j], true)
		}
		if off[j] {
			outliers++
		}
	}
	if outliers == 0 || 3*outliers > n {
		return used, off
	}
	kb, kf = keptCurve(bs, ys, off)
	for j := range ys {
		if off[j] {
			used[j] = replacement(kb, kf, bs[j])
		}
	}
	return used, off
}

// replacement is the value an outlier at batch b takes: the kept curve there (CurveAt), and
// below its first batch (where CurveAt is flat) the line through its first two points,
// clamped to what the two properties allow: at most the first kept value, at least its
// per-item time times b. A dip at batch 1 thus plans on about the trend's batch-1 cost, not
// on batch 2's.
func replacement(kb, kf []float64, b float64) float64 {
	if len(kb) < 2 || b >= kb[0] {
		return CurveAt(kb, kf, b)
	}
	v := kf[0] - (kb[0]-b)*(kf[1]-kf[0])/(kb[1]-kb[0])
	return math.Min(kf[0], math.Max(v, kf[0]*b/kb[0]))
}

// outsideNeighbours reports whether y, measured at batch b, breaks the order of the
// non-decreasing curve (kb, kf) by more than FitTolerance: more than 25% below its floor (the
// curve at the nearest smaller batch) or more than 25% above its ceiling (the curve at the
// nearest larger batch). With perItem (the second look only) the floor is also the nearest
// larger batch's per-item time times b, which tells a dip from the point above it where they
// are adjacent.
func outsideNeighbours(kb, kf []float64, b, y float64, perItem bool) bool {
	i := sort.SearchFloat64s(kb, b) // kb[:i] < b ≤ kb[i:]
	floor := 0.0
	if i > 0 {
		floor = kf[i-1]
	}
	if i < len(kb) && kb[i] == b {
		i++
	}
	if i < len(kb) && perItem {
		floor = math.Max(floor, kf[i]*b/kb[i])
	}
	return y < (1-FitTolerance)*floor || (i < len(kb) && y > (1+FitTolerance)*kf[i])
}

// keptCurve is the isotonic fit of the points not marked off, at their batches.
func keptCurve(bs, ys []float64, off []bool) (kb, kf []float64) {
	var ky []float64
	for j := range ys {
		if !off[j] {
			kb, ky = append(kb, bs[j]), append(ky, ys[j])
		}
	}
	return kb, isotonic(ky)
}

// neighboursCurve is the isotonic fit of the points not marked off, evaluated at b.
func neighboursCurve(bs, ys []float64, off []bool, b float64) float64 {
	kb, kf := keptCurve(bs, ys, off)
	if len(kb) == 0 {
		kb, kf = bs, isotonic(ys)
	}
	return CurveAt(kb, kf, b)
}

// CurveAt evaluates the curve (bs, ys) at batch b: linear between points, flat below the
// first, extended at the last point's per-item time past the last (increasing, never below
// the last point, never negative).
func CurveAt(bs, ys []float64, b float64) float64 {
	n := len(bs)
	switch {
	case n == 0 || b <= 0:
		return 0
	case b <= bs[0]:
		return ys[0]
	case b >= bs[n-1]:
		return ys[n-1] * b / bs[n-1]
	}
	i := sort.SearchFloat64s(bs, b)
	if bs[i] == b {
		return ys[i]
	}
	t := (b - bs[i-1]) / (bs[i] - bs[i-1])
	return ys[i-1] + t*(ys[i]-ys[i-1])
}

// isotonic is the least-squares non-decreasing fit of v by pool-adjacent-violators.
func isotonic(v []float64) []float64 {
	type block struct {
		sum float64
		n   int
	}
	var st []block
	for _, x := range v {
		st = append(st, block{x, 1})
		for len(st) > 1 {
			a, b := st[len(st)-2], st[len(st)-1]
			if a.sum*float64(b.n) <= b.sum*float64(a.n) {
				break
			}
			st = append(st[:len(st)-2], block{a.sum + b.sum, a.n + b.n})
		}
	}
	out := make([]float64, 0, len(v))
	for _, b := range st {
		m := b.sum / float64(b.n)
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
