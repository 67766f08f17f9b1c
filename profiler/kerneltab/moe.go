package kerneltab

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/internal/base/quantile"
	"github.com/plan-dev/plan/profiler/gpus"
)

// TableMoE is vLLM's fused mixture-of-experts layer (FusedMoE: routing, the top-k expert
// GEMMs and the activation on one rank; no communication), keyed by the model's shape and
// its split over ranks, over the tokens entering the layer on that rank.
const TableMoE = "moe" // num_tokens

// Weight dtypes the MoE tables carry beyond BF16 and FP8.
const (
	MXFP4 DType = "w4a16_mxfp4" // MXFP4 weights, 16-bit activations (gpt-oss checkpoints)
	NVFP4 DType = "nvfp4"       // NVFP4 weights and activations (Blackwell only)
	// FP8Block is 128×128 block-scaled FP8 weights (DeepSeek's checkpoints).
	FP8Block DType = "fp8_block"
)

// MoEShape is one fused-MoE layer as the tables key it: the model's sizes (before any
// split) and how ranks split it — TP shards every expert's intermediate size, EP gives each
// rank Experts/EP whole experts.
type MoEShape struct {
	DType   DType
	Hidden  int // hidden_size
	Inter   int // per-expert intermediate size (moe_intermediate_size)
	TopK    int // experts per token
	Experts int // routed experts
	TP, EP  int
}

func (s MoEShape) slice() string {
	return fmt.Sprintf("%s/%d/%d/%d/%d/%d/%d", s.DType, s.Hidden, s.Inter, s.TopK, s.Experts, max(s.TP, 1), max(s.EP, 1))
}

func parseMoESlice(k string) (MoEShape, bool) {
	f := strings.Split(k, "/")
	if len(f) != 7 {
		return MoEShape{}, false
	}
	var v [6]int
	for i := range v {
		n, err := strconv.Atoi(f[i+1])
		if err != nil {
			return MoEShape{}, false
		}
		v[i] = n
	}
	return MoEShape{DType: DType(f[0]), Hidden: v[0], Inter: v[1], TopK: v[2], Experts: v[3], TP: v[4], EP: v[5]}, true
}

// ExpectedDistinctExperts is how many of experts routed experts a batch of tokens touches
// when each token picks topk distinct experts uniformly: an expert escapes one token with
// probability 1−topk/experts, independently per token, so E[touched] =
// experts·(1−(1−topk/experts)^tokens). It is what a decode step's expert GEMMs read: few
// tokens touch few experts, and the weight traffic grows with the touched count until every
// expert is read.
func ExpectedDistinctExperts(experts, topk int, tokens float64) float64 {
	if experts <= 0 || topk <= 0 || tokens <= 0 {
		return 0
	}
	p := math.Min(float64(topk)/float64(experts), 1)
	return float64(experts) * (1 - math.Pow(1-p, tokens))
}

// weightBytes is the bytes of one weight element in dtype (4-bit formats with their
// block scales).
func weightBytes(dt DType) float64 {
	switch dt {
	case FP8, FP8Block:
		return 1
	case MXFP4, NVFP4:
		return 0.53
	}
	return 2
}

// moeCost is a rank's work for one MoE layer of tokens tokens in relative units: the
// expert weights it reads (the touched share of its experts) plus its expert FLOPs over the
// GPU's ridge point (FLOPs per byte). Its ratio between two shapes scales a measured time
// to an unmeasured shape.
func moeCost(s MoEShape, tokens, ridge float64) float64 {
	tp, ep := float64(max(s.TP, 1)), float64(max(s.EP, 1))
	perRank := float64(s.Experts) / ep
	touched := ExpectedDistinctExperts(s.Experts, s.TopK, tokens) / ep
	touched = math.Min(math.Max(touched, 1), perRank)
	expert := 3 * float64(s.Hidden) * float64(s.Inter) / tp // gate, up and down
	bytes := touched * expert * weightBytes(s.DType)
	flops := 2 * tokens * float64(s.TopK) / ep * expert
	return bytes + flops/ridge
}

