package onnx

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// errNoRule is what an operator group answers for an operator it has no rule for.
var errNoRule = errors.New("no shape-inference rule")

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
		return inferUnary(op, n, x, same)
	case binaryOps[op]:
		return inferBinary(op, in, present, x)
	}
	for _, group := range []func(string, *Node, []shapeInfo, []bool, shapeInfo, func([]int64) []shapeInfo, func(int) ([]int64, bool)) ([]shapeInfo, error){m.inferWindowed, m.inferLayout, m.inferGatherReduce, m.inferSplitPad} {
		if out, err := group(op, n, in, present, x, same, constInts); err != errNoRule {
			return out, err
		}
	}
	return nil, fmt.Errorf("operator %s has no shape-inference rule", op)
}

// inferUnary is the rule of the element-wise unary operators: X's shape (constant values
// folded for Identity, Floor and Ceil).
func inferUnary(op string, n *Node, x shapeInfo, same func([]int64) []shapeInfo) ([]shapeInfo, error) {
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
}

// inferBinary is the rule of the broadcasting operators (constant values folded).
func inferBinary(op string, in []shapeInfo, present []bool, x shapeInfo) ([]shapeInfo, error) {
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

// inferWindowed holds the rules of convolutions, pools and matrix products (errNoRule for other operators).
func (m *Model) inferWindowed(op string, n *Node, in []shapeInfo, present []bool, x shapeInfo, same func([]int64) []shapeInfo, constInts func(int) ([]int64, bool)) ([]shapeInfo, error) {
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
	}
	return nil, errNoRule
}

// inferLayout holds the rules of layout: flatten, reshape, concat, transpose, shape, cast, squeeze (errNoRule for other operators).
func (m *Model) inferLayout(op string, n *Node, in []shapeInfo, present []bool, x shapeInfo, same func([]int64) []shapeInfo, constInts func(int) ([]int64, bool)) ([]shapeInfo, error) {
	switch op {
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
	}
	return nil, errNoRule
}

// inferGatherReduce holds the rules of gather and reductions (errNoRule for other operators).
func (m *Model) inferGatherReduce(op string, n *Node, in []shapeInfo, present []bool, x shapeInfo, same func([]int64) []shapeInfo, constInts func(int) ([]int64, bool)) ([]shapeInfo, error) {
	switch op {
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
	}
	return nil, errNoRule
}

// inferSplitPad holds the rules of split, resize, transposed convolution, slice and pad (errNoRule for other operators).
func (m *Model) inferSplitPad(op string, n *Node, in []shapeInfo, present []bool, x shapeInfo, same func([]int64) []shapeInfo, constInts func(int) ([]int64, bool)) ([]shapeInfo, error) {
	switch op {
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
	return nil, errNoRule
}
