package kerneltab

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/internal/base/quantile"
	"github.com/plan-dev/plan/profiler/gpus"
)

// A measured kernel cannot beat physics: its FLOPs at the dtype's dense peak, its bytes at
// the memory bandwidth, and a kernel's launch-to-finish minimum. A point far above that
// floor — when every other point of its kind sits near it — measured something other than
// the kernel the step model needs (a fallback path, a mis-tuned configuration), and
// planning on it ranks whole deployments wrongly: the FP8 fused-MoE table on the H100
// sits 5–7× above its weight-read floor where the BF16 one of the same shapes sits at
// 1.1–1.4×, while real FP8 MoE serving runs at about half the BF16 step time.

// SuspectFloorMultiple is how far above its floor a measured point may sit before it is
// suspect. The measured GEMM, attention and BF16 MoE points of every GPU sit within about
// 3× of it (launch-bound decode attention at batch 1 the highest); 4× leaves room for
// noise and tile quantisation and catches whole slices measured on a slow path.
const SuspectFloorMultiple = 4.0

// Suspect is a measured point beyond SuspectFloorMultiple of its floor.
type Suspect struct {
	Point   Point   `json:"point"`
	Us      float64 `json:"us"`
	FloorUs float64 `json:"floor_us"`
	// Ratio is Us over FloorUs.
	Ratio float64 `json:"ratio"`
}

// String is "moe[fp8/…] num_tokens=8 (measured): 719 µs, 6.4× its 113 µs floor".
func (s Suspect) String() string {
	return fmt.Sprintf("%s: %.0f µs, %.1f× its %.0f µs floor", s.Point, s.Us, s.Ratio, s.FloorUs)
}

// peakTFLOPS is the dense tensor-core peak of dtype dt on g: FP8 and FP4 at their own
// rates where g has them, else at FP16 (weight-only kernels dequantize to FP16).
func peakTFLOPS(g gpus.Spec, dt DType) float64 {
	switch dt {
	case FP8, FP8Block:
		if g.FP8TFLOPS > 0 {
			return g.FP8TFLOPS
		}
	case NVFP4:
		if g.FP4TFLOPS > 0 {
			return g.FP4TFLOPS
		}
	}
	return g.FP16TFLOPS
}

// activationBytes is the bytes of one activation element a kernel of dtype dt reads: FP8
// (dynamic per-token) and NVFP4 quantize activations too; MXFP4 is weight-only.
func activationBytes(dt DType) float64 {
	switch dt {
	case FP8, FP8Block:
		return 1
	case NVFP4:
		return 0.53
	}
	return 2
}

// floorUs is the floor of table's slice at x on g, µs: the roofline (FLOPs at the dtype's
// peak, bytes at the bandwidth) plus launchUs, the shortest the table's kernels ever take on
// that GPU (its fastest measured point: launch and tail, which no size removes). False for
// a table it has no model of (collectives: their floor is the link's, which the tables set).
func floorUs(g gpus.Spec, launchUs float64, table, slice string, x []float64) (float64, bool) {
	bw := g.MemBWGBps * 1e3 // bytes per µs
	at := func(flops, bytes, peak float64) float64 {
		return max(flops/(peak*1e6), bytes/bw) + launchUs
	}
	switch table {
	case TableGEMM:
		dt := DType(slice)
		m, n, k := x[0], x[1], x[2]
		return at(2*m*n*k, n*k*weightBytes(dt)+m*k*activationBytes(dt)+2*m*n, peakTFLOPS(g, dt)), true
	case TableMoE:
		s, ok := parseMoESlice(slice)
		if !ok {
			return 0, false
		}
		tokens := x[0]
		tp, ep := float64(max(s.TP, 1)), float64(max(s.EP, 1))
		touched := math.Min(math.Max(ExpectedDistinctExperts(s.Experts, s.TopK, tokens)/ep, 1), float64(s.Experts)/ep)
		expert := 3 * float64(s.Hidden) * float64(s.Inter) / tp
		flops := 2 * tokens * float64(s.TopK) / ep * expert
		return at(flops, touched*expert*weightBytes(s.DType), peakTFLOPS(g, s.DType)), true
	case TableGenAttn:
		headDim, kvb, ok := attnKey(slice)
		if !ok {
			return 0, false
		}
		batch, heads, kvHeads, step := x[0], x[1], x[2], x[3]
		bytes := batch * step * kvHeads * headDim * 2 * kvb
		flops := 4 * batch * heads * step * headDim
		return at(flops, bytes, g.FP16TFLOPS), true
	case TableContextAttn:
		headDim, _, ok := attnKey(slice)
		if !ok {
			return 0, false
		}
		batch, isl, heads, kvHeads := x[0], x[1], x[2], x[3]
		flops := 4 * batch * heads * headDim * isl * (isl + 1) / 2
		bytes := 2 * batch * isl * (2*heads + 2*kvHeads) * headDim
		return at(flops, bytes, g.FP16TFLOPS), true
	}
	return 0, false
}

