package onnx

import (
	"errors"
	"fmt"
	"strings"
)

// batchDim marks the batch dimension inside inferred shapes (and inside propagated shape
// values, where -1 already means "infer"). It is far from any real size so arithmetic on it is
// detectable.
const batchDim int64 = -1 << 40

// shapeInfo is what inference knows about one tensor: its full shape (batch marked with
// batchDim), element type, and for small integer tensors computed from shapes (the
// Shape→Gather→Concat→Reshape idiom of exporters) the values.
type shapeInfo struct {
	dims  []int64
	dtype DataType
	value []int64 // nil when unknown
	// fvalue holds the values of small float constants (Resize scales and roi) and of float
	// arithmetic on them; nil when unknown.
	fvalue []float64
	konst  bool // an initializer
}

// inferError says which node failed and why.
type inferError struct {
	node, op string
	err      error
}

func (e *inferError) Error() string {
	return fmt.Sprintf("shape inference: node %q (%s): %v", e.node, e.op, e.err)
}

func (e *inferError) Unwrap() error { return e.err }

// ErrDynamicDim is wrapped by errors about dynamic dimensions that need --input-shape.
var ErrDynamicDim = errors.New("dynamic dimension")

// infer computes the shape of every tensor given the per-sample shape of the first input.
func (m *Model) infer(inputShape []int64) (map[string]shapeInfo, error) {
	shapes := map[string]shapeInfo{}
	for name, t := range m.Initializers {
		si := shapeInfo{dims: append([]int64{}, t.Dims...), dtype: t.DataType, konst: true}
		if (t.DataType == Int64 || t.DataType == Int32) && t.Elements() <= 64 {
			if v, err := t.Int64s(); err == nil {
				si.value = v
			}
		}
		if (t.DataType == Float || t.DataType == Double) && t.Elements() <= 64 {
			if v, err := t.Float64s(); err == nil {
				si.fvalue = v
			}
		}
		shapes[name] = si
	}
	params := map[string]int64{}
	for i, in := range m.Inputs {
		if !in.HasShape {
			return nil, fmt.Errorf("input %q: the model declares no shape: pass --input-shape (the per-sample shape, e.g. 3,224,224): %w", in.Name, ErrDynamicDim)
		}
		if i == 0 && inputShape != nil && len(inputShape) != len(in.Dims)-1 {
			return nil, fmt.Errorf("input %q: --input-shape %v has %d dimensions, the model's input has %d besides the batch", in.Name, inputShape, len(inputShape), len(in.Dims)-1)
		}
		dims := make([]int64, len(in.Dims))
		for k, d := range in.Dims {
			switch {
			case k == 0 && !d.Known():
				dims[k] = batchDim
				if d.Param != "" {
					params[d.Param] = batchDim
				}
			case i == 0 && inputShape != nil && k > 0:
				if d.Known() && d.Value != inputShape[k-1] {
					return nil, fmt.Errorf("input %q: dimension %d is %d in the model, --input-shape says %d", in.Name, k, d.Value, inputShape[k-1])
				}
				if inputShape[k-1] <= 0 {
					return nil, fmt.Errorf("input %q: --input-shape %v: dimensions must be positive", in.Name, inputShape)
				}
				dims[k] = inputShape[k-1]
				if d.Param != "" {
					params[d.Param] = dims[k]
				}
			case d.Known():
				dims[k] = d.Value
			case d.Param != "" && params[d.Param] != 0:
				dims[k] = params[d.Param]
			default:
				name := ""
				if d.Param != "" {
					name = fmt.Sprintf(" (%q)", d.Param)
				}
				return nil, fmt.Errorf("input %q: dimension %d%s is dynamic and only the batch dimension may be: pass --input-shape (the per-sample shape, e.g. 3,224,224): %w", in.Name, k, name, ErrDynamicDim)
			}
		}
		elem := in.Elem
		if elem == Undefined {
			elem = Float
		}
		shapes[in.Name] = shapeInfo{dims: dims, dtype: elem}
	}
	for i := range m.Nodes {
		n := &m.Nodes[i]
		outs, err := m.inferNode(n, shapes)
		if err != nil {
			// An operator without a rule may still have its output shapes declared in the file.
			if declared, ok := m.declared(n, params); ok {
				outs, err = declared, nil
			}
		}
		if err != nil {
			return nil, &inferError{node: n.Name, op: n.OpType, err: err}
		}
		for k, o := range n.Outputs {
			if o == "" || k >= len(outs) {
				continue
			}
			for _, d := range outs[k].dims {
				if d <= 0 && d != batchDim {
					return nil, &inferError{node: n.Name, op: n.OpType, err: fmt.Errorf("output %q: inferred shape %s is invalid", o, fmtDims(outs[k].dims))}
				}
			}
			shapes[o] = outs[k]
		}
	}
	return shapes, nil
}

