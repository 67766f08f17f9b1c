package export

import (
	"fmt"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/onnx"
)

var tritonTypes = map[onnx.DataType]string{
	onnx.Float: "TYPE_FP32", onnx.Uint8: "TYPE_UINT8", onnx.Int8: "TYPE_INT8", onnx.Uint16: "TYPE_UINT16",
	onnx.Int16: "TYPE_INT16", onnx.Int32: "TYPE_INT32", onnx.Int64: "TYPE_INT64", onnx.String: "TYPE_STRING",
	onnx.Bool: "TYPE_BOOL", onnx.Float16: "TYPE_FP16", onnx.Double: "TYPE_FP64", onnx.Uint32: "TYPE_UINT32",
	onnx.Uint64: "TYPE_UINT64", onnx.BFloat16: "TYPE_BF16",
}

// Cutter cuts one model's ONNX file into the plan's partitions: blocks map to node ranges
// through the block profile the plan embeds (as serve's onnx workers cut it).
type Cutter struct {
	m      *onnx.Model
	blocks []formats.Block
}

// NewCutter checks that m is the model the plan's embedded profile of model describes.
func NewCutter(m *onnx.Model, p *formats.Plan, model string) (*Cutter, error) {
	prof := p.EmbeddedModel(model)
	if prof == nil || len(prof.Blocks) == 0 {
		return nil, fmt.Errorf("--model: the plan embeds no block profile of model %q to cut the file by", model)
	}
	if end := prof.Blocks[len(prof.Blocks)-1].EndLayer; end != len(m.Nodes) {
		return nil, fmt.Errorf("--model: the plan's profile of %q has %d layers but the file has %d nodes: profile this model file (plan profile)", model, end, len(m.Nodes))
	}
	if _, err := m.Graph(nil); err != nil {
		return nil, fmt.Errorf("--model: %w", err)
	}
	return &Cutter{m: m, blocks: prof.Blocks}, nil
}

// Cut returns the ONNX subgraph of blocks [first, end) and its Triton inputs and outputs
// (dims without the batch dimension: max_batch_size > 0 adds it).
func (c *Cutter) Cut(first, end int) (data []byte, ins, outs []TritonTensor, err error) {
	if first < 0 || end > len(c.blocks) || first >= end {
		return nil, nil, nil, fmt.Errorf("blocks [%d,%d): outside the profile's %d blocks", first, end, len(c.blocks))
	}
	a, b := c.blocks[first].FirstLayer, c.blocks[end-1].EndLayer
	data, err = onnx.Subgraph(c.m, a, b)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("blocks [%d,%d) (nodes %d..%d): %w", first, end, a, b, err)
	}
	in, out, err := onnx.BlockIO(c.m, a, b)
	if err != nil {
		return nil, nil, nil, err
	}
	conv := func(names []string) ([]TritonTensor, error) {
		var ts []TritonTensor
		for _, n := range names {
			shape, dt, ok := c.m.BatchedShape(n)
			if !ok {
				return nil, fmt.Errorf("tensor %q: no inferred shape", n)
			}
			typ, ok := tritonTypes[dt]
			if !ok {
				return nil, fmt.Errorf("tensor %q: element type %v has no Triton type", n, dt)
			}
			if len(shape) > 0 && shape[0] == -1 {
				shape = shape[1:]
			}
			if len(shape) == 0 {
				shape = []int64{1} // Triton: a per-sample scalar has dims [1]
			}
			ts = append(ts, TritonTensor{Name: n, DataType: typ, Dims: shape})
		}
		return ts, nil
	}
	if ins, err = conv(in); err != nil {
		return nil, nil, nil, err
	}
	if outs, err = conv(out); err != nil {
		return nil, nil, nil, err
	}
	return data, ins, outs, nil
}
