// Package roofline estimates per-layer and per-block latency of a DNN on GPUs the user does
// not have (stand-ins for PPipe's TensorRT block profiles): every layer costs the larger of
// its compute time and its memory time plus a launch overhead,
//
//	t_k(q, b) = max( b·F / (η_c·P_k·occ), (W + b·A) / (η_m·BW_k) ) + o_k,
//	occ = min(1, b·F / (SM_k·φ_k)),
//
// where F, W and A are the layer's FLOPs, weight bytes and activation bytes per sample. Small
// layers at small batches cannot fill every SM (occ < 1), and working sets that fit in L2 see
// a higher bandwidth. Elementwise ops that directly follow a convolution or matrix product are
// fused into it (as TensorRT does): they add only the extra tensors they read. A 1/v vGPU
// slice, with all v slices of the GPU running the same block, takes t(v, b) = v·κ_{k,v}·t(1, b).
// Per-GPU efficiencies live in calibration.go, fitted to aggregate facts of the PPipe
// authors' published block tables (see CALIBRATION.md).
package roofline

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"

	"github.com/plan-dev/plan/profiler/gpus"
	"github.com/plan-dev/plan/profiler/graph"
)

// Point is one (vGPU level, batch) cell of a latency grid.
type Point struct {
	VGPU  int
	Batch int
}

// PPipeGrid is the grid the PPipe authors profiled, limited to slice levels ≤ maxV:
// v=1: b=1..8; v=2: b=1..4; v=3,4: b=1..2.
func PPipeGrid(maxV int) []Point {
	var out []Point
	for v := 1; v <= min(maxV, 4); v++ {
		maxB := map[int]int{1: 8, 2: 4, 3: 2, 4: 2}[v]
		for b := 1; b <= maxB; b++ {
			out = append(out, Point{v, b})
		}
	}
	return out
}

// Grid is the cross product of levels and batches.
func Grid(levels, batches []int) []Point {
	var out []Point
	for _, v := range levels {
		for _, b := range batches {
			out = append(out, Point{v, b})
		}
	}
	return out
}

// Layer kinds, as the cost model treats them.
const (
	KindCompute = iota // a launched kernel: roofline + overhead
	KindFused          // epilogue of the previous kernel: extra bytes only
	KindView           // metadata only (Reshape, Flatten): free
)

// fusable ops can run as the epilogue of a preceding kernel.
var fusable = map[string]bool{
	"Relu": true, "LeakyRelu": true, "PRelu": true, "Clip": true, "Sigmoid": true, "Tanh": true,
	"HardSigmoid": true, "HardSwish": true, "Gelu": true, "Erf": true, "Add": true, "Mul": true,
	"Sub": true, "Div": true, "BatchNormalization": true,
}

var viewOps = map[string]bool{
	"Reshape": true, "Flatten": true, "Squeeze": true, "Unsqueeze": true, "Identity": true,
	"Dropout": true, "Shape": true, "Constant": true,
}

// Layer is a node's cost as the roofline sees it.
type Layer struct {
	// Kind is KindCompute, KindFused or KindView.
	Kind  int
	FLOPs float64 // per sample
	W     float64 // weight bytes
	A     float64 // activation bytes per sample (for fused layers: the extra bytes only)
}

// Layers classifies every node of an annotated graph. A kernel is a compute node plus the
// run of elementwise nodes right after it that consume its results: TensorRT and ONNX Runtime
// fuse those into the kernel's epilogue, so they cost only the extra tensors they read (a
// residual) and, when a broadcast enlarges the result (squeeze-and-excitation scaling), the
// larger write. Views (Reshape, Flatten) are free and do not interrupt a kernel.
func Layers(g *graph.Graph) []Layer {
	out := make([]Layer, len(g.Nodes))
	var k struct {
		open    bool               // the open kernel can absorb an epilogue
		results map[string]float64 // tensors the open kernel produced → elements
		largest float64            // the largest of them
	}
	addResults := func(n graph.Node) {
		for _, o := range n.Outputs {
			e := float64(graph.Elements(g.Tensors[o].Shape))
			k.results[o] = e
			k.largest = max(k.largest, e)
		}
	}
	for i, n := range g.Nodes {
		l := Layer{Kind: KindCompute, FLOPs: n.FLOPs, W: float64(n.ParamBytes), A: n.ActBytes}
		switch {
		case viewOps[n.Op]:
			l = Layer{Kind: KindView, W: l.W}
			if k.open {
				addResults(n) // a view of a kernel result is still that result
			}
		case fusable[n.Op] && k.open && readsAny(n, k.results):
			var extra, outElems float64
			for _, in := range n.Inputs {
				if _, ok := k.results[in]; ok {
					continue
				}
				if t, ok := g.Tensors[in]; ok && !t.Const {
					extra += float64(t.Bytes())
				}
			}
			for _, o := range n.Outputs {
				outElems += float64(graph.Elements(g.Tensors[o].Shape))
			}
			if outElems > k.largest {
				for _, o := range n.Outputs {
					extra += float64(g.Tensors[o].Bytes())
				}
			}
			l = Layer{Kind: KindFused, W: l.W, A: extra}
			addResults(n)
		default:
			k.open = isKernelOp(n.Op)
			k.results, k.largest = map[string]float64{}, 0
			addResults(n)
		}
		out[i] = l
	}
	return out
}

