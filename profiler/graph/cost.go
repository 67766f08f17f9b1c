package graph

import "fmt"

// viewOps change only metadata: no FLOPs and no memory traffic.
var viewOps = map[string]bool{
	"Reshape": true, "Flatten": true, "Squeeze": true, "Unsqueeze": true, "Identity": true,
	"Dropout": true, "Shape": true, "Constant": true,
}

// flopsPerElement is the arithmetic per output element of elementwise and normalisation ops.
// Transcendental activations cost a few operations each; the exact value barely matters
// because these ops are memory-bound on every GPU in the table.
var flopsPerElement = map[string]float64{
	"Relu": 1, "LeakyRelu": 2, "PRelu": 2, "Clip": 2, "Add": 1, "Sub": 1, "Mul": 1, "Div": 1,
	"Sigmoid": 4, "Tanh": 4, "Erf": 4, "Gelu": 8, "HardSigmoid": 3, "HardSwish": 4, "Swish": 5,
	"Silu": 5, "Exp": 4, "Sqrt": 4, "Pow": 4, "Neg": 1, "Abs": 1, "Max": 1, "Min": 1,
	"Where": 1, "Cast": 1, "Softmax": 5, "LogSoftmax": 6, "LayerNormalization": 8,
	"BatchNormalization": 2, "InstanceNormalization": 8, "GroupNormalization": 8,
	"Resize": 4, "Upsample": 4, "Pad": 0, "Slice": 0, "Concat": 0, "Transpose": 0,
	"Gather": 0, "Split": 0, "Expand": 0, "Tile": 0,
}

// Annotate fills FLOPs, ParamBytes and ActBytes of every node from tensor shapes and
// attributes. Ops it does not know get zero FLOPs and their input+output traffic, which is
// the right order of magnitude for data-movement ops.
func Annotate(g *Graph) error {
	for i := range g.Nodes {
		if err := annotateNode(g, &g.Nodes[i]); err != nil {
			return fmt.Errorf("graph %q: node %q (%s): %w", g.Name, g.Nodes[i].Name, g.Nodes[i].Op, err)
		}
	}
	return nil
}

// activations splits a node's inputs into activation tensors and constants.
func activations(g *Graph, n *Node) (acts []Tensor, consts []Tensor, err error) {
	for _, in := range n.Inputs {
		t, ok := g.Tensors[in]
		if !ok {
			return nil, nil, fmt.Errorf("input %q: not declared", in)
		}
		if t.Const {
			consts = append(consts, t)
		} else {
			acts = append(acts, t)
		}
	}
	return acts, consts, nil
}

func annotateNode(g *Graph, n *Node) error {
	acts, consts, err := activations(g, n)
	if err != nil {
		return err
	}
	if len(n.Outputs) == 0 {
		return fmt.Errorf("no outputs")
	}
	out, ok := g.Tensors[n.Outputs[0]]
	if !ok {
		return fmt.Errorf("output %q: not declared", n.Outputs[0])
	}
	outElems := float64(Elements(out.Shape))
	flops, err := NodeFLOPs(n, acts, out)
	if err != nil {
		return err
	}
	n.FLOPs = flops
	// Weights: constants listed as inputs (ONNX reader) or implied by the op (zoo).
	var params int64
	if len(consts) > 0 {
		for _, c := range consts {
			params += c.Bytes()
		}
	} else {
		shapes, err := WeightShapes(g, n)
		if err != nil {
			return err
		}
		for _, s := range shapes {
			params += Elements(s) * 4
		}
	}
	n.ParamBytes = params
	if viewOps[n.Op] {
		n.ActBytes = 0
		return nil
	}
	var act float64
	for _, a := range acts {
		act += float64(a.Bytes())
	}
	for _, o := range n.Outputs {
		if t, ok := g.Tensors[o]; ok {
			act += float64(t.Bytes())
		}
	}
	if n.Op == "Gather" && len(consts) == 0 {
		// An embedding lookup reads one table row per index: count the rows it gathers.
		act += outElems * 4
	}
	n.ActBytes = act
	return nil
}

