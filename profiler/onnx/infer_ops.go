package onnx

import (
	"errors"
	"fmt"
	"math"
)

// Shape-inference rules for the operators of detection and segmentation heads: Resize and
// Upsample, ConvTranspose and Slice.

// Float64s decodes a floating-point tensor's values (Resize scales and roi).
func (t *Tensor) Float64s() ([]float64, error) {
	n, size, err := t.readable()
	if err != nil {
		return nil, err
	}
	var out []float64
	switch {
	case t.rawData != nil:
		out = make([]float64, n)
		for i := range out {
			b := t.rawData[int64(i)*size:]
			switch t.DataType {
			case Float:
				out[i] = float64(math.Float32frombits(uint32(leUint(b, 4))))
			case Double:
				out[i] = math.Float64frombits(leUint(b, 8))
			default:
				return nil, fmt.Errorf("tensor %q: cannot read %s values as floats", t.Name, t.DataType)
			}
		}
		return out, nil
	case t.float32s != nil:
		for _, f := range t.float32s {
			out = append(out, float64(f))
		}
	case t.float64s != nil:
		out = t.float64s
	case n == 0:
		return []float64{}, nil
	default:
		return nil, fmt.Errorf("tensor %q: has no float data", t.Name)
	}
	if int64(len(out)) != n {
		return nil, fmt.Errorf("tensor %q: has %d values, shape %v wants %d", t.Name, len(out), t.Dims, n)
	}
	return out, nil
}

// floats returns the values of a small tensor as floats: its float values, or its integer
// values when none of them is the symbolic batch.
func (s shapeInfo) floats() ([]float64, bool) {
	if s.fvalue != nil {
		return s.fvalue, true
	}
	if s.value == nil {
		return nil, false
	}
	out := make([]float64, len(s.value))
	for i, v := range s.value {
		if v == batchDim {
			return nil, false
		}
		out[i] = float64(v)
	}
	return out, true
}

// isFloat reports whether a data type is a floating-point type.
func isFloat(d DataType) bool {
	return d == Float || d == Double || d == Float16 || d == BFloat16
}

// floatArith propagates elementwise float arithmetic on small constant tensors (the
// scale computations of exporters' Resize idioms); nil when the operands do not fit.
func floatArith(op string, a, b []float64) []float64 {
	n := max(len(a), len(b))
	if (len(a) != n && len(a) != 1) || (len(b) != n && len(b) != 1) {
		return nil
	}
	out := make([]float64, n)
	for i := range out {
		x, y := a[min(i, len(a)-1)], b[min(i, len(b)-1)]
		v, ok := binaryOp(op, x, y)
		if !ok {
			return nil
		}
		out[i] = v
	}
	return out
}

// scaledDim is ONNX Runtime's output size for a scale: floor(dim · scale) computed in float32.
func scaledDim(d int64, scale float64) int64 {
	return int64(math.Floor(float64(float32(scale) * float32(d))))
}