// isKernelOp reports ops whose epilogue can absorb elementwise work.
func isKernelOp(op string) bool {
	switch op {
	case "Conv", "ConvTranspose", "Gemm", "MatMul", "BatchNormalization":
		return true
	}
	return false
}

func readsAny(n graph.Node, set map[string]float64) bool {
	for _, in := range n.Inputs {
		if _, ok := set[in]; ok {
			return true
		}
	}
	return false
}

// Estimator evaluates layer latencies on one GPU type.
type Estimator struct {
	Spec   gpus.Spec
	Params Params
	// Precision selects the peak rate (default: the GPU's TF32-build default).
	Precision gpus.Precision
	peakFPus  float64 // FLOPs per µs
	bwBpus    float64 // bytes per µs
}

// NewEstimator looks up a GPU and its calibrated parameters.
func NewEstimator(gpu string, prec gpus.Precision) (*Estimator, error) {
	s, err := gpus.Lookup(gpu)
	if err != nil {
		return nil, err
	}
	if prec == "" {
		prec = s.DefaultPrecision()
	}
	switch prec {
	case gpus.FP32, gpus.TF32, gpus.FP16:
	default:
		return nil, fmt.Errorf("precision %q: must be fp32, tf32 or fp16", prec)
	}
	e := &Estimator{Spec: s, Params: ParamsFor(s.Name), Precision: prec}
	e.peakFPus = s.PeakTFLOPS(prec) * 1e6
	e.bwBpus = s.MemBWGBps * 1e3
	return e, nil
}

// memUs is the time to move bytes, with the share that fits in L2 served at Params.L2Boost×
// DRAM bandwidth.
func (e *Estimator) memUs(bytes float64) float64 {
	if bytes <= 0 {
		return 0
	}
	// The share of the traffic served from L2 falls smoothly as the working set outgrows it.
	l2 := float64(e.Spec.L2Bytes)
	hit := l2 / (l2 + bytes)
	t := bytes / (e.Params.EtaMem * e.bwBpus)
	return t * (1 - hit*(1-1/e.Params.L2Boost))
}

// LayerUs is the latency of one layer at batch b on the whole GPU, µs.
func (e *Estimator) LayerUs(l Layer, b int) float64 {
	fb := float64(b)
	switch l.Kind {
	case KindView:
		return 0
	case KindFused:
		return e.memUs(fb * l.A)
	}
	var tc float64
	if l.FLOPs > 0 {
		work := fb * l.FLOPs
		occ := min(1, work/(float64(e.Spec.SMs)*e.Params.PhiFLOPs))
		tc = work / (e.Params.Eta(l.FLOPs) * e.peakFPus * occ)
	}
	tm := e.memUs(l.W + fb*l.A)
	return max(tc, tm) + e.Params.OverheadUs
}

// SliceFactor is v·κ_v: how much longer a block takes on a 1/v slice.
func (e *Estimator) SliceFactor(v int) float64 {
	if v <= 1 {
		return 1
	}
	k := 1.0
	if v-1 < len(e.Params.Kappa) && e.Params.Kappa[v-1] > 0 {
		k = e.Params.Kappa[v-1]
	}
	return float64(v) * k
}

// Noise returns the deterministic per-(model, GPU, block) multiplicative jitter in
// [1−amp, 1+amp] that breaks ties between otherwise identical blocks.
func Noise(seed int64, model, gpu string, blocks int, amp float64) []float64 {
	h := fnv.New64a()
	h.Write([]byte(model))
	h.Write([]byte{0})
	h.Write([]byte(gpu))
	r := rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
	out := make([]float64, blocks)
	for i := range out {
		out[i] = 1 + amp*(2*r.Float64()-1)
	}
	return out
}