// declared turns the value_info of a node's outputs into shapes, if the file gives them all.
func (m *Model) declared(n *Node, params map[string]int64) ([]shapeInfo, bool) {
	out := make([]shapeInfo, len(n.Outputs))
	for k, o := range n.Outputs {
		if o == "" {
			continue
		}
		vi, ok := m.ValueInfo[o]
		if !ok {
			for _, go_ := range m.Outputs {
				if go_.Name == o {
					vi, ok = go_, true
				}
			}
		}
		if !ok || !vi.HasShape {
			return nil, false
		}
		dims := make([]int64, len(vi.Dims))
		for i, d := range vi.Dims {
			switch {
			case d.Known():
				dims[i] = d.Value
			case d.Param != "" && params[d.Param] != 0:
				dims[i] = params[d.Param]
			case i == 0:
				dims[i] = batchDim
			default:
				return nil, false
			}
		}
		out[k] = shapeInfo{dims: dims, dtype: vi.Elem}
	}
	return out, true
}

func fmtDims(d []int64) string {
	s := make([]string, len(d))
	for i, v := range d {
		if v == batchDim {
			s[i] = "N"
		} else {
			s[i] = fmt.Sprint(v)
		}
	}
	return "[" + strings.Join(s, ",") + "]"
}

func normAxis(axis int64, rank int) (int, error) {
	if axis < 0 {
		axis += int64(rank)
	}
	if axis < 0 || axis >= int64(rank) {
		return 0, fmt.Errorf("axis %d out of range for rank %d", axis, rank)
	}
	return int(axis), nil
}

// broadcast applies numpy broadcasting.
func broadcast(shapes ...[]int64) ([]int64, error) {
	rank := 0
	for _, s := range shapes {
		rank = max(rank, len(s))
	}
	out := make([]int64, rank)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := rank - len(s)
		for i, d := range s {
			o := out[off+i]
			switch {
			case d == 1:
			case o == 1 || o == d:
				out[off+i] = d
			default:
				return nil, fmt.Errorf("shapes %s cannot be broadcast", fmtAll(shapes))
			}
		}
	}
	return out, nil
}

func fmtAll(shapes [][]int64) string {
	s := make([]string, len(shapes))
	for i, v := range shapes {
		s[i] = fmtDims(v)
	}
	return strings.Join(s, " and ")
}

// product multiplies dimensions; the batch may take part only on its own.
func product(d []int64) (int64, bool, error) {
	p, batch := int64(1), false
	for _, v := range d {
		if v == batchDim {
			if batch {
				return 0, false, errors.New("two batch dimensions")
			}
			batch = true
			continue
		}
		p *= v
	}
	return p, batch, nil
}

func mergeDims(d []int64) (int64, error) {
	p, batch, err := product(d)
	if err != nil {
		return 0, err
	}
	if batch {
		if p != 1 {
			return 0, fmt.Errorf("cannot merge the batch dimension with %s", fmtDims(d))
		}
		return batchDim, nil
	}
	return p, nil
}

