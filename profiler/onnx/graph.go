package onnx

import (
	"fmt"
	"slices"

	"github.com/plan-dev/plan/profiler/graph"
)

// irAttrs lists the integer attributes copied into graph.Node.Attrs: those the cost model and
// the writer need (windows, groups, axes, transposition flags).
var irAttrs = []string{
	"kernel_shape", "strides", "pads", "dilations", "group", "ceil_mode", "count_include_pad",
	"axis", "perm", "transA", "transB", "keepdims", "axes", "to", "output_padding", "output_shape",
}

// Graph runs shape inference and returns the profiler's IR of the model. inputShape is the
// per-sample shape of the first graph input (batch excluded); nil uses the shapes the file
// declares. Every dynamic dimension other than the batch must be resolved by inputShape (or
// by a symbol shared with it), else the error says to pass --input-shape.
//
// Nodes keep the model's (topological) order, so node i of the graph is node i of the model
// and blocks over graph nodes are valid arguments to Subgraph. Initializers appear as Const
// tensors listed in the nodes' inputs. FLOPs are filled by graph.Annotate.
func (m *Model) Graph(inputShape []int64) (*graph.Graph, error) {
	shapes, err := m.infer(inputShape)
	if err != nil {
		return nil, err
	}
	m.binding = append([]int64(nil), inputShape...)
	if inputShape == nil {
		m.binding = nil
	}
	m.shapes = shapes
	staticBatch := true
	for _, in := range m.Inputs {
		if len(in.Dims) > 0 && !in.Dims[0].Known() {
			staticBatch = false
		}
	}
	name := m.GraphName
	if name == "" {
		name = "model"
	}
	g := &graph.Graph{Name: name, Tensors: map[string]graph.Tensor{}}
	addTensor := func(tn string) error {
		if _, ok := g.Tensors[tn]; ok || tn == "" {
			return nil
		}
		s, ok := shapes[tn]
		if !ok {
			return fmt.Errorf("tensor %q has no shape", tn)
		}
		g.Tensors[tn] = graph.Tensor{Name: tn, Shape: perSample(s, staticBatch), DType: s.dtype.String(), Const: s.konst}
		return nil
	}
	for _, in := range m.Inputs {
		g.Inputs = append(g.Inputs, in.Name)
		if err := addTensor(in.Name); err != nil {
			return nil, err
		}
	}
	for _, out := range m.Outputs {
		g.Outputs = append(g.Outputs, out.Name)
	}
	for i := range m.Nodes {
		n := &m.Nodes[i]
		gn := graph.Node{Name: n.Name, Op: n.OpType}
		for _, in := range n.Inputs {
			if in == "" {
				continue
			}
			if s, ok := shapes[in]; ok && s.konst && (n.OpType == "Resize" || n.OpType == "Upsample") && slices.Contains(s.dims, 0) {
				// An empty roi, scales or sizes constant stands for an omitted input (opset
				// 11-12 exporters write them): it holds no data, and the IR has no empty tensors.
				continue
			}
			if err := addTensor(in); err != nil {
				return nil, err
			}
			gn.Inputs = append(gn.Inputs, in)
		}
		for _, out := range n.Outputs {
			if out == "" {
				continue
			}
			if err := addTensor(out); err != nil {
				return nil, err
			}
			gn.Outputs = append(gn.Outputs, out)
		}
		for _, a := range irAttrs {
			if v := n.AttrInts(a); v != nil {
				if gn.Attrs == nil {
					gn.Attrs = map[string][]int64{}
				}
				gn.Attrs[a] = append([]int64(nil), v...)
			}
		}
		if n.OpType == "Reshape" && len(n.Inputs) > 1 {
			if s, ok := shapes[n.Inputs[1]]; ok && s.value != nil {
				if gn.Attrs == nil {
					gn.Attrs = map[string][]int64{}
				}
				gn.Attrs["shape"] = reshapeAttr(s.value)
			}
		}
		// Auto padding is a string attribute; turn it into explicit pads so consumers of the
		// IR need not know the rule.
		if n.OpType == "ConvTranspose" {
			if pads := transposePads(n, shapes); pads != nil {
				if gn.Attrs == nil {
					gn.Attrs = map[string][]int64{}
				}
				gn.Attrs["pads"] = pads
			}
		} else if a, ok := n.Attr("auto_pad"); ok && (string(a.S) == "SAME_UPPER" || string(a.S) == "SAME_LOWER") {
			if pads := samePads(n, shapes); pads != nil {
				if gn.Attrs == nil {
					gn.Attrs = map[string][]int64{}
				}
				gn.Attrs["pads"] = pads
			}
		}
		// ONNX infers a missing kernel_shape from the weight; the cost model reads the attribute.
		if (n.OpType == "Conv" || n.OpType == "ConvTranspose") && gn.Attrs["kernel_shape"] == nil && len(n.Inputs) > 1 {
			if w, ok := shapes[n.Inputs[1]]; ok && len(w.dims) > 2 {
				if gn.Attrs == nil {
					gn.Attrs = map[string][]int64{}
				}
				gn.Attrs["kernel_shape"] = append([]int64(nil), w.dims[2:]...)
			}
		}
		if n.OpType == "Resize" || n.OpType == "Upsample" {
			resizeAttrs(n, shapes, &gn)
		}
		g.Nodes = append(g.Nodes, gn)
	}
	for _, out := range g.Outputs {
		if err := addTensor(out); err != nil {
			return nil, err
		}
	}
	if err := graph.Annotate(g); err != nil {
		return nil, err
	}
	return g, nil
}

