// Package graph is the profiler's model-independent view of a DNN: operators in topological
// order with the tensors they read and write, per-sample shapes and analytic costs. Both the
// ONNX reader and the zoo of well-known architectures produce a Graph; the roofline backend,
// pre-partitioning and cut-size computation consume it.
//
// Conventions shared by every producer and consumer of a Graph:
//   - Shapes exclude the batch dimension; every cost is per sample (batch 1).
//   - Op names and attribute names are ONNX's (Conv, Gemm, MatMul, MaxPool, Relu, ...).
//     Attributes that index axes (axis, perm, Reshape's shape) use ONNX semantics on the
//     batched tensor, so axis 0 is the batch axis and perm includes it.
//   - Node.Inputs lists activations. Weights (initializers) may be listed too when a tensor
//     marked Const names them; otherwise their shapes follow from WeightShapes.
//   - Non-ONNX helper attributes: Gather "vocab_size" (rows of the embedding table), Resize
//     "scales" (integer factors per batched axis), Reshape "shape" (the ONNX shape input,
//     0 = copy the batch dimension).
package graph

// Tensor is a value flowing between nodes. Shape excludes the batch dimension.
type Tensor struct {
	Name  string  `json:"name"`
	Shape []int64 `json:"shape"`
	// DType is the element type name ("float32", "int64", ...).
	DType string `json:"dtype"`
	// Const marks an initializer or constant: it has no producer, is not a graph input and
	// never crosses a cut (every partition holds its own copy of the weights).
	Const bool `json:"const,omitempty"`
}

// Node is one operator. Costs are per sample (batch 1).
type Node struct {
	Name    string   `json:"name"`
	Op      string   `json:"op"`
	Inputs  []string `json:"inputs"`
	Outputs []string `json:"outputs"`
	// FLOPs counts multiply and add as two operations.
	FLOPs float64 `json:"flops"`
	// ParamBytes is the size of the node's weights (initializers).
	ParamBytes int64 `json:"param_bytes"`
	// ActBytes is activation traffic (inputs read + outputs written) at batch 1.
	ActBytes float64 `json:"act_bytes"`
	// Attrs holds operator attributes the cost model needs (kernel, stride, group...).
	Attrs map[string][]int64 `json:"attrs,omitempty"`
}

// Graph is a DNN in topological order.
type Graph struct {
	Name    string            `json:"name"`
	Nodes   []Node            `json:"nodes"`
	Tensors map[string]Tensor `json:"tensors"`
	// Inputs and Outputs are the graph's external (non-initializer) inputs and outputs.
	Inputs  []string `json:"inputs"`
	Outputs []string `json:"outputs"`
}

// Attr returns attribute name of n, or def when it is absent.
func (n *Node) Attr(name string, def ...int64) []int64 {
	if v, ok := n.Attrs[name]; ok {
		return v
	}
	return def
}

// AttrInt returns the first value of attribute name, or def.
func (n *Node) AttrInt(name string, def int64) int64 {
	if v, ok := n.Attrs[name]; ok && len(v) > 0 {
		return v[0]
	}
	return def
}

// Elements is the number of elements of a shape (1 for a scalar).
func Elements(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// ElemSize is the in-memory size of one element of dtype (4 for unknown types).
func ElemSize(dtype string) int64 {
	switch dtype {
	case "float64", "double", "int64", "uint64", "complex64":
		return 8
	case "float32", "float", "int32", "uint32":
		return 4
	case "float16", "bfloat16", "int16", "uint16":
		return 2
	case "int8", "uint8", "bool", "float8e4m3fn", "float8e5m2":
		return 1
	}
	return 4
}

// TransferElemSize is the size of one element when a tensor crosses a cut: feature maps travel
// as fp16 (PPipe reports ≤ 0.01% accuracy loss), so every float type counts 2 bytes and
// int64 counts 4 (ids fit 32 bits); other types keep their size.
func TransferElemSize(dtype string) int64 {
	switch dtype {
	case "float32", "float", "float16", "bfloat16", "float64", "double":
		return 2
	case "int64", "uint64":
		return 4
	}
	return ElemSize(dtype)
}

// Bytes is the in-memory size of tensor t at batch 1.
func (t Tensor) Bytes() int64 { return Elements(t.Shape) * ElemSize(t.DType) }

// TransferBytes is the fp16-accounted size of tensor t at batch 1.
func (t Tensor) TransferBytes() int64 { return Elements(t.Shape) * TransferElemSize(t.DType) }

// Producers maps each tensor to the index of the node that writes it.
func (g *Graph) Producers() map[string]int {
	p := make(map[string]int, len(g.Nodes))
	for i, n := range g.Nodes {
		for _, o := range n.Outputs {
			p[o] = i
		}
	}
	return p
}

// TotalFLOPs sums FLOPs over every node.
func (g *Graph) TotalFLOPs() float64 {
	var s float64
	for _, n := range g.Nodes {
		s += n.FLOPs
	}
	return s
}

// TotalParamBytes sums weight bytes over every node.
func (g *Graph) TotalParamBytes() int64 {
	var s int64
	for _, n := range g.Nodes {
		s += n.ParamBytes
	}
	return s
}