var unaryOps = map[string]bool{
	"Relu": true, "Sigmoid": true, "Tanh": true, "Clip": true, "LeakyRelu": true, "Elu": true,
	"Selu": true, "HardSigmoid": true, "HardSwish": true, "Erf": true, "Exp": true, "Log": true,
	"Sqrt": true, "Neg": true, "Abs": true, "Identity": true, "Dropout": true, "Softplus": true,
	"Gelu": true, "Reciprocal": true, "Floor": true, "Ceil": true, "Round": true, "Sign": true,
	"Softmax": true, "LogSoftmax": true, "LRN": true, "InstanceNormalization": true,
	"LayerNormalization": true, "BatchNormalization": true, "Mish": true, "Celu": true,
	"PRelu": true, "Not": true, "Sin": true, "Cos": true, "ThresholdedRelu": true, "Hardmax": true,
}

var binaryOps = map[string]bool{
	"Add": true, "Sub": true, "Mul": true, "Div": true, "Pow": true, "Max": true, "Min": true,
	"Sum": true, "Mean": true, "Where": true, "Equal": true, "Less": true, "Greater": true,
	"LessOrEqual": true, "GreaterOrEqual": true, "And": true, "Or": true, "Xor": true, "Mod": true,
}

func clampRange(start, end, n int64) (int64, int64) {
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start = min(max(start, 0), n)
	end = min(max(end, start), n)
	return start, end
}

// arith propagates elementwise integer arithmetic on shape values (the batch stays symbolic
// only under multiplication and division by 1).
func arith(op string, a, b []int64) []int64 {
	out := make([]int64, len(a))
	for i := range a {
		x, y := a[i], b[i]
		if x == batchDim || y == batchDim {
			switch {
			case op == "Mul" && (x == 1 || y == 1):
				out[i] = batchDim
				continue
			case op == "Div" && y == 1:
				out[i] = batchDim
				continue
			}
			return nil
		}
		v, ok := binaryOp(op, x, y)
		if !ok {
			return nil
		}
		out[i] = v
	}
	return out
}

// windowOut computes the spatial output of a convolution or pooling window.
func windowOut(n *Node, in, kernel []int64, ceil bool) ([]int64, error) {
	r := len(in)
	strides := n.AttrInts("strides")
	dil := n.AttrInts("dilations")
	pads := n.AttrInts("pads")
	auto := "NOTSET"
	if a, ok := n.Attr("auto_pad"); ok && len(a.S) > 0 {
		auto = string(a.S)
	}
	out := make([]int64, r)
	for i := 0; i < r; i++ {
		s, d := strideDilation(strides, dil, i)
		if s <= 0 || d <= 0 || kernel[i] <= 0 {
			return nil, fmt.Errorf("bad kernel %v, strides %v or dilations %v", kernel, strides, dil)
		}
		if in[i] == batchDim {
			return nil, errors.New("window over the batch axis")
		}
		ek := d*(kernel[i]-1) + 1
		switch auto {
		case "SAME_UPPER", "SAME_LOWER":
			out[i] = (in[i] + s - 1) / s
		case "VALID":
			out[i] = (in[i]-ek)/s + 1
		default:
			var pb, pe int64
			if len(pads) == 2*r {
				pb, pe = pads[i], pads[i+r]
			}
			num := in[i] + pb + pe - ek
			if num < 0 {
				return nil, fmt.Errorf("window %d larger than padded input %d", ek, in[i]+pb+pe)
			}
			if ceil {
				out[i] = (num+s-1)/s + 1
				// The last window must start inside the input or left padding (ONNX/PyTorch rule).
				if (out[i]-1)*s >= in[i]+pb {
					out[i]--
				}
			} else {
				out[i] = num/s + 1
			}
		}
		if out[i] <= 0 {
			return nil, fmt.Errorf("empty output along spatial axis %d", i)
		}
	}
	return out, nil
}