// attnKey reads an attention slice's head size and KV element bytes ("128/bfloat16").
func attnKey(slice string) (headDim, kvBytes float64, ok bool) {
	hd, kv, found := strings.Cut(slice, "/")
	h, err := strconv.Atoi(hd)
	if !found || err != nil || h <= 0 {
		return 0, 0, false
	}
	kvBytes = 2
	if strings.HasPrefix(kv, "fp8") {
		kvBytes = 1
	}
	return float64(h), kvBytes, true
}

// floorTables are the tables floorUs models.
var floorTables = []string{TableGEMM, TableMoE, TableGenAttn, TableContextAttn}

// Suspects lists every measured point of t beyond SuspectFloorMultiple of its floor, by
// table, slice and coordinates.
func (t *Tables) Suspects() []Suspect {
	g, err := gpus.Lookup(t.GPU)
	if err != nil {
		return nil
	}
	var out []Suspect
	for _, table := range floorTables {
		launch := t.fastestUs(table)
		for _, slice := range t.sliceKeys(table) {
			gr := t.slices[table+"/"+slice]
			gr.each(func(x []float64, ms float64) {
				f, ok := floorUs(g, launch, table, slice, x)
				if !ok || ms*1e3 <= SuspectFloorMultiple*f {
					return
				}
				p := Point{Table: table, Slice: slice, Axes: specs[table].axes, At: x, Measured: true}
				out = append(out, Suspect{Point: p, Us: ms * 1e3, FloorUs: f, Ratio: ms * 1e3 / f})
			})
		}
	}
	return out
}

// each calls fn with every measured node's coordinates and latency (ms).
func (g *grid) each(fn func(x []float64, ms float64)) {
	for at, v := range g.vals {
		if math.IsNaN(v) {
			continue
		}
		fn(g.coords(at), v)
	}
}

// SuspectSlice is a quantized MoE slice set aside: its points sit far above their floor
// where the BF16 measurements of the same shape do not.
type SuspectSlice struct {
	Table, Slice string
	Suspect, Of  int
	// MedianRatio is the median of its points' time over floor; BF16Ratio the same of the
	// BF16 slice it is judged against (the same shape and split, or all BF16 slices).
	MedianRatio, BF16Ratio float64
}

// quantizedPenalty is how much further from its floor a quantized slice may sit than the
// BF16 measurements of its shape before it is set aside: a quantized kernel dequantizes
// and scales, so it reaches less of its (lower) floor, but not a whole factor less — the
// B200's and L40S's FP8 MoE slices sit within 1.2× of their BF16 ones.
const quantizedPenalty = 2.0

// suspectSlices are table's quantized slices (MoE only: one slice per model shape) whose
// median time over floor exceeds SuspectFloorMultiple and quantizedPenalty × the BF16
// slice of the same shape and split (or, without one, the median BF16 slice): measured on a
// path other than the one vLLM serves with, so the whole slice is set aside. A lone
// suspect point among good neighbours is left to the interpolation, and listed.
func (t *Tables) suspectSlices(table string) map[string]SuspectSlice {
	g, err := gpus.Lookup(t.GPU)
	if err != nil || table != TableMoE {
		return nil
	}
	launch := t.fastestUs(table)
	type stat struct {
		med      float64
		bad, all int
	}
	stats := map[string]stat{}
	var bf16 []float64
	for _, slice := range t.sliceKeys(table) {
		var ratios []float64
		bad := 0
		t.slices[table+"/"+slice].each(func(x []float64, ms float64) {
			if f, ok := floorUs(g, launch, table, slice, x); ok {
				r := ms * 1e3 / f
				ratios = append(ratios, r)
				if r > SuspectFloorMultiple {
					bad++
				}
			}
		})
		if len(ratios) == 0 {
			continue
		}
		st := stat{med: quantile.Median(ratios), bad: bad, all: len(ratios)}
		stats[slice] = st
		if s, ok := parseMoESlice(slice); ok && s.DType == BF16 {
			bf16 = append(bf16, st.med)
		}
	}
	if len(bf16) == 0 {
		return nil
	}
	bf16Med := quantile.Median(bf16)
	out := map[string]SuspectSlice{}
	for slice, st := range stats {
		s, ok := parseMoESlice(slice)
		if !ok || s.DType == BF16 || st.med <= SuspectFloorMultiple {
			continue
		}
		ref := bf16Med
		b := s
		b.DType = BF16
		if bs, ok := stats[b.slice()]; ok {
			ref = bs.med
		}
		if st.med > quantizedPenalty*ref {
			out[slice] = SuspectSlice{Table: table, Slice: slice, Suspect: st.bad, Of: st.all, MedianRatio: st.med, BF16Ratio: ref}
		}
	}
	return out
}