// reshapeAttr writes a propagated Reshape target in the IR's convention (0 = copy batch).
func reshapeAttr(v []int64) []int64 {
	out := make([]int64, len(v))
	for i, d := range v {
		if d == batchDim {
			d = 0
		}
		out[i] = d
	}
	return out
}

// resizeAttrs sets the IR's Resize helper attributes: "scales", the integer factor per batched
// axis when every output size is a multiple of the input size, and "nearest" = [1] when the
// mode is nearest (ONNX's default; the writer's default is linear).
func resizeAttrs(n *Node, shapes map[string]shapeInfo, gn *graph.Node) {
	if gn.Attrs == nil {
		gn.Attrs = map[string][]int64{}
	}
	mode := "nearest"
	if a, ok := n.Attr("mode"); ok && len(a.S) > 0 {
		mode = string(a.S)
	}
	if mode == "nearest" {
		gn.Attrs["nearest"] = []int64{1}
	}
	delete(gn.Attrs, "axes") // an opset-18 Resize attribute: the factors cover every axis
	if len(n.Inputs) == 0 || len(n.Outputs) == 0 {
		return
	}
	x, ok1 := shapes[n.Inputs[0]]
	y, ok2 := shapes[n.Outputs[0]]
	if !ok1 || !ok2 || len(x.dims) != len(y.dims) {
		return
	}
	factors := make([]int64, len(x.dims))
	for i, d := range x.dims {
		switch {
		case d == batchDim && y.dims[i] == batchDim:
			factors[i] = 1
		case d > 0 && y.dims[i] > 0 && y.dims[i]%d == 0:
			factors[i] = y.dims[i] / d
		default:
			return
		}
	}
	gn.Attrs["scales"] = factors
}

// transposePads gives a ConvTranspose with auto_pad SAME_* or output_shape the explicit pads
// that produce the same output.
func transposePads(n *Node, shapes map[string]shapeInfo) []int64 {
	if len(n.Inputs) < 2 || len(n.Outputs) == 0 {
		return nil
	}
	x, ok1 := shapes[n.Inputs[0]]
	w, ok2 := shapes[n.Inputs[1]]
	y, ok3 := shapes[n.Outputs[0]]
	if !ok1 || !ok2 || !ok3 || len(x.dims) < 3 || len(w.dims) != len(x.dims) {
		return nil
	}
	k := n.AttrInts("kernel_shape")
	if k == nil {
		k = w.dims[2:]
	}
	return convTransposePads(n, x.dims, y.dims, k)
}

// samePads computes explicit pads for auto_pad=SAME_* convolutions and pools.
func samePads(n *Node, shapes map[string]shapeInfo) []int64 {
	if len(n.Inputs) == 0 {
		return nil
	}
	x, ok := shapes[n.Inputs[0]]
	if !ok || len(x.dims) < 3 {
		return nil
	}
	k := n.AttrInts("kernel_shape")
	if k == nil && len(n.Inputs) > 1 {
		if w, ok := shapes[n.Inputs[1]]; ok && len(w.dims) == len(x.dims) {
			k = w.dims[2:]
		}
	}
	r := len(x.dims) - 2
	if len(k) != r {
		return nil
	}
	strides, dil := n.AttrInts("strides"), n.AttrInts("dilations")
	pads := make([]int64, 2*r)
	lower := false
	if a, ok := n.Attr("auto_pad"); ok && string(a.S) == "SAME_LOWER" {
		lower = true
	}
	for i := 0; i < r; i++ {
		s, d := strideDilation(strides, dil, i)
		in := x.dims[2+i]
		out := (in + s - 1) / s
		total := max((out-1)*s+d*(k[i]-1)+1-in, 0)
		small, big := total/2, total-total/2
		if lower {
			pads[i], pads[i+r] = big, small
		} else {
			pads[i], pads[i+r] = small, big
		}
	}
	return pads
}

// perSample drops the batch dimension from an inferred shape.
func perSample(s shapeInfo, staticBatch bool) []int64 {
	out := make([]int64, 0, len(s.dims))
	dropped := false
	for _, d := range s.dims {
		if d == batchDim && !dropped {
			dropped = true
			continue
		}
		out = append(out, d)
	}
	if !dropped && staticBatch && !s.konst && len(out) > 0 {
		// A model exported with a fixed batch: dimension 0 of every activation is the batch.
		out = out[1:]
	}
	return out
}