func matmulShape(a, b []int64) ([]int64, error) {
	if len(a) == 0 || len(b) == 0 {
		return nil, errors.New("MatMul of a scalar")
	}
	a1, b1 := len(a) == 1, len(b) == 1
	if a1 {
		a = []int64{1, a[0]}
	}
	if b1 {
		b = []int64{b[0], 1}
	}
	if a[len(a)-1] != b[len(b)-2] {
		return nil, fmt.Errorf("inner dimensions of %s and %s differ", fmtDims(a), fmtDims(b))
	}
	batch, err := broadcast(a[:len(a)-2], b[:len(b)-2])
	if err != nil {
		return nil, err
	}
	d := append(batch, a[len(a)-2], b[len(b)-1])
	if a1 {
		d = append(d[:len(d)-2], d[len(d)-1])
	}
	if b1 {
		d = d[:len(d)-1]
	}
	return d, nil
}

// reshape applies ONNX Reshape semantics with the batch dimension kept symbolic.
func reshape(in, target []int64, allowZero bool) ([]int64, error) {
	total, batch, err := product(in)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(target))
	infer := -1
	known, outBatch := int64(1), false
	for i, t := range target {
		switch {
		case t == batchDim:
			out[i] = batchDim
			outBatch = true
		case t == 0 && !allowZero:
			if i >= len(in) {
				return nil, fmt.Errorf("shape %v copies dimension %d of rank-%d input", target, i, len(in))
			}
			out[i] = in[i]
			if in[i] == batchDim {
				outBatch = true
			} else {
				known *= in[i]
			}
		case t == -1:
			if infer >= 0 {
				return nil, fmt.Errorf("shape %v has two -1", target)
			}
			infer = i
		case t < 0:
			return nil, fmt.Errorf("shape %v has a negative size", target)
		default:
			out[i] = t
			known *= t
		}
	}
	if batch && !outBatch && infer < 0 {
		return nil, fmt.Errorf("shape %v drops the batch dimension of %s", target, fmtDims(in))
	}
	if infer >= 0 {
		if known == 0 || total%known != 0 {
			return nil, fmt.Errorf("cannot reshape %s to %v", fmtDims(in), target)
		}
		rest := total / known
		switch {
		case batch && !outBatch:
			if rest != 1 {
				return nil, fmt.Errorf("reshape %s to %v merges the batch with other dimensions: pass a model whose Reshape keeps the batch (0 or -1 for it)", fmtDims(in), target)
			}
			out[infer] = batchDim
		default:
			out[infer] = rest
		}
	} else if known != total {
		return nil, fmt.Errorf("cannot reshape %s to %v", fmtDims(in), target)
	}
	return out, nil
}

func squeeze(unsq bool, in, axes []int64) ([]int64, error) {
	if !unsq {
		if axes == nil {
			var d []int64
			for _, v := range in {
				if v != 1 {
					d = append(d, v)
				}
			}
			return d, nil
		}
		drop := map[int]bool{}
		for _, a := range axes {
			k, err := normAxis(a, len(in))
			if err != nil {
				return nil, err
			}
			if in[k] != 1 {
				return nil, fmt.Errorf("cannot squeeze dimension %d of size %d", k, in[k])
			}
			drop[k] = true
		}
		var d []int64
		for i, v := range in {
			if !drop[i] {
				d = append(d, v)
			}
		}
		return d, nil
	}
	if axes == nil {
		return nil, errors.New("operator Unsqueeze: axes are not constant")
	}
	r := len(in) + len(axes)
	ins := map[int]bool{}
	for _, a := range axes {
		k, err := normAxis(a, r)
		if err != nil {
			return nil, err
		}
		ins[k] = true
	}
	d := make([]int64, 0, r)
	j := 0
	for i := 0; i < r; i++ {
		if ins[i] {
			d = append(d, 1)
		} else {
			if j >= len(in) {
				return nil, errors.New("bad Unsqueeze axes")
			}
			d = append(d, in[j])
			j++
		}
	}
	return d, nil
}

// strideDilation is spatial axis i's stride and dilation from a node's strides and dilations
// attributes (ONNX: 1 along an axis the attribute leaves out).
func strideDilation(strides, dil []int64, i int) (s, d int64) {
	s, d = 1, 1
	if i < len(strides) {
		s = strides[i]
	}
	if i < len(dil) {
		d = dil[i]
	}
	return s, d
}