// ridge is the GPU's FLOPs per byte at its FP16 peak and memory bandwidth.
func (t *Tables) ridge() float64 {
	if g, err := gpus.Lookup(t.GPU); err == nil && g.MemBWGBps > 0 && g.FP16TFLOPS > 0 {
		return g.FP16TFLOPS * 1e3 / g.MemBWGBps
	}
	return 300
}

// MoEUs is one fused-MoE layer of tokens tokens on one rank. A shape the tables measured
// (a real model's, at that split and dtype) is interpolated over its token counts; any
// other is the measured shape of the same dtype and split nearest in work, scaled by the
// ratio of the two shapes' work at these tokens (moeCost) — Point.ScaledFrom names it.
func (t *Tables) MoEUs(s MoEShape, tokens int) (float64, Point, error) {
	if tokens <= 0 {
		return 0, Point{Table: TableMoE}, nil
	}
	x := []float64{float64(tokens)}
	if t.weightOnlyMoE(s.DType) {
		return t.moeWeightOnlyUs(s, tokens)
	}
	if ss, bad := t.suspectMoE(s); bad {
		return t.moeFromBF16(s, tokens, ss)
	}
	if _, ok := t.slices[TableMoE+"/"+s.slice()]; ok {
		return t.lookup(TableMoE, s.slice(), x)
	}
	return t.moeScaled(s, tokens, "")
}

// suspectMoE reports whether the slice MoEUs would read for s — its own, or the one its
// shape is scaled from — is set aside as suspect (suspectSlices), and which.
func (t *Tables) suspectMoE(s MoEShape) (SuspectSlice, bool) {
	if s.DType == BF16 {
		return SuspectSlice{}, false
	}
	bad := t.suspectMoESlices()
	if ss, ok := bad[s.slice()]; ok {
		return ss, true
	}
	if _, own := t.slices[TableMoE+"/"+s.slice()]; own {
		return SuspectSlice{}, false
	}
	// An unmeasured shape is scaled from its dtype's measured shapes: suspect when most of
	// them are.
	var n, nBad int
	var any SuspectSlice
	for _, k := range t.sliceKeys(TableMoE) {
		if m, ok := parseMoESlice(k); ok && m.DType == s.DType && m.TP == max(s.TP, 1) && m.EP == max(s.EP, 1) {
			n++
			if ss, ok := bad[k]; ok {
				nBad, any = nBad+1, ss
			}
		}
	}
	return any, n > 0 && 2*nBad > n
}

// suspectMoESlices are the MoE slices set aside, computed once per Tables.
func (t *Tables) suspectMoESlices() map[string]SuspectSlice {
	t.suspectOnce.Do(func() { t.moeSetAside = t.suspectSlices(TableMoE) })
	return t.moeSetAside
}

// moeFromBF16 is the best-supported estimate of a quantized MoE layer whose measured slice
// is set aside: the BF16 measurement of the same shape and split (its own slice, or scaled
// from the nearest BF16 shape), times the ratio of the two dtypes' floors at these tokens
// (the weight bytes the quantized layer reads, its FLOPs at its own peak). The Point says
// what was set aside and why.
func (t *Tables) moeFromBF16(s MoEShape, tokens int, ss SuspectSlice) (float64, Point, error) {
	us, p, err := t.moeScaledFromBF16(s, tokens)
	if err != nil {
		return 0, p, err
	}
	b := s
	b.DType = BF16
	p.ScaledFrom = b.slice()
	p.SetAside = fmt.Sprintf("moe[%s]: median %.1f× its floor where BF16 sits at %.1f×; %d of %d points beyond %g×", ss.Slice, ss.MedianRatio, ss.BF16Ratio, ss.Suspect, ss.Of, SuspectFloorMultiple)
	return us, p, nil
}

