// Package graph is the profiler's model-independent view of a DNN: operators in topological
// order with the tensors they read and write, per-sample shapes and analytic costs. Both the
// ONNX reader and the zoo of well-known architectures produce a Graph; the roofline backend,
// pre-partitioning and cut-size computation consume it.
package graph

// Tensor is a value flowing between nodes. Shape excludes the batch dimension.
type Tensor struct {
	Name  string  `json:"name"`
	Shape []int64 `json:"shape"`
	// DType is the element type name ("float32", "int64", ...).
	DType string `json:"dtype"`
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