// resizeShape infers Resize (opset 10: X, scales; opset 11+: X, roi, scales, sizes; opset 18
// adds the axes and keep_aspect_ratio_policy attributes) and Upsample (scales as an attribute
// before opset 9, as the second input after).
func (m *Model) resizeShape(n *Node, in []shapeInfo, present []bool) ([]int64, error) {
	x := in[0].dims
	r := len(x)
	input := func(i int) (shapeInfo, bool) {
		if i >= 0 && i < len(in) && present[i] {
			return in[i], true
		}
		return shapeInfo{}, false
	}
	scalesAt, sizesAt := 2, 3
	opset := m.Opset()
	if n.OpType == "Upsample" || (n.OpType == "Resize" && (opset == 10 || (opset == 0 && len(n.Inputs) == 2))) {
		scalesAt, sizesAt = 1, -1
	}
	axes := make([]int, r)
	for i := range axes {
		axes[i] = i
	}
	if a := n.AttrInts("axes"); a != nil && n.OpType == "Resize" {
		axes = axes[:0]
		seen := map[int]bool{}
		for _, v := range a {
			k, err := normAxis(v, r)
			if err != nil {
				return nil, err
			}
			if seen[k] {
				return nil, fmt.Errorf("axes %v repeat an axis", a)
			}
			seen[k] = true
			axes = append(axes, k)
		}
	}
	out := append([]int64{}, x...)
	if s, ok := input(sizesAt); ok && len(s.dims) == 1 && s.dims[0] > 0 {
		sizes := s.value
		if sizes == nil {
			return nil, errors.New("the sizes input is not a constant")
		}
		if len(sizes) != len(axes) {
			return nil, fmt.Errorf("%d sizes for %d axes", len(sizes), len(axes))
		}
		policy := "stretch"
		if a, ok := n.Attr("keep_aspect_ratio_policy"); ok && len(a.S) > 0 {
			policy = string(a.S)
		}
		if policy != "stretch" {
			// One scale for every resized axis: the smallest (not_larger) or the largest
			// (not_smaller) of sizes/input; the batch axis must not be resized.
			scale := math.Inf(1)
			if policy == "not_smaller" {
				scale = math.Inf(-1)
			}
			for k, a := range axes {
				if x[a] == batchDim {
					return nil, errors.New("keep_aspect_ratio_policy over the batch axis")
				}
				q := float64(sizes[k]) / float64(x[a])
				switch policy {
				case "not_larger":
					scale = math.Min(scale, q)
				case "not_smaller":
					scale = math.Max(scale, q)
				default:
					return nil, fmt.Errorf("keep_aspect_ratio_policy %q is unknown", policy)
				}
			}
			for _, a := range axes {
				out[a] = int64(math.Round(scale * float64(x[a])))
			}
			return out, nil
		}
		for k, a := range axes {
			switch {
			case x[a] == batchDim:
				// A constant size for a symbolic batch: the batch is not resized.
				if sizes[k] != batchDim && sizes[k] <= 0 {
					return nil, fmt.Errorf("size %d for the batch axis", sizes[k])
				}
			case sizes[k] == batchDim:
				return nil, fmt.Errorf("resizing axis %d of size %d to the batch size", a, x[a])
			default:
				out[a] = sizes[k]
			}
		}
		return out, nil
	}
	var scales []float64
	if s, ok := input(scalesAt); ok && len(s.dims) == 1 && s.dims[0] > 0 {
		v, known := s.floats()
		if !known {
			return nil, errors.New("the scales input is not a constant")
		}
		scales = v
	} else if a, ok := n.Attr("scales"); ok && n.OpType == "Upsample" {
		for _, f := range a.Floats {
			scales = append(scales, float64(f))
		}
		axes = axes[:r]
	} else {
		return nil, errors.New("neither scales nor sizes is given")
	}
	if len(scales) != len(axes) {
		return nil, fmt.Errorf("%d scales for %d axes", len(scales), len(axes))
	}
	// tf_crop_and_resize scales the region of interest, not the whole input.
	var roi []float64
	if a, ok := n.Attr("coordinate_transformation_mode"); ok && string(a.S) == "tf_crop_and_resize" {
		if s, ok := input(1); ok {
			roi, _ = s.floats()
		}
		if len(roi) != 2*len(axes) {
			return nil, errors.New("tf_crop_and_resize needs a constant roi of 2·axes values")
		}
	}
	for k, a := range axes {
		if scales[k] <= 0 {
			return nil, fmt.Errorf("scale %g is not positive", scales[k])
		}
		if x[a] == batchDim {
			if scales[k] != 1 {
				return nil, fmt.Errorf("scale %g for the batch axis", scales[k])
			}
			continue
		}
		if roi != nil {
			out[a] = int64(math.Floor(float64(x[a]) * (roi[k+len(axes)] - roi[k]) * scales[k]))
		} else {
			out[a] = scaledDim(x[a], scales[k])
		}
	}
	return out, nil
}