// moeScaledFromBF16 is the BF16 measurement of s's shape and split (its own slice, or
// scaled from the nearest BF16 shape: Point.ScaledFrom names it) times the ratio of s's
// dtype's floor to BF16's at these tokens (the weight bytes the layer reads, its FLOPs at
// the dtype's peak). The Point is not measured and carries s's slice.
func (t *Tables) moeScaledFromBF16(s MoEShape, tokens int) (float64, Point, error) {
	b := s
	b.DType = BF16
	x := []float64{float64(tokens)}
	var us float64
	var p Point
	var err error
	if _, ok := t.slices[TableMoE+"/"+b.slice()]; ok {
		us, p, err = t.lookup(TableMoE, b.slice(), x)
	} else {
		us, p, err = t.moeScaled(b, tokens, "")
	}
	if err != nil {
		return 0, p, err
	}
	t.once()
	if !t.specOK {
		return 0, p, fmt.Errorf("%s: not in the GPU catalogue", t.GPU)
	}
	fq, _ := floorUs(t.spec, t.moeLaunch, TableMoE, s.slice(), x)
	fb, _ := floorUs(t.spec, t.moeLaunch, TableMoE, b.slice(), x)
	p.Slice = s.slice()
	p.Measured = false
	return us * fq / fb, p, nil
}

// moeScaled scales the nearest measured shape (never the slice exclude: leave-one-shape-out
// uses it to hide a model's own measurements).
func (t *Tables) moeScaled(s MoEShape, tokens int, exclude string) (float64, Point, error) {
	ridge := t.ridge()
	want := moeCost(s, float64(tokens), ridge)
	best, bestD := "", math.Inf(1)
	var bestShape MoEShape
	for _, k := range t.sliceKeys(TableMoE) {
		m, ok := parseMoESlice(k)
		if !ok || m.DType != s.DType || m.TP != max(s.TP, 1) || m.EP != max(s.EP, 1) {
			continue
		}
		if exclude != "" && sameModel(m, exclude) {
			continue
		}
		// Nearest in the per-token shape: work per expert, experts per token and the
		// experts' count (the routing's sparsity), in log terms.
		d := math.Abs(math.Log(float64(m.Hidden*m.Inter)/float64(s.Hidden*s.Inter))) +
			math.Abs(math.Log(float64(m.TopK)/float64(s.TopK))) +
			0.5*math.Abs(math.Log(float64(m.Experts)/float64(s.Experts)))
		if d < bestD {
			best, bestD, bestShape = k, d, m
		}
	}
	if best == "" {
		return 0, Point{Table: TableMoE, Slice: s.slice()}, fmt.Errorf("%s %s: no %s measurements at moe_tp_size %d, moe_ep_size %d", t.GPU, TableMoE, s.DType, max(s.TP, 1), max(s.EP, 1))
	}
	us, p, err := t.lookup(TableMoE, best, []float64{float64(tokens)})
	if err != nil {
		return 0, p, err
	}
	p.ScaledFrom = best
	p.Slice = s.slice()
	p.Measured = false
	return us * want / moeCost(bestShape, float64(tokens), ridge), p, nil
}

// sameModel: slice k is the model shape of slice ex (any split or dtype).
func sameModel(m MoEShape, ex string) bool {
	e, ok := parseMoESlice(ex)
	return ok && e.Hidden == m.Hidden && e.Inter == m.Inter && e.TopK == m.TopK && e.Experts == m.Experts
}

// MoEShapeLOO predicts every measured MoE node of dtype from the other models' shapes
// alone (its own model's every split and dtype hidden): how well an unmeasured model's
// layer is timed. It returns the absolute relative errors' median and 90th percentile, %,
// over nodes of at most maxTokens tokens.
func (t *Tables) MoEShapeLOO(dt DType, maxTokens float64) (median, p90 float64, n int) {
	var errs []float64
	for _, k := range t.sliceKeys(TableMoE) {
		m, ok := parseMoESlice(k)
		if !ok || m.DType != dt {
			continue
		}
		g := t.slices[TableMoE+"/"+k]
		for at, v := range g.vals {
			tok := g.axes[0][at]
			if math.IsNaN(v) || tok > maxTokens {
				continue
			}
			us, _, err := t.moeScaled(m, int(tok), k)
			if err != nil {
				continue
			}
			errs = append(errs, math.Abs(us/1e3-v)/v*100)
		}
	}
	if len(errs) == 0 {
		return 0, 0, 0
	}
	sort.Float64s(errs)
	return quantile.NearestRank(errs, 50), quantile.NearestRank(errs, 90), len(errs)
}
