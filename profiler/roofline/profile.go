package roofline

import (
	"fmt"
	"slices"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/gpus"
	"github.com/plan-dev/plan/profiler/graph"
	"github.com/plan-dev/plan/profiler/partition"
)

// DefaultNoise is the amplitude of the per-block tie-breaking jitter (±3%).
const DefaultNoise = 0.03

// Options control an analytic profile.
type Options struct {
	// GPUs to estimate, in output order (required).
	GPUs []string
	// Grid gives the (vGPU, batch) points per GPU name; a GPU missing from it gets
	// DefaultGrid, or PPipeGrid(its MaxVGPU) when DefaultGrid is nil. Points with a slice
	// level above the GPU's MaxVGPU are dropped.
	Grid        map[string][]Point
	DefaultGrid []Point
	// Precision overrides the GPUs' default (TF32 where available, else FP32).
	Precision gpus.Precision
	// Blocks is the number of pre-partitioning blocks N (default 10); Method the
	// pre-partitioning method (default min-traffic); ReferenceGPU the type greedy balances
	// on (default L4 when listed, else the first GPU).
	Blocks       int
	Method       partition.Method
	ReferenceGPU string
	// Seed drives the tie-breaking noise; Noise is its amplitude (0 = DefaultNoise,
	// negative = none).
	Seed  int64
	Noise float64
	// Source records where the graph came from (zoo name or file).
	Source string
	// Partition, when set, is used instead of pre-partitioning (e.g. blocks chosen for a
	// measured profile of the same graph).
	Partition *partition.Result
}

// Profile estimates a whole model profile: per-layer latency on every GPU, the
// pre-partitioning into blocks with their cut sizes, and per-block latency for every grid
// point.
func Profile(g *graph.Graph, opt Options) (*formats.ModelProfile, error) {
	if len(opt.GPUs) == 0 {
		return nil, fmt.Errorf("roofline: no GPU types given")
	}
	if len(g.Nodes) == 0 {
		return nil, fmt.Errorf("roofline: graph %q has no nodes", g.Name)
	}
	layers := Layers(g)
	ests := make([]*Estimator, len(opt.GPUs))
	lat := make([][]float64, len(opt.GPUs))
	ref := 0
	for k, name := range opt.GPUs {
		e, err := NewEstimator(name, opt.Precision)
		if err != nil {
			return nil, err
		}
		ests[k] = e
		lat[k] = make([]float64, len(layers))
		for q, l := range layers {
			lat[k][q] = e.LayerUs(l, 1)
		}
		if e.Spec.Name == "L4" && opt.ReferenceGPU == "" {
			ref = k
		}
		if opt.ReferenceGPU != "" && e.Spec.Name == opt.ReferenceGPU {
			ref = k
		}
	}
	names := make([]string, len(ests))
	for k, e := range ests {
		names[k] = e.Spec.Name
	}
	cuts := graph.AllCutBytes(g)
	part := opt.Partition
	if part == nil {
		params := make([]int64, len(g.Nodes))
		for q, n := range g.Nodes {
			params[q] = n.ParamBytes
		}
		method := opt.Method
		if method == "" {
			method = partition.MinTraffic
		}
		var err error
		part, err = partition.Run(partition.Input{
			GPUs: names, Latency: lat, Cuts: cuts, ParamBytes: params,
			Blocks: opt.Blocks, Reference: ref,
		}, method)
		if err != nil {
			return nil, err
		}
	}
	mp := &formats.ModelProfile{
		Name:        g.Name,
		Backend:     "roofline",
		Source:      opt.Source,
		MemoryBytes: g.TotalParamBytes(),
		Partition:   &part.Info,
		Blocks:      part.Blocks,
		CutBytes:    part.CutBytes,
	}
	if len(g.Inputs) > 0 {
		mp.InputShape = append([]int64(nil), g.Tensors[g.Inputs[0]].Shape...)
	}
	for q, n := range g.Nodes {
		l := formats.Layer{Name: n.Name, Op: n.Op, FLOPs: n.FLOPs, Bytes: float64(n.ParamBytes) + n.ActBytes, ParamBytes: n.ParamBytes}
		for _, o := range n.Outputs {
			l.OutputBytes += g.Tensors[o].TransferBytes()
		}
		l.LatencyUs = make(map[string]float64, len(names))
		for k, name := range names {
			l.LatencyUs[name] = round3(lat[k][q])
		}
		mp.Layers = append(mp.Layers, l)
	}
	amp := opt.Noise
	if amp == 0 {
		amp = DefaultNoise
	} else if amp < 0 {
		amp = 0
	}
	for k, e := range ests {
		pts := opt.Grid[names[k]]
		if pts == nil {
			pts = opt.DefaultGrid
		}
		if pts == nil {
			pts = PPipeGrid(e.Spec.MaxVGPU)
		}
		noise := Noise(opt.Seed, g.Name, names[k], len(part.Blocks), amp)
		byBatch := map[int][]float64{}
		for _, p := range sortedPoints(pts) {
			if p.VGPU < 1 || p.VGPU > e.Spec.MaxVGPU || p.Batch < 1 {
				continue
			}
			whole, ok := byBatch[p.Batch]
			if !ok {
				whole = BlockUs(e, layers, part.Blocks, p.Batch)
				byBatch[p.Batch] = whole
			}
			f := e.SliceFactor(p.VGPU)
			bl := make([]float64, len(whole))
			for i, t := range whole {
				bl[i] = round3(max(1, t*f*noise[i]))
			}
			mp.Latency = append(mp.Latency, formats.LatencyEntry{GPU: names[k], VGPU: p.VGPU, Batch: p.Batch, BlockUs: bl})
		}
	}
	return mp, nil
}

// BlockUs sums layer latencies per block at batch b on the whole GPU.
func BlockUs(e *Estimator, layers []Layer, blocks []formats.Block, b int) []float64 {
	out := make([]float64, len(blocks))
	for i, bl := range blocks {
		for q := bl.FirstLayer; q < bl.EndLayer; q++ {
			out[i] += e.LayerUs(layers[q], b)
		}
	}
	return out
}

func sortedPoints(pts []Point) []Point {
	out := slices.Clone(pts)
	slices.SortFunc(out, func(a, b Point) int {
		if a.VGPU != b.VGPU {
			return a.VGPU - b.VGPU
		}
		return a.Batch - b.Batch
	})
	return slices.CompactFunc(out, func(a, b Point) bool { return a == b })
}

// round3 keeps three decimals (ns resolution) so profiles are compact and stable.
func round3(v float64) float64 {
	return float64(int64(v*1000+0.5)) / 1000
}