// NodeFLOPs is the per-sample arithmetic of node n (multiply and add count as two) given its
// activation inputs and first output.
func NodeFLOPs(n *Node, acts []Tensor, out Tensor) (float64, error) {
	outElems := float64(Elements(out.Shape))
	switch n.Op {
	case "Conv", "ConvTranspose":
		if len(acts) == 0 || len(acts[0].Shape) < 1 || len(out.Shape) < 1 {
			return 0, fmt.Errorf("needs a [C, ...] input and output")
		}
		cin, cout := acts[0].Shape[0], out.Shape[0]
		group := n.AttrInt("group", 1)
		if group <= 0 || cin%group != 0 || cout%group != 0 {
			return 0, fmt.Errorf("group %d: must divide input channels %d and output channels %d", group, cin, cout)
		}
		k := float64(Elements(n.Attr("kernel_shape", 1, 1)))
		if n.Op == "ConvTranspose" {
			// Every input pixel scatters a Cout/group × k window.
			return 2 * k * float64(cin) * float64(cout/group) * float64(Elements(acts[0].Shape[1:])), nil
		}
		// 2·Kh·Kw·(Cin/group)·Cout·Hout·Wout.
		return 2 * k * float64(cin/group) * outElems, nil
	case "Gemm", "MatMul":
		if len(acts) == 0 || len(acts[0].Shape) == 0 {
			return 0, fmt.Errorf("needs an input with a shape")
		}
		a := acts[0].Shape
		kdim := a[len(a)-1]
		if n.Op == "Gemm" && n.AttrInt("transA", 0) == 1 && len(a) >= 2 {
			kdim = a[len(a)-2]
		}
		// Every output element is a length-K dot product.
		return 2 * float64(kdim) * outElems, nil
	case "MaxPool", "AveragePool", "LpPool":
		return float64(Elements(n.Attr("kernel_shape", 1, 1))) * outElems, nil
	case "GlobalAveragePool", "GlobalMaxPool", "ReduceMean", "ReduceSum", "ReduceMax":
		if len(acts) == 0 {
			return 0, fmt.Errorf("needs an input")
		}
		return float64(Elements(acts[0].Shape)), nil
	}
	if viewOps[n.Op] {
		return 0, nil
	}
	if f, ok := flopsPerElement[n.Op]; ok {
		return f * outElems, nil
	}
	return 0, nil
}

// WeightShapes returns the shapes of the initializers that node n implies when the graph
// lists only activations (as the zoo does), following ONNX's input conventions:
//   - Conv: W [Cout, Cin/group, k...], B [Cout] (batch norm is folded into the bias, as an
//     inference export does);
//   - ConvTranspose: W [Cin, Cout/group, k...], B [Cout];
//   - Gemm: B [N, K] with transB=1 else [K, N], C [N];
//   - MatMul with one activation input: B [K, N] (a linear layer without bias);
//   - BatchNormalization: scale, bias, mean, var [C]; LayerNormalization: scale, bias [D];
//   - Gather with attribute vocab_size: the table [vocab_size, D];
//   - PRelu: slope [C].
//
// Other ops have no weights.
func WeightShapes(g *Graph, n *Node) ([][]int64, error) {
	acts, _, err := activations(g, n)
	if err != nil {
		return nil, err
	}
	out, ok := g.Tensors[n.Outputs[0]]
	if !ok {
		return nil, fmt.Errorf("output %q: not declared", n.Outputs[0])
	}
	first := func() ([]int64, error) {
		if len(acts) == 0 || len(acts[0].Shape) == 0 {
			return nil, fmt.Errorf("needs an input with a shape")
		}
		return acts[0].Shape, nil
	}
	last := func(s []int64) int64 { return s[len(s)-1] }
	switch n.Op {
	case "Conv", "ConvTranspose":
		in, err := first()
		if err != nil {
			return nil, err
		}
		group := n.AttrInt("group", 1)
		if group <= 0 {
			return nil, fmt.Errorf("group %d: must be > 0", group)
		}
		cin, cout := in[0], out.Shape[0]
		w := []int64{cout, cin / group}
		if n.Op == "ConvTranspose" {
			w = []int64{cin, cout / group}
		}
		w = append(w, n.Attr("kernel_shape", 1, 1)...)
		return [][]int64{w, {cout}}, nil
	case "Gemm":
		in, err := first()
		if err != nil {
			return nil, err
		}
		k, nOut := last(in), last(out.Shape)
		if n.AttrInt("transB", 0) == 1 {
			return [][]int64{{nOut, k}, {nOut}}, nil
		}
		return [][]int64{{k, nOut}, {nOut}}, nil
	case "MatMul":
		if len(acts) != 1 {
			return nil, nil
		}
		in, err := first()
		if err != nil {
			return nil, err
		}
		return [][]int64{{last(in), last(out.Shape)}}, nil
	case "BatchNormalization":
		c := out.Shape[0]
		return [][]int64{{c}, {c}, {c}, {c}}, nil
	case "LayerNormalization":
		d := last(out.Shape)
		return [][]int64{{d}, {d}}, nil
	case "Gather":
		if v := n.AttrInt("vocab_size", 0); v > 0 {
			return [][]int64{{v, last(out.Shape)}}, nil
		}
	case "PRelu":
		return [][]int64{{out.Shape[0]}}, nil
	}
	return nil, nil
}