// fastestUs is the fastest measured point of any slice of table, µs: the table's launch
// floor on this GPU.
func (t *Tables) fastestUs(table string) float64 {
	best := math.Inf(1)
	for _, slice := range t.sliceKeys(table) {
		t.slices[table+"/"+slice].each(func(_ []float64, ms float64) { best = min(best, ms*1e3) })
	}
	if math.IsInf(best, 1) {
		return 0
	}
	return best
}

// OutOfOrder is a measured point slower than a point of more work on the same line of its
// grid (a larger m of the same n and k, a larger batch of the same context…) by more than
// outOfOrderTolerance: a kernel that computes more can always compute less by padding, so
// the step model reads the faster point's time there instead.
type OutOfOrder struct {
	Point Point   `json:"point"`
	Us    float64 `json:"us"`
	// UsedUs is the time read instead: the fastest point of more work on its line.
	UsedUs float64 `json:"used_us"`
	// Axis is the axis along which it is out of order.
	Axis string `json:"axis"`
}

// String is "gemm[bfloat16] m=16 n=4096 k=4096 (measured): 41 µs, read as m=32's 33 µs".
func (o OutOfOrder) String() string {
	return fmt.Sprintf("%s: %.1f µs, read as %.1f µs (a point of more %s is faster)", o.Point, o.Us, o.UsedUs, o.Axis)
}

// outOfOrderTolerance is the measurement noise a point may sit above a point of more work
// and still be read as measured.
const outOfOrderTolerance = 0.10

// paddedAxes are, per table, the axes along which a kernel of more work serves less by
// padding: a step vLLM replays as a CUDA graph runs at the captured size at or above its
// tokens (capture sizes 1, 2, 4, 8, 16, 24, …, at most paddedMax), so a GEMM's rows (m), a
// fused-MoE layer's tokens and attention's batch are never slower than a larger captured
// size's. Shape axes (heads, head size, n, k), and sizes past the graphs (eager steps,
// which run the kernel their exact size picks), are left as measured.
var paddedAxes = map[string]string{
	TableGEMM: "m", TableMoE: "num_tokens", TableGenAttn: "batch_size", TableContextAttn: "batch_size",
}

// paddedMax is the largest CUDA-graph capture size vLLM takes by default
// (max_cudagraph_capture_size: min(2 × max_num_seqs, 512)).
const paddedMax = 512

// monotone makes g's padded axis (paddedAxes) non-decreasing up to noise: a node slower
// than the fastest measured node of more work on its line by more than
// outOfOrderTolerance is read at that node's time, and returned.
func (g *grid) monotone(table, slice string) []OutOfOrder {
	var out []OutOfOrder
	axes := specs[table].axes
	for ax := range g.axes {
		if axes[ax] != paddedAxes[table] {
			continue
		}
		n := len(g.axes[ax])
		for base := range g.vals {
			if (base/g.stride[ax])%n != 0 {
				continue // not the start of a line along ax
			}
			best := math.Inf(1)
			for j := n - 1; j >= 0; j-- {
				at := base + j*g.stride[ax]
				v := g.vals[at]
				if math.IsNaN(v) {
					continue
				}
				if g.axes[ax][j] > paddedMax {
					best = math.Inf(1) // an eager size: no padding to it
					continue
				}
				switch {
				case v > best*(1+outOfOrderTolerance):
					x := g.coords(at)
					out = append(out, OutOfOrder{Point: Point{Table: table, Slice: slice, Axes: axes, At: x, Measured: true}, Us: v * 1e3, UsedUs: best * 1e3, Axis: axes[ax]})
					g.vals[at] = best
				case v < best:
					best = v
				}
			}
		}
	}
	return out
}

// coords are node at's axis values.
func (g *grid) coords(at int) []float64 {
	x := make([]float64, len(g.axes))
	for i := range g.axes {
		x[i] = g.axes[i][at/g.stride[i]]
		at %= g.stride[i]
	}
	return x
}

// OutOfOrder lists the measured points the tables read at a faster point of more work.
func (t *Tables) OutOfOrder() []OutOfOrder { return t.outOfOrder }
