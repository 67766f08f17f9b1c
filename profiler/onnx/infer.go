package onnx

import (
	"errors"
	"fmt"
	"math"
	"slices"
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

func (m *Model) inferNode(n *Node, shapes map[string]shapeInfo) ([]shapeInfo, error) {
	if n.Domain != "" {
		return nil, fmt.Errorf("operator domain %q is not supported", n.Domain)
	}
	in := make([]shapeInfo, len(n.Inputs))
	present := make([]bool, len(n.Inputs))
	for i, name := range n.Inputs {
		if name == "" {
			continue
		}
		s, ok := shapes[name]
		if !ok {
			return nil, fmt.Errorf("input %q has no inferred shape", name)
		}
		in[i], present[i] = s, true
	}
	if len(in) == 0 || !present[0] {
		return nil, errors.New("missing first input")
	}
	if len(n.Outputs) == 0 {
		return nil, errors.New("no outputs")
	}
	x := in[0]
	same := func(dims []int64) []shapeInfo { return []shapeInfo{{dims: dims, dtype: x.dtype}} }
	constInts := func(i int) ([]int64, bool) {
		if i < len(in) && present[i] && in[i].value != nil {
			return in[i].value, true
		}
		return nil, false
	}
	op := n.OpType
	switch {
	case unaryOps[op]:
		out := same(x.dims)
		if f, ok := x.floats(); ok && isFloat(x.dtype) {
			switch op {
			case "Identity":
				out[0].fvalue = f
			case "Floor", "Ceil":
				out[0].fvalue = make([]float64, len(f))
				for i, v := range f {
					if op == "Floor" {
						out[0].fvalue[i] = math.Floor(v)
					} else {
						out[0].fvalue[i] = math.Ceil(v)
					}
				}
			}
		}
		if op == "Identity" {
			out[0].value = x.value
		}
		if op == "Dropout" || op == "BatchNormalization" || op == "LayerNormalization" {
			// Extra outputs (mask, running stats) are rarely consumed; give them X's shape.
			for len(out) < len(n.Outputs) {
				out = append(out, shapeInfo{dims: x.dims, dtype: x.dtype})
			}
		}
		return out, nil
	case binaryOps[op]:
		var ds [][]int64
		for i := range in {
			if present[i] {
				ds = append(ds, in[i].dims)
			}
		}
		b, err := broadcast(ds...)
		if err != nil {
			return nil, err
		}
		dt := x.dtype
		switch op {
		case "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor":
			dt = Bool
		case "Where":
			dt = in[1].dtype
		}
		out := shapeInfo{dims: b, dtype: dt}
		if len(in) == 2 && x.value != nil && in[1].value != nil {
			a, b := x.value, in[1].value
			// A one-element operand broadcasts (H·2 on a [H, W] shape slice).
			if len(a) == 1 && len(b) > 1 {
				a = slices.Repeat(a, len(b))
			} else if len(b) == 1 && len(a) > 1 {
				b = slices.Repeat(b, len(a))
			}
			if len(a) == len(b) {
				out.value = arith(op, a, b)
			}
		}
		if len(in) == 2 && out.value == nil && (isFloat(x.dtype) || isFloat(in[1].dtype)) {
			a, okA := x.floats()
			b, okB := in[1].floats()
			if okA && okB {
				out.fvalue = floatArith(op, a, b)
			}
		}
		return []shapeInfo{out}, nil
	}
	switch op {
	case "Conv", "ConvInteger":
		if len(in) < 2 || !present[1] {
			return nil, errors.New("missing weight")
		}
		w := in[1].dims
		if len(x.dims) < 3 || len(w) != len(x.dims) {
			return nil, fmt.Errorf("input %s and weight %s ranks do not fit", fmtDims(x.dims), fmtDims(w))
		}
		g := n.AttrInt("group", 1)
		if g <= 0 || x.dims[1]%g != 0 || x.dims[1]/g != w[1] {
			return nil, fmt.Errorf("input channels %d, group %d and weight %s do not fit", x.dims[1], g, fmtDims(w))
		}
		sp, err := windowOut(n, x.dims[2:], w[2:], false)
		if err != nil {
			return nil, err
		}
		return same(append([]int64{x.dims[0], w[0]}, sp...)), nil
	case "MaxPool", "AveragePool", "LpPool":
		k := n.AttrInts("kernel_shape")
		if len(x.dims) < 3 || len(k) != len(x.dims)-2 {
			return nil, fmt.Errorf("kernel_shape %v does not fit input %s", k, fmtDims(x.dims))
		}
		sp, err := windowOut(n, x.dims[2:], k, n.AttrInt("ceil_mode", 0) == 1)
		if err != nil {
			return nil, err
		}
		d := append([]int64{x.dims[0], x.dims[1]}, sp...)
		out := same(d)
		if len(n.Outputs) > 1 {
			out = append(out, shapeInfo{dims: d, dtype: Int64})
		}
		return out, nil
	case "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool":
		if len(x.dims) < 3 {
			return nil, fmt.Errorf("input %s has rank < 3", fmtDims(x.dims))
		}
		d := []int64{x.dims[0], x.dims[1]}
		for range x.dims[2:] {
			d = append(d, 1)
		}
		return same(d), nil
	case "Gemm":
		if len(in) < 2 || !present[1] || len(x.dims) != 2 || len(in[1].dims) != 2 {
			return nil, errors.New("operator Gemm needs two rank-2 inputs")
		}
		a, b := x.dims, in[1].dims
		mdim, k1 := a[0], a[1]
		if n.AttrInt("transA", 0) != 0 {
			mdim, k1 = a[1], a[0]
		}
		k2, ndim := b[0], b[1]
		if n.AttrInt("transB", 0) != 0 {
			k2, ndim = b[1], b[0]
		}
		if k1 != k2 {
			return nil, fmt.Errorf("inner dimensions %d and %d differ", k1, k2)
		}
		return same([]int64{mdim, ndim}), nil
	case "MatMul", "MatMulInteger":
		if len(in) < 2 || !present[1] {
			return nil, errors.New("missing second input")
		}
		d, err := matmulShape(x.dims, in[1].dims)
		if err != nil {
			return nil, err
		}
		return same(d), nil
	case "Flatten":
		axis := n.AttrInt("axis", 1)
		if axis < 0 {
			axis += int64(len(x.dims))
		}
		if axis < 0 || axis > int64(len(x.dims)) {
			return nil, fmt.Errorf("axis %d out of range", axis)
		}
		a, err := mergeDims(x.dims[:axis])
		if err != nil {
			return nil, err
		}
		b, err := mergeDims(x.dims[axis:])
		if err != nil {
			return nil, err
		}
		return same([]int64{a, b}), nil
	case "Reshape":
		target, ok := constInts(1)
		if !ok {
			if a, has := n.Attr("shape"); has { // opset < 5
				target, ok = a.Ints, true
			}
		}
		if !ok {
			return nil, errors.New("the target shape is not a constant")
		}
		d, err := reshape(x.dims, target, n.AttrInt("allowzero", 0) == 1)
		if err != nil {
			return nil, err
		}
		out := shapeInfo{dims: d, dtype: x.dtype, value: x.value, fvalue: x.fvalue}
		return []shapeInfo{out}, nil
	case "Concat":
		axis, err := normAxis(n.AttrInt("axis", 0), len(x.dims))
		if err != nil {
			return nil, err
		}
		d := append([]int64{}, x.dims...)
		d[axis] = 0
		var vals []int64
		var fvals []float64
		allVals, allFloats := true, true
		for i := range in {
			if !present[i] {
				continue
			}
			s := in[i].dims
			if len(s) != len(d) {
				return nil, fmt.Errorf("inputs of rank %d and %d", len(d), len(s))
			}
			for k := range s {
				if k != axis && s[k] != d[k] {
					return nil, fmt.Errorf("inputs %s and %s differ off the concat axis", fmtDims(x.dims), fmtDims(s))
				}
			}
			if s[axis] == batchDim {
				return nil, errors.New("concatenation along the batch axis")
			}
			d[axis] += s[axis]
			if in[i].value == nil {
				allVals = false
			}
			vals = append(vals, in[i].value...)
			if f, ok := in[i].floats(); ok {
				fvals = append(fvals, f...)
			} else {
				allFloats = false
			}
		}
		out := shapeInfo{dims: d, dtype: x.dtype}
		if allVals && len(d) == 1 {
			out.value = vals
		} else if allFloats && len(d) == 1 && isFloat(x.dtype) {
			out.fvalue = fvals
		}
		return []shapeInfo{out}, nil
	case "Transpose":
		perm := n.AttrInts("perm")
		if perm == nil {
			for i := len(x.dims) - 1; i >= 0; i-- {
				perm = append(perm, int64(i))
			}
		}
		if len(perm) != len(x.dims) {
			return nil, fmt.Errorf("perm %v does not fit rank %d", perm, len(x.dims))
		}
		d := make([]int64, len(perm))
		seen := make([]bool, len(perm))
		for i, p := range perm {
			if p < 0 || int(p) >= len(x.dims) || seen[p] {
				return nil, fmt.Errorf("perm %v is not a permutation", perm)
			}
			seen[p] = true
			d[i] = x.dims[p]
		}
		return same(d), nil
	case "Shape":
		v := append([]int64{}, x.dims...)
		start, end := n.AttrInt("start", 0), n.AttrInt("end", int64(len(v)))
		start, end = clampRange(start, end, int64(len(v)))
		v = v[start:end]
		return []shapeInfo{{dims: []int64{int64(len(v))}, dtype: Int64, value: v}}, nil
	case "Cast":
		to := DataType(n.AttrInt("to", int64(Float)))
		out := shapeInfo{dims: x.dims, dtype: to, value: x.value}
		if f, ok := x.floats(); ok && isFloat(to) {
			out.fvalue = f
		} else if x.fvalue != nil && !isFloat(to) {
			out.value = make([]int64, len(x.fvalue))
			for i, v := range x.fvalue {
				out.value[i] = int64(v) // truncation, as a float→int cast does
			}
		}
		return []shapeInfo{out}, nil
	case "Squeeze", "Unsqueeze":
		axes := n.AttrInts("axes")
		if axes == nil {
			axes, _ = constInts(1)
		}
		d, err := squeeze(op == "Unsqueeze", x.dims, axes)
		if err != nil {
			return nil, err
		}
		return []shapeInfo{{dims: d, dtype: x.dtype, value: x.value, fvalue: x.fvalue}}, nil
	case "Gather":
		if len(in) < 2 || !present[1] {
			return nil, errors.New("missing indices")
		}
		axis, err := normAxis(n.AttrInt("axis", 0), len(x.dims))
		if err != nil {
			return nil, err
		}
		d := append(append(append([]int64{}, x.dims[:axis]...), in[1].dims...), x.dims[axis+1:]...)
		out := shapeInfo{dims: d, dtype: x.dtype}
		if x.fvalue != nil && in[1].value != nil && len(x.dims) == 1 {
			for _, idx := range in[1].value {
				if idx < 0 {
					idx += int64(len(x.fvalue))
				}
				if idx < 0 || idx >= int64(len(x.fvalue)) {
					return nil, fmt.Errorf("index %d out of range", idx)
				}
				out.fvalue = append(out.fvalue, x.fvalue[idx])
			}
		}
		if x.value != nil && in[1].value != nil && len(x.dims) == 1 {
			for _, idx := range in[1].value {
				if idx < 0 {
					idx += int64(len(x.value))
				}
				if idx < 0 || idx >= int64(len(x.value)) {
					return nil, fmt.Errorf("index %d out of range", idx)
				}
				out.value = append(out.value, x.value[idx])
			}
		}
		return []shapeInfo{out}, nil
	case "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2", "ReduceL1", "ReduceLogSumExp", "ReduceSumSquare":
		axes := n.AttrInts("axes")
		if axes == nil {
			axes, _ = constInts(1)
		}
		keep := n.AttrInt("keepdims", 1) == 1
		red := map[int]bool{}
		for _, a := range axes {
			k, err := normAxis(a, len(x.dims))
			if err != nil {
				return nil, err
			}
			red[k] = true
		}
		var d []int64
		for i, v := range x.dims {
			all := len(axes) == 0 && n.AttrInt("noop_with_empty_axes", 0) == 0
			if red[i] || all {
				if v == batchDim {
					return nil, errors.New("reduction over the batch axis")
				}
				if keep {
					d = append(d, 1)
				}
				continue
			}
			d = append(d, v)
		}
		return same(d), nil
	case "Split":
		axis, err := normAxis(n.AttrInt("axis", 0), len(x.dims))
		if err != nil {
			return nil, err
		}
		sizes := n.AttrInts("split")
		if sizes == nil {
			sizes, _ = constInts(1)
		}
		if k := n.AttrInt("num_outputs", 0); sizes == nil && k > 0 && x.dims[axis] != batchDim {
			if k != int64(len(n.Outputs)) || k > x.dims[axis] {
				return nil, fmt.Errorf("num_outputs %d for %d outputs of a dimension of %d", k, len(n.Outputs), x.dims[axis])
			}
			// Opset 18: equal chunks of ceil(dim/k), the last one smaller.
			chunk := (x.dims[axis] + k - 1) / k
			for rest := x.dims[axis]; rest > 0; rest -= chunk {
				sizes = append(sizes, min(chunk, rest))
			}
		}
		if sizes == nil {
			k := int64(len(n.Outputs))
			if x.dims[axis] == batchDim || x.dims[axis]%k != 0 {
				return nil, fmt.Errorf("cannot split dimension %d into %d equal parts", x.dims[axis], k)
			}
			for range n.Outputs {
				sizes = append(sizes, x.dims[axis]/k)
			}
		}
		if len(sizes) != len(n.Outputs) {
			return nil, fmt.Errorf("%d split sizes for %d outputs", len(sizes), len(n.Outputs))
		}
		var out []shapeInfo
		for _, s := range sizes {
			d := append([]int64{}, x.dims...)
			d[axis] = s
			out = append(out, shapeInfo{dims: d, dtype: x.dtype})
		}
		return out, nil
	case "Resize", "Upsample":
		d, err := m.resizeShape(n, in, present)
		if err != nil {
			return nil, err
		}
		return same(d), nil
	case "ConvTranspose":
		if len(in) < 2 || !present[1] {
			return nil, errors.New("missing weight")
		}
		d, err := convTransposeShape(n, x.dims, in[1].dims)
		if err != nil {
			return nil, err
		}
		return same(d), nil
	case "Slice":
		out, err := sliceShape(n, x, in, present)
		if err != nil {
			return nil, err
		}
		return []shapeInfo{out}, nil
	case "Pad":
		pads := n.AttrInts("pads")
		if pads == nil {
			pads, _ = constInts(1)
		}
		if axes, ok := constInts(3); ok && len(pads) == 2*len(axes) {
			// Opset 18: pads for the listed axes only.
			full := make([]int64, 2*len(x.dims))
			for j, a := range axes {
				k, err := normAxis(a, len(x.dims))
				if err != nil {
					return nil, err
				}
				full[k], full[k+len(x.dims)] = pads[j], pads[j+len(axes)]
			}
			pads = full
		}
		if len(pads) != 2*len(x.dims) {
			return nil, errors.New("pads are not a constant of length 2·rank")
		}
		d := append([]int64{}, x.dims...)
		for i := range d {
			if d[i] == batchDim {
				if pads[i] != 0 || pads[i+len(d)] != 0 {
					return nil, errors.New("padding the batch axis")
				}
				continue
			}
			d[i] += pads[i] + pads[i+len(d)]
		}
		return same(d), nil
	}
	return nil, fmt.Errorf("operator %s has no shape-inference rule", op)
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
		s, d := int64(1), int64(1)
		if i < len(strides) {
			s = strides[i]
		}
		if i < len(dil) {
			d = dil[i]
		}
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