// convTransposeShape infers ConvTranspose: W is [Cin, Cout/group, k...]; each spatial output
// is stride·(in−1) + output_padding + dilation·(k−1) + 1 − pad_begin − pad_end, or
// output_shape when given, or in·stride under auto_pad SAME_*.
func convTransposeShape(n *Node, x, w []int64) ([]int64, error) {
	if len(x) < 3 || len(w) != len(x) {
		return nil, fmt.Errorf("input %s and weight %s ranks do not fit", fmtDims(x), fmtDims(w))
	}
	g := n.AttrInt("group", 1)
	if g <= 0 || x[1] != w[0] || w[0]%g != 0 {
		return nil, fmt.Errorf("input channels %d, group %d and weight %s do not fit", x[1], g, fmtDims(w))
	}
	r := len(x) - 2
	k := n.AttrInts("kernel_shape")
	if k == nil {
		k = w[2:]
	}
	if len(k) != r {
		return nil, fmt.Errorf("kernel_shape %v does not fit input %s", k, fmtDims(x))
	}
	out := append([]int64{x[0], w[1] * g}, make([]int64, r)...)
	if os := n.AttrInts("output_shape"); os != nil {
		if len(os) == r+2 { // some exporters give the full shape
			os = os[2:]
		}
		if len(os) != r {
			return nil, fmt.Errorf("output_shape %v does not fit input %s", os, fmtDims(x))
		}
		copy(out[2:], os)
		return out, nil
	}
	strides, dil := n.AttrInts("strides"), n.AttrInts("dilations")
	pads, opad := n.AttrInts("pads"), n.AttrInts("output_padding")
	auto := "NOTSET"
	if a, ok := n.Attr("auto_pad"); ok && len(a.S) > 0 {
		auto = string(a.S)
	}
	at := func(v []int64, i int, def int64) int64 {
		if i < len(v) {
			return v[i]
		}
		return def
	}
	for i := 0; i < r; i++ {
		s, d, op := at(strides, i, 1), at(dil, i, 1), at(opad, i, 0)
		if s <= 0 || d <= 0 || k[i] <= 0 || op < 0 {
			return nil, fmt.Errorf("bad kernel %v, strides %v, dilations %v or output_padding %v", k, strides, dil, opad)
		}
		in := x[2+i]
		if in == batchDim {
			return nil, errors.New("window over the batch axis")
		}
		switch auto {
		case "SAME_UPPER", "SAME_LOWER":
			out[2+i] = in * s
		default:
			var pb, pe int64
			if auto != "VALID" && len(pads) == 2*r {
				pb, pe = pads[i], pads[i+r]
			}
			out[2+i] = s*(in-1) + op + d*(k[i]-1) + 1 - pb - pe
		}
		if out[2+i] <= 0 {
			return nil, fmt.Errorf("empty output along spatial axis %d", i)
		}
	}
	return out, nil
}

// convTransposePads returns the explicit pads equivalent to a ConvTranspose's auto_pad
// SAME_* or output_shape (nil when the node has neither).
func convTransposePads(n *Node, x, out []int64, k []int64) []int64 {
	r := len(x) - 2
	auto := ""
	if a, ok := n.Attr("auto_pad"); ok {
		auto = string(a.S)
	}
	if n.AttrInts("output_shape") == nil && auto != "SAME_UPPER" && auto != "SAME_LOWER" {
		return nil
	}
	if len(k) != r || len(out) != len(x) {
		return nil
	}
	strides, dil, opad := n.AttrInts("strides"), n.AttrInts("dilations"), n.AttrInts("output_padding")
	at := func(v []int64, i int, def int64) int64 {
		if i < len(v) {
			return v[i]
		}
		return def
	}
	pads := make([]int64, 2*r)
	for i := 0; i < r; i++ {
		s, d := at(strides, i, 1), at(dil, i, 1)
		total := s*(x[2+i]-1) + at(opad, i, 0) + d*(k[i]-1) + 1 - out[2+i]
		if total < 0 {
			return nil
		}
		small, big := total/2, total-total/2
		// ONNX (and ONNX Runtime): SAME_UPPER cuts the odd pixel from the begin, SAME_LOWER
		// and output_shape from the end.
		if auto == "SAME_UPPER" {
			pads[i], pads[i+r] = big, small
		} else {
			pads[i], pads[i+r] = small, big
		}
	}
	return pads
}

