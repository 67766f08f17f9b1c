package trt

import (
	"fmt"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/graph"
	"github.com/plan-dev/plan/profiler/partition"
)

// ImportOptions describe one trtexec export.
type ImportOptions struct {
	// Name of the model; Source records the files.
	Name, Source string
	// GPU is the GPU type the engine ran on (e.g. L4) and Batch the batch it was exported at.
	GPU   string
	Batch int
	// Blocks and Method control pre-partitioning (defaults 10, min-traffic).
	Blocks int
	Method partition.Method
}

// Import turns a profile export and an optional layer-info export into a model profile with
// per-layer latency on opt.GPU, blocks, cut sizes (when the layer info is detailed; zero
// otherwise) and one latency entry at (opt.GPU, v=1, opt.Batch).
func Import(profileJSON, layerInfoJSON []byte, opt ImportOptions) (*formats.ModelProfile, error) {
	if opt.GPU == "" {
		return nil, fmt.Errorf("trt import: the GPU type the engine ran on is required")
	}
	if opt.Batch <= 0 {
		opt.Batch = 1
	}
	if opt.Method == "" {
		opt.Method = partition.MinTraffic
	}
	prof, err := ParseProfile(profileJSON)
	if err != nil {
		return nil, err
	}
	var info *Info
	if layerInfoJSON != nil {
		if info, err = ParseLayerInfo(layerInfoJSON); err != nil {
			return nil, err
		}
	}
	layers, err := Merge(prof, info)
	if err != nil {
		return nil, err
	}
	cuts := make([]int64, len(layers)+1)
	var g *graph.Graph
	if info != nil && info.Detailed {
		if g, err = Graph(opt.Name, layers, int64(opt.Batch)); err != nil {
			return nil, err
		}
		cuts = graph.AllCutBytes(g)
	}
	lat := make([]float64, len(layers))
	var total float64
	for i, l := range layers {
		// Times are per inference of a batch; the layer table holds batch-opt.Batch values.
		lat[i] = l.Us
		total += l.Us
	}
	part, err := partition.Run(partition.Input{GPUs: []string{opt.GPU}, Latency: [][]float64{lat}, Cuts: cuts, Blocks: opt.Blocks}, opt.Method)
	if err != nil {
		return nil, err
	}
	mp := &formats.ModelProfile{
		Name:      opt.Name,
		Backend:   "trt",
		Source:    opt.Source,
		Partition: &part.Info,
		Blocks:    part.Blocks,
		CutBytes:  part.CutBytes,
	}
	if g != nil && len(g.Inputs) > 0 {
		mp.InputShape = g.Tensors[g.Inputs[0]].Shape
	}
	for i, l := range layers {
		fl := formats.Layer{Name: l.Name, Op: l.Type, LatencyUs: map[string]float64{opt.GPU: round3(l.Us)}}
		if fl.Op == "" {
			fl.Op = "TensorRT"
		}
		if g != nil {
			for _, o := range g.Nodes[i].Outputs {
				fl.OutputBytes += g.Tensors[o].TransferBytes()
			}
		}
		mp.Layers = append(mp.Layers, fl)
	}
	e := formats.LatencyEntry{GPU: opt.GPU, VGPU: 1, Batch: opt.Batch, TotalUs: round3(total)}
	for _, b := range part.Blocks {
		var s float64
		for q := b.FirstLayer; q < b.EndLayer; q++ {
			s += lat[q]
		}
		e.BlockUs = append(e.BlockUs, round3(s))
	}
	mp.Latency = []formats.LatencyEntry{e}
	return mp, nil
}

func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }
