package onnx

import (
	"encoding/binary"
	"math"
	"reflect"
	"testing"

	"github.com/plan-dev/plan/profiler/graph"
)

// Shape inference and writing of the operators detection and segmentation heads use: Resize,
// Upsample, ConvTranspose, Slice, Pad with axes, Split with num_outputs.

func floatVals(name string, dims []int64, v ...float32) []byte {
	raw := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
	}
	return tensorProto(name, Float, dims, raw)
}

func strAttr(name, v string) []byte {
	a := putString(nil, fAttrName, name)
	a = putVarint(a, fAttrType, int64(AttrString))
	return putString(a, fAttrS, v)
}

func TestDetectionShapeRules(t *testing.T) {
	n := func(op string, attrs ...Attribute) *Node { return &Node{Name: "n", OpType: op, Attrs: attrs} }
	ints := func(name string, v ...int64) Attribute { return Attribute{Name: name, Type: AttrInts, Ints: v} }
	i1 := func(name string, v int64) Attribute { return Attribute{Name: name, Type: AttrInt, I: v} }
	str := func(name, v string) Attribute { return Attribute{Name: name, Type: AttrString, S: []byte(v)} }
	floats := func(name string, v ...float32) Attribute { return Attribute{Name: name, Type: AttrFloats, Floats: v} }
	B := batchDim
	const big = math.MaxInt64
	// absent marks an omitted optional input ("").
	absent := shapeInfo{dtype: Undefined}
	act := func(d ...int64) shapeInfo { return shapeInfo{dims: d} }
	ival := func(v ...int64) shapeInfo { return shapeInfo{dims: []int64{int64(len(v))}, dtype: Int64, value: v} }
	fval := func(v ...float64) shapeInfo { return shapeInfo{dims: []int64{int64(len(v))}, fvalue: v} }
	empty := shapeInfo{dims: []int64{0}}
	cases := []struct {
		name  string
		opset int64
		node  *Node
		in    []shapeInfo
		want  []int64
		err   bool
	}{
		// ConvTranspose: out = stride·(in−1) + output_padding + dilation·(k−1) + 1 − pads.
		{"deconv 4x4 s2 p1", 13, n("ConvTranspose", ints("strides", 2, 2), ints("pads", 1, 1, 1, 1)),
			[]shapeInfo{act(B, 16, 8, 8), act(16, 8, 4, 4)}, []int64{B, 8, 16, 16}, false}, // 2·7+3+1−2
		{"deconv output_padding", 13, n("ConvTranspose", ints("strides", 2, 2), ints("pads", 1, 1, 1, 1), ints("output_padding", 1, 1)),
			[]shapeInfo{act(B, 4, 5, 7), act(4, 2, 3, 3)}, []int64{B, 2, 10, 14}, false}, // 2·4+1+2+1−2, 2·6+1+2+1−2
		{"deconv group", 13, n("ConvTranspose", i1("group", 2)),
			[]shapeInfo{act(B, 4, 5, 5), act(4, 3, 3, 3)}, []int64{B, 6, 7, 7}, false},
		{"deconv dilation asym pads", 13, n("ConvTranspose", ints("dilations", 2, 1), ints("pads", 0, 1, 2, 0)),
			[]shapeInfo{act(B, 1, 5, 5), act(1, 1, 3, 3)}, []int64{B, 1, 7, 6}, false}, // 4+4+1−0−2, 4+2+1−1−0
		{"deconv output_shape", 13, n("ConvTranspose", ints("strides", 2, 2), ints("output_shape", 20, 21)),
			[]shapeInfo{act(B, 8, 10, 10), act(8, 4, 3, 3)}, []int64{B, 4, 20, 21}, false},
		{"deconv output_shape full rank", 13, n("ConvTranspose", ints("strides", 2, 2), ints("output_shape", 1, 4, 21, 21)),
			[]shapeInfo{act(B, 8, 10, 10), act(8, 4, 3, 3)}, []int64{B, 4, 21, 21}, false},
		{"deconv same upper", 13, n("ConvTranspose", ints("strides", 2, 2), str("auto_pad", "SAME_UPPER")),
			[]shapeInfo{act(B, 8, 10, 12), act(8, 4, 3, 3)}, []int64{B, 4, 20, 24}, false},
		{"deconv 1d", 13, n("ConvTranspose", ints("strides", 4)),
			[]shapeInfo{act(B, 2, 10), act(2, 3, 8)}, []int64{B, 3, 44}, false}, // 4·9+7+1
		{"deconv channels", 13, n("ConvTranspose"), []shapeInfo{act(B, 8, 4, 4), act(16, 4, 3, 3)}, nil, true},
		{"deconv no weight", 13, n("ConvTranspose"), []shapeInfo{act(B, 8, 4, 4)}, nil, true},

		// Resize: floor(in · scale) (float32, as ONNX Runtime), or sizes.
		{"resize scales x2", 13, n("Resize"), []shapeInfo{act(B, 64, 20, 20), absent, fval(1, 1, 2, 2)}, []int64{B, 64, 40, 40}, false},
		{"resize scales fractional", 13, n("Resize"), []shapeInfo{act(B, 3, 15, 25), absent, fval(1, 1, 0.5, 1.5)}, []int64{B, 3, 7, 37}, false},
		{"resize scales empty roi", 11, n("Resize"), []shapeInfo{act(B, 3, 8, 8), fval(), fval(1, 1, 4, 4)}, []int64{B, 3, 32, 32}, false},
		{"resize sizes", 13, n("Resize"), []shapeInfo{act(B, 64, 16, 16), absent, empty, ival(1, 64, 32, 48)}, []int64{B, 64, 32, 48}, false},
		{"resize sizes from shape", 13, n("Resize"), []shapeInfo{act(B, 64, 16, 16), absent, absent, ival(B, 64, 33, 17)}, []int64{B, 64, 33, 17}, false},
		{"resize sizes axes", 18, n("Resize", ints("axes", 2, 3)), []shapeInfo{act(B, 3, 20, 20), absent, absent, ival(30, 40)}, []int64{B, 3, 30, 40}, false},
		{"resize not_larger", 18, n("Resize", ints("axes", -2, -1), str("keep_aspect_ratio_policy", "not_larger")),
			[]shapeInfo{act(B, 3, 20, 20), absent, absent, ival(30, 40)}, []int64{B, 3, 30, 30}, false},
		{"resize not_smaller", 18, n("Resize", ints("axes", 2, 3), str("keep_aspect_ratio_policy", "not_smaller")),
			[]shapeInfo{act(B, 3, 20, 10), absent, absent, ival(30, 40)}, []int64{B, 3, 80, 40}, false},
		{"resize tf_crop_and_resize", 13, n("Resize", str("coordinate_transformation_mode", "tf_crop_and_resize")),
			[]shapeInfo{act(B, 3, 20, 20), fval(0, 0, 0, 0, 1, 1, 0.5, 1), fval(1, 1, 2, 2)}, []int64{B, 3, 20, 40}, false},
		{"resize opset 10", 10, n("Resize"), []shapeInfo{act(B, 3, 20, 20), fval(1, 1, 2, 3)}, []int64{B, 3, 40, 60}, false},
		{"resize batch scale", 13, n("Resize"), []shapeInfo{act(B, 3, 8, 8), absent, fval(2, 1, 2, 2)}, nil, true},
		{"resize computed scales", 13, n("Resize"), []shapeInfo{act(B, 3, 8, 8), absent, act(4)}, nil, true},
		{"resize computed sizes", 13, n("Resize"), []shapeInfo{act(B, 3, 8, 8), absent, absent, shapeInfo{dims: []int64{4}, dtype: Int64}}, nil, true},
		{"resize neither", 13, n("Resize"), []shapeInfo{act(B, 3, 8, 8), absent, empty, empty}, nil, true},
		{"resize scales rank", 13, n("Resize"), []shapeInfo{act(B, 3, 8, 8), absent, fval(2, 2)}, nil, true},
		{"upsample attribute", 7, n("Upsample", floats("scales", 1, 1, 2, 2), str("mode", "nearest")),
			[]shapeInfo{act(B, 16, 13, 13)}, []int64{B, 16, 26, 26}, false},
		{"upsample input", 9, n("Upsample"), []shapeInfo{act(B, 16, 13, 13), fval(1, 1, 2, 2)}, []int64{B, 16, 26, 26}, false},

		// Slice: clamped ranges, ceil((end−start)/step) elements.
		{"slice channels", 13, n("Slice"), []shapeInfo{act(B, 64, 32, 32), ival(0), ival(16), ival(1)}, []int64{B, 16, 32, 32}, false},
		{"slice step", 13, n("Slice"), []shapeInfo{act(B, 64, 32, 32), ival(1), ival(big), ival(2), ival(2)}, []int64{B, 64, 16, 32}, false},
		{"slice reverse", 13, n("Slice"), []shapeInfo{act(B, 64, 32, 32), ival(-1), ival(-big), ival(3), ival(-1)}, []int64{B, 64, 32, 32}, false},
		{"slice negative", 13, n("Slice"), []shapeInfo{act(B, 64, 32, 32), ival(-4, 3), ival(-1, 100), ival(3, -2)}, []int64{B, 64, 29, 3}, false},
		{"slice reverse step 2", 13, n("Slice"), []shapeInfo{act(B, 10), ival(8), ival(1), ival(1), ival(-3)}, []int64{B, 3}, false}, // 8, 5, 2
		{"slice default axes", 13, n("Slice"), []shapeInfo{act(B, 10, 10), ival(0, 2), ival(big, 5)}, []int64{B, 3, 10}, false},      // axes 0 (whole batch), 1
		{"slice attributes", 9, n("Slice", ints("starts", 1), ints("ends", 3), ints("axes", 1)), []shapeInfo{act(B, 10, 4)}, []int64{B, 2, 4}, false},
		{"slice batch", 13, n("Slice"), []shapeInfo{act(B, 10), ival(0), ival(1), ival(0)}, nil, true},
		{"slice computed", 13, n("Slice"), []shapeInfo{act(B, 10), act(1), ival(5)}, nil, true},
		{"slice empty", 13, n("Slice"), []shapeInfo{act(B, 10), ival(5), ival(5), ival(1)}, nil, true},

		{"pad axes", 18, n("Pad"), []shapeInfo{act(B, 3, 10, 10), ival(1, 2, 1, 2), absent, ival(2, -1)}, []int64{B, 3, 12, 14}, false},
		{"pad input", 13, n("Pad"), []shapeInfo{act(B, 3, 10, 10), ival(0, 0, 1, 0, 0, 0, 1, 3)}, []int64{B, 3, 12, 13}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &Model{Opsets: map[string]int64{"": c.opset}}
			shapes := map[string]shapeInfo{}
			for i, s := range c.in {
				if s.dims == nil && s.dtype == Undefined {
					c.node.Inputs = append(c.node.Inputs, "")
					continue
				}
				name := string(rune('a' + i))
				if s.dtype == 0 {
					s.dtype = Float
				}
				shapes[name] = s
				c.node.Inputs = append(c.node.Inputs, name)
			}
			c.node.Outputs = []string{"y"}
			out, err := m.inferNode(c.node, shapes)
			if c.err {
				if err == nil {
					t.Fatalf("no error, got %v", fmtDims(out[0].dims))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out[0].dims, c.want) {
				t.Fatalf("shape %s, want %s", fmtDims(out[0].dims), fmtDims(c.want))
			}
		})
	}
}

func TestSplitNumOutputs(t *testing.T) {
	m := &Model{Opsets: map[string]int64{"": 18}}
	n := &Node{Name: "s", OpType: "Split", Inputs: []string{"x"}, Outputs: []string{"a", "b", "c"},
		Attrs: []Attribute{{Name: "axis", Type: AttrInt, I: 1}, {Name: "num_outputs", Type: AttrInt, I: 3}}}
	out, err := m.inferNode(n, map[string]shapeInfo{"x": {dims: []int64{batchDim, 10, 4}, dtype: Float}})
	if err != nil {
		t.Fatal(err)
	}
	var got [][]int64
	for _, o := range out {
		got = append(got, o.dims)
	}
	if want := [][]int64{{batchDim, 4, 4}, {batchDim, 4, 4}, {batchDim, 2, 4}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("split %v, want %v", got, want)
	}
}

// TestSliceValues checks that Slice propagates the values of shape tensors (the
// Shape→Slice→Concat idiom of exporters' Resize sizes).
func TestSliceValues(t *testing.T) {
	m := &Model{Opsets: map[string]int64{"": 13}}
	n := &Node{Name: "s", OpType: "Slice", Inputs: []string{"shape", "st", "en"}, Outputs: []string{"y"}}
	out, err := m.inferNode(n, map[string]shapeInfo{
		"shape": {dims: []int64{4}, dtype: Int64, value: []int64{batchDim, 3, 224, 160}},
		"st":    {dims: []int64{1}, dtype: Int64, value: []int64{-2}},
		"en":    {dims: []int64{1}, dtype: Int64, value: []int64{math.MaxInt64}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out[0].dims, []int64{2}) || !reflect.DeepEqual(out[0].value, []int64{224, 160}) {
		t.Fatalf("dims %v values %v, want [2] [224 160]", out[0].dims, out[0].value)
	}
}

// DetectStyle is an exporter-style detection head (opset 13, input [batch, 3, 16, 16]): a
// strided Conv, ConvTranspose with pads, output_shape, output_padding + group and auto_pad,
// Resize by scales from a Constant node, by sizes computed from shapes (Shape → Slice →
// Concat, and a float scale: Cast → Mul → Cast), by a fractional scale initializer, a Slice
// and a Pad. Every interesting tensor is a graph output.
func DetectStyle() []byte {
	var gr []byte
	add := func(n []byte) { gr = putBytes(gr, fGraphNode, n) }
	add(nodeProto("c1", "Conv", []string{"input", "c1.w", "c1.b"}, []string{"c1"}, intsAttr("strides", 2, 2), intsAttr("pads", 1, 1, 1, 1)))
	add(nodeProto("ct1", "ConvTranspose", []string{"c1", "ct1.w", "ct1.b"}, []string{"ct1"}, intsAttr("strides", 2, 2), intsAttr("pads", 1, 1, 1, 1)))
	add(nodeProto("ct2", "ConvTranspose", []string{"c1", "ct2.w"}, []string{"ct2"}, intsAttr("strides", 2, 2), intsAttr("output_shape", 16, 16)))
	add(nodeProto("ct3", "ConvTranspose", []string{"c1", "ct3.w"}, []string{"ct3"}, intsAttr("strides", 2, 2), intsAttr("pads", 1, 1, 1, 1), intsAttr("output_padding", 1, 1), intAttr("group", 2)))
	add(nodeProto("ct4", "ConvTranspose", []string{"c1", "ct4.w"}, []string{"ct4"}, intsAttr("strides", 2, 2), strAttr("auto_pad", "SAME_UPPER")))
	add(nodeProto("k", "Constant", nil, []string{"scales_c"}, tensorAttr("value", floatVals("", []int64{4}, 1, 1, 2, 2))))
	add(nodeProto("r1", "Resize", []string{"c1", "", "scales_c"}, []string{"r1"}, strAttr("mode", "nearest")))
	add(nodeProto("sh", "Shape", []string{"c1"}, []string{"sh"}))
	add(nodeProto("nc", "Slice", []string{"sh", "zero", "two"}, []string{"nc"}))
	add(nodeProto("hw", "Slice", []string{"sh", "two", "four"}, []string{"hw"}))
	add(nodeProto("hw2", "Mul", []string{"hw", "two"}, []string{"hw2"}))
	add(nodeProto("sz", "Concat", []string{"nc", "hw2"}, []string{"sz"}, intAttr("axis", 0)))
	add(nodeProto("r2", "Resize", []string{"c1", "", "", "sz"}, []string{"r2"}, strAttr("mode", "linear")))
	add(nodeProto("hwf", "Cast", []string{"hw"}, []string{"hwf"}, intAttr("to", int64(Float))))
	add(nodeProto("hw15", "Mul", []string{"hwf", "onehalf"}, []string{"hw15"}))
	add(nodeProto("hwi", "Cast", []string{"hw15"}, []string{"hwi"}, intAttr("to", int64(Int64))))
	add(nodeProto("sz2", "Concat", []string{"nc", "hwi"}, []string{"sz2"}, intAttr("axis", 0)))
	add(nodeProto("r3", "Resize", []string{"c1", "", "", "sz2"}, []string{"r3"}))
	add(nodeProto("r4", "Resize", []string{"ct2", "roi", "frac"}, []string{"r4"}, strAttr("mode", "linear")))
	add(nodeProto("sl", "Slice", []string{"ct1", "sl.st", "sl.en", "sl.ax"}, []string{"sl"}))
	add(nodeProto("pad", "Pad", []string{"sl", "pad.p"}, []string{"pad"}))
	gr = putString(gr, fGraphName, "detect_style")
	for _, t := range [][]byte{
		floatTensor("c1.w", []int64{8, 3, 3, 3}, 1), floatTensor("c1.b", []int64{8}, 2),
		floatTensor("ct1.w", []int64{8, 4, 4, 4}, 3), floatTensor("ct1.b", []int64{4}, 4),
		floatTensor("ct2.w", []int64{8, 2, 3, 3}, 5), floatTensor("ct3.w", []int64{8, 2, 3, 3}, 6),
		floatTensor("ct4.w", []int64{8, 4, 3, 3}, 7),
		int64Tensor("zero", []int64{1}, 0), int64Tensor("two", []int64{1}, 2), int64Tensor("four", []int64{1}, 4),
		floatVals("onehalf", nil, 1.5), floatVals("roi", []int64{0}), floatVals("frac", []int64{4}, 1, 1, 0.75, 0.75),
		int64Tensor("sl.st", []int64{2}, 1, 0), int64Tensor("sl.en", []int64{2}, 3, -2), int64Tensor("sl.ax", []int64{2}, 1, 3),
		int64Tensor("pad.p", []int64{8}, 0, 0, 1, 2, 0, 0, 1, 2),
	} {
		gr = putBytes(gr, fGraphInitializer, t)
	}
	batch := Dim{Param: "batch"}
	gr = putBytes(gr, fGraphInput, encodeValueInfo("input", Float, []Dim{batch, {Value: 3}, {Value: 16}, {Value: 16}}))
	for _, o := range DetectStyleOutputs {
		// Outputs declare no shape: inference alone must find them.
		var ty []byte
		ty = putBytes(ty, fTypeTensor, putVarint(nil, fTensorTypeElem, int64(Float)))
		gr = putBytes(gr, fGraphOutput, putBytes(putString(nil, fValueInfoName, o), fValueInfoType, ty))
	}
	return model(7, map[string]int64{"": 13}, gr)
}

// DetectStyleOutputs are detectStyle's outputs, and detectStyleShapes their per-sample shapes
// worked out by hand.
var (
	DetectStyleOutputs = []string{"ct1", "ct2", "ct3", "ct4", "r1", "r2", "r3", "r4", "sl", "pad"}
	detectStyleShapes  = map[string][]int64{
		"c1":  {8, 8, 8},   // (16+2−3)/2+1
		"ct1": {4, 16, 16}, // 2·7+3+1−2
		"ct2": {2, 16, 16}, // output_shape
		"ct3": {4, 16, 16}, // 2·7+1+2+1−2, 2 groups of 2 channels
		"ct4": {4, 16, 16}, // SAME_UPPER: 8·2
		"r1":  {8, 16, 16}, // scales 2
		"r2":  {8, 16, 16}, // sizes [N, 8, 2·8, 2·8]
		"r3":  {8, 12, 12}, // sizes [N, 8, 1.5·8, 1.5·8]
		"r4":  {2, 12, 12}, // floor(16·0.75)
		"sl":  {2, 16, 14}, // channels 1:3, width 0:−2
		"pad": {2, 18, 18}, // +1+1, +2+2
	}
)

func TestDetectStyle(t *testing.T) {
	m, err := Parse(DetectStyle())
	if err != nil {
		t.Fatal(err)
	}
	g, err := m.Graph(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range detectStyleShapes {
		if !reflect.DeepEqual(g.Tensors[name].Shape, s) {
			t.Errorf("tensor %q: shape %v, want %v", name, g.Tensors[name].Shape, s)
		}
	}
	nodes := map[string]graph.Node{}
	for _, n := range g.Nodes {
		nodes[n.Name] = n
	}
	// Explicit pads replace output_shape and auto_pad (ONNX Runtime: the odd pixel of
	// SAME_UPPER comes off the begin, of output_shape off the end).
	for name, want := range map[string][]int64{"ct2": {0, 0, 1, 1}, "ct4": {1, 1, 0, 0}} {
		if got := nodes[name].Attrs["pads"]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s pads %v, want %v", name, got, want)
		}
	}
	if got := nodes["ct3"].Attrs["output_padding"]; !reflect.DeepEqual(got, []int64{1, 1}) {
		t.Errorf("ct3 output_padding %v", got)
	}
	// ConvTranspose FLOPs: every input pixel scatters a Cout/group × k window.
	if got, want := nodes["ct1"].FLOPs, float64(2*4*4*8*4*8*8); got != want {
		t.Errorf("ct1 FLOPs %g, want %g", got, want)
	}
	if got, want := nodes["ct3"].FLOPs, float64(2*3*3*8*2*8*8); got != want {
		t.Errorf("ct3 FLOPs %g, want %g", got, want)
	}
	if got, want := nodes["ct1"].ParamBytes, int64(4*(8*4*4*4+4)); got != want {
		t.Errorf("ct1 params %d, want %d", got, want)
	}
	for name, want := range map[string]map[string][]int64{
		"r1": {"scales": {1, 1, 2, 2}, "nearest": {1}},
		"r2": {"scales": {1, 1, 2, 2}},
		"r3": {"nearest": {1}}, // 8 → 12 is no integer factor
		"r4": nil,
	} {
		got := nodes[name].Attrs
		if len(got) == 0 {
			got = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s attrs %v, want %v", name, got, want)
		}
	}
	// The empty roi stands for an omitted input: the IR has no empty tensors.
	if got := nodes["r4"].Inputs; !reflect.DeepEqual(got, []string{"ct2", "frac"}) {
		t.Errorf("r4 inputs %v, want [ct2 frac]", got)
	}
	if err := g.Validate(); err != nil {
		t.Error(err)
	}
	if got, want := nodes["r1"].FLOPs, float64(4*8*16*16); got != want {
		t.Errorf("r1 FLOPs %g, want %g", got, want)
	}
	// A block boundary right after the computed sizes: the consumer must be fed their values.
	if v, ok := m.ShapeValue("sz2", 3); !ok || !reflect.DeepEqual(v, []int64{3, 8, 12, 12}) {
		t.Errorf("ShapeValue(sz2) = %v, %v", v, ok)
	}
}

// FPN is an IR graph in the zoo's style (activations only) with the layers of a feature
// pyramid and a decoder: input [3, 16, 16] → Conv s2 → [8, 8, 8]; ConvTranspose 4×4 s2 →
// [4, 16, 16]; nearest Resize ×2 → [8, 16, 16] → 1×1 Conv → [4, 16, 16]; Add; ConvTranspose
// 3×3 s2 with output_padding and 2 groups → [4, 32, 32]; linear Resize to [4, 24, 24] (scale
// 0.75, no integer factor).
func FPN() *graph.Graph {
	g := &graph.Graph{Name: "fpn", Tensors: map[string]graph.Tensor{}, Inputs: []string{"input"}}
	g.Tensors["input"] = graph.Tensor{Name: "input", Shape: []int64{3, 16, 16}, DType: "float32"}
	add := func(name, op string, in []string, shape []int64, attrs map[string][]int64) string {
		g.Tensors[name] = graph.Tensor{Name: name, Shape: shape, DType: "float32"}
		g.Nodes = append(g.Nodes, graph.Node{Name: name, Op: op, Inputs: in, Outputs: []string{name}, Attrs: attrs})
		return name
	}
	c := add("conv", "Conv", []string{"input"}, []int64{8, 8, 8}, map[string][]int64{"kernel_shape": {3, 3}, "strides": {2, 2}, "pads": {1, 1, 1, 1}})
	d := add("deconv", "ConvTranspose", []string{c}, []int64{4, 16, 16}, map[string][]int64{"kernel_shape": {4, 4}, "strides": {2, 2}, "pads": {1, 1, 1, 1}})
	u := add("up", "Resize", []string{c}, []int64{8, 16, 16}, map[string][]int64{"scales": {1, 1, 2, 2}, "nearest": {1}})
	l := add("lateral", "Conv", []string{u}, []int64{4, 16, 16}, map[string][]int64{"kernel_shape": {1, 1}})
	s := add("sum", "Add", []string{d, l}, []int64{4, 16, 16}, nil)
	d2 := add("deconv2", "ConvTranspose", []string{s}, []int64{4, 32, 32}, map[string][]int64{
		"kernel_shape": {3, 3}, "strides": {2, 2}, "pads": {1, 1, 1, 1}, "output_padding": {1, 1}, "group": {2}})
	r := add("down", "Resize", []string{d2}, []int64{4, 24, 24}, nil)
	g.Outputs = []string{d, r}
	if err := graph.Annotate(g); err != nil {
		panic(err)
	}
	return g
}

// TestFPNRoundTrip builds FPN, reads it back, and rebuilds the parsed graph (weights and
// Resize scales now listed as Const tensors): shapes, ops, FLOPs and the attributes that
// matter survive both trips.
func TestFPNRoundTrip(t *testing.T) {
	g := FPN()
	data, err := Build(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, data []byte) *graph.Graph {
		m, err := Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got, err := m.Graph(nil)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(got.Nodes) != len(g.Nodes) {
			t.Fatalf("%s: %d nodes, want %d", what, len(got.Nodes), len(g.Nodes))
		}
		for i, n := range g.Nodes {
			gn := got.Nodes[i]
			if gn.Name != n.Name || gn.Op != n.Op {
				t.Errorf("%s: node %d: %s %s, want %s %s", what, i, gn.Name, gn.Op, n.Name, n.Op)
			}
			if !reflect.DeepEqual(got.Tensors[n.Outputs[0]].Shape, g.Tensors[n.Outputs[0]].Shape) {
				t.Errorf("%s: %s: shape %v, want %v", what, n.Name, got.Tensors[n.Outputs[0]].Shape, g.Tensors[n.Outputs[0]].Shape)
			}
			if gn.FLOPs != n.FLOPs {
				t.Errorf("%s: %s: FLOPs %g, want %g", what, n.Name, gn.FLOPs, n.FLOPs)
			}
			for _, k := range []string{"kernel_shape", "strides", "pads", "group", "output_padding", "scales", "nearest"} {
				if v, ok := n.Attrs[k]; ok && !reflect.DeepEqual(gn.Attrs[k], v) {
					t.Errorf("%s: %s: attr %s = %v, want %v", what, n.Name, k, gn.Attrs[k], v)
				}
			}
		}
		// Weights: the parsed graph also counts the Resize scales (4 floats each).
		if d := got.TotalParamBytes() - g.TotalParamBytes(); d != 2*16 {
			t.Errorf("%s: param bytes %d, want %d + 32", what, got.TotalParamBytes(), g.TotalParamBytes())
		}
		return got
	}
	got := check("build", data)
	again, err := Build(got, 1)
	if err != nil {
		t.Fatal(err)
	}
	check("rebuild", again)
	// Upsample is written as Resize (it left the opset in version 10).
	up := FPN()
	up.Nodes[2].Op = "Upsample"
	data, err = Build(up, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if m.Nodes[2].OpType != "Resize" {
		t.Errorf("Upsample written as %s", m.Nodes[2].OpType)
	}
}

func TestResizeScales(t *testing.T) {
	cases := []struct {
		in, out []int64
	}{{[]int64{3, 8, 8}, []int64{3, 12, 12}}, {[]int64{4, 7, 13}, []int64{4, 3, 29}}, {[]int64{1, 3, 1000}, []int64{1, 1, 999}}}
	for _, c := range cases {
		s, err := resizeScales(&graph.Node{Op: "Resize"}, c.in, c.out)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range c.in {
			if got := scaledDim(d, float64(s[i+1])); got != c.out[i] {
				t.Errorf("%v → %v: scale %g gives %d on axis %d", c.in, c.out, s[i+1], got, i)
			}
		}
	}
}