// sliceShape infers Slice (starts, ends, axes, steps as inputs from opset 10, as attributes
// before) and propagates the values of rank-1 shape tensors.
func sliceShape(n *Node, x shapeInfo, in []shapeInfo, present []bool) (shapeInfo, error) {
	arg := func(i int, attr string) ([]int64, bool, error) {
		if v := n.AttrInts(attr); v != nil {
			return v, true, nil
		}
		if i < len(in) && present[i] {
			if in[i].value == nil {
				return nil, true, fmt.Errorf("%s is not a constant", attr)
			}
			return in[i].value, true, nil
		}
		return nil, false, nil
	}
	starts, _, err := arg(1, "starts")
	if err != nil {
		return shapeInfo{}, err
	}
	ends, _, err := arg(2, "ends")
	if err != nil {
		return shapeInfo{}, err
	}
	if starts == nil || ends == nil || len(starts) != len(ends) {
		return shapeInfo{}, errors.New("starts and ends must be constants of one length")
	}
	axes, hasAxes, err := arg(3, "axes")
	if err != nil {
		return shapeInfo{}, err
	}
	if !hasAxes {
		for i := range starts {
			axes = append(axes, int64(i))
		}
	}
	steps, hasSteps, err := arg(4, "steps")
	if err != nil {
		return shapeInfo{}, err
	}
	if !hasSteps {
		for range starts {
			steps = append(steps, 1)
		}
	}
	if len(axes) != len(starts) || len(steps) != len(starts) {
		return shapeInfo{}, fmt.Errorf("starts %v, ends %v, axes %v and steps %v differ in length", starts, ends, axes, steps)
	}
	d := append([]int64{}, x.dims...)
	ranges := make([][3]int64, len(d)) // start, end, step per axis
	for i := range ranges {
		ranges[i] = [3]int64{0, d[i], 1}
	}
	seen := map[int]bool{}
	for j := range starts {
		a, err := normAxis(axes[j], len(d))
		if err != nil {
			return shapeInfo{}, err
		}
		if seen[a] {
			return shapeInfo{}, fmt.Errorf("axes %v repeat an axis", axes)
		}
		seen[a] = true
		st, en, step := starts[j], ends[j], steps[j]
		if step == 0 {
			return shapeInfo{}, errors.New("step 0")
		}
		if d[a] == batchDim {
			// Only the whole batch may be taken.
			if st != 0 || step != 1 || en < math.MaxInt32 {
				return shapeInfo{}, errors.New("slicing the batch axis")
			}
			continue
		}
		dim := d[a]
		if st < 0 {
			st += dim
		}
		if en < 0 {
			en += dim
		}
		var size int64
		if step > 0 {
			st, en = min(max(st, 0), dim), min(max(en, 0), dim)
			if en > st {
				size = (en - st + step - 1) / step
			}
		} else {
			st, en = min(max(st, 0), dim-1), min(max(en, -1), dim-1)
			if st > en {
				size = (st - en - step - 1) / -step
			}
		}
		d[a] = size
		ranges[a] = [3]int64{st, en, step}
	}
	out := shapeInfo{dims: d, dtype: x.dtype}
	if len(d) == 1 && (x.value != nil || x.fvalue != nil) {
		st, step := ranges[0][0], ranges[0][2]
		for k := int64(0); k < d[0]; k++ {
			i := st + k*step
			if x.value != nil && i < int64(len(x.value)) {
				out.value = append(out.value, x.value[i])
			}
			if x.fvalue != nil && i < int64(len(x.fvalue)) {
				out.fvalue = append(out.fvalue, x.fvalue[i])
			}
		}
	}
	for _, v := range d {
		if v == 0 {
			return shapeInfo{}, errors.New("empty slice")
		}
	}
	return out, nil
}

// binaryOp evaluates one of ONNX's elementwise Add, Sub, Mul, Div on constant operands; false
// for other ops and for division by zero (the value is then unknown, not an error).
func binaryOp[T int64 | float64](op string, x, y T) (T, bool) {
	switch op {
	case "Add":
		return x + y, true
	case "Sub":
		return x - y, true
	case "Mul":
		return x * y, true
	case "Div":
		if y == 0 {
			return 0, false
		}
		return x / y, true
	}
	return 0, false
}
