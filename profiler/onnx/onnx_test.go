package onnx

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/plan-dev/plan/profiler/graph"
	"github.com/plan-dev/plan/profiler/onnx/onnxtest"
	"github.com/plan-dev/plan/profiler/zoo"
)

func testGraphs(t testing.TB) map[string]*graph.Graph {
	t.Helper()
	demo, err := zoo.Build("demo")
	if err != nil {
		t.Fatalf("zoo demo: %v", err)
	}
	return map[string]*graph.Graph{
		"mlp":         onnxtest.MLP(64, 128, 10),
		"cnn":         onnxtest.CNN(8, 32),
		"transformer": onnxtest.Transformer(100, 32, 2, 8),
		"demo":        demo,
	}
}

// TestRoundTrip checks that Parse(Build(g)).Graph gives every tensor of g its shape back and
// keeps the node order, ops and attributes.
func TestRoundTrip(t *testing.T) {
	for name, g := range testGraphs(t) {
		t.Run(name, func(t *testing.T) {
			data, err := Build(g, 1)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			if m.Opset() < 17 {
				t.Errorf("opset %d, want >= 17", m.Opset())
			}
			if len(m.Inputs) != 1 || m.Inputs[0].Dims[0].Param != batchParam {
				t.Errorf("inputs %+v: want one input with a dynamic batch", m.Inputs)
			}
			got, err := m.Graph(nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Nodes) != len(g.Nodes) {
				t.Fatalf("%d nodes, want %d", len(got.Nodes), len(g.Nodes))
			}
			for i, n := range g.Nodes {
				gn := got.Nodes[i]
				if gn.Name != n.Name || gn.Op != n.Op {
					t.Errorf("node %d: %s %s, want %s %s", i, gn.Name, gn.Op, n.Name, n.Op)
				}
				for _, o := range n.Outputs {
					if !reflect.DeepEqual(got.Tensors[o].Shape, g.Tensors[o].Shape) {
						t.Errorf("tensor %q: shape %v, want %v", o, got.Tensors[o].Shape, g.Tensors[o].Shape)
					}
				}
				for _, k := range []string{"kernel_shape", "strides", "pads", "group", "axis", "perm"} {
					if v, ok := n.Attrs[k]; ok && !reflect.DeepEqual(gn.Attrs[k], v) {
						t.Errorf("node %q: attr %s = %v, want %v", n.Name, k, gn.Attrs[k], v)
					}
				}
				if n.FLOPs != gn.FLOPs {
					t.Errorf("node %q: FLOPs %g, want %g", n.Name, gn.FLOPs, n.FLOPs)
				}
			}
			// The parsed graph also counts Reshape's int64 shape tensors as parameters.
			if d := got.TotalParamBytes() - g.TotalParamBytes(); d < 0 || d > 32*int64(len(g.Nodes)) {
				t.Errorf("param bytes %d, want %d", got.TotalParamBytes(), g.TotalParamBytes())
			}
			if name == "demo" {
				return // 120 MB of weights: the small graphs cover the rest
			}
			// Deterministic: the same seed gives the same bytes, another seed other weights.
			again, _ := Build(g, 1)
			other, _ := Build(g, 2)
			if !bytes.Equal(data, again) {
				t.Error("Build is not deterministic for a fixed seed")
			}
			if bytes.Equal(data, other) {
				t.Error("Build ignores the seed")
			}
			// Rebuilding the parsed graph (weights now listed as Const tensors) still works.
			if _, err := Build(got, 1); err != nil {
				t.Errorf("rebuild of parsed graph: %v", err)
			}
		})
	}
}

func TestNotONNX(t *testing.T) {
	cases := map[string][]byte{
		"empty":               nil,
		"text":                []byte("hello, this is not a model\n"),
		"json":                []byte(`{"apiVersion": "plan/v1"}`),
		"binary":              {0xff, 0xff, 0xff, 0xff, 0x0f},
		"proto without graph": putVarint(nil, fModelIRVersion, 8),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(data)
			if err == nil || !errors.Is(err, ErrNotONNX) || !strings.Contains(err.Error(), "not an ONNX model") {
				t.Fatalf("err = %v, want not an ONNX model", err)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "x.onnx")
	if err := os.WriteFile(path, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "x.onnx") || !errors.Is(err, ErrNotONNX) {
		t.Fatalf("Load: err = %v", err)
	}
}

// dynamicModel is a conv model whose input is [N, 3, H, W] with symbolic H and W.
func dynamicModel(t *testing.T) []byte {
	t.Helper()
	g := onnxtest.CNN(4, 16)
	data, err := Build(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	// Re-encode the input declaration with symbolic spatial dims.
	var gr []byte
	for _, n := range m.Nodes {
		gr = putBytes(gr, fGraphNode, n.raw)
	}
	for _, name := range m.initOrder {
		gr = putBytes(gr, fGraphInitializer, m.Initializers[name].raw)
	}
	gr = putBytes(gr, fGraphInput, encodeValueInfo("input", Float, []Dim{{Param: "N"}, {Value: 3}, {Param: "H"}, {Param: "W"}}))
	gr = putBytes(gr, fGraphOutput, encodeValueInfo(m.Outputs[0].Name, Float, []Dim{{Param: "N"}, {Value: 10}}))
	return model(8, m.Opsets, gr)
}

func TestDynamicDims(t *testing.T) {
	m, err := Parse(dynamicModel(t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Graph(nil)
	if err == nil || !errors.Is(err, ErrDynamicDim) || !strings.Contains(err.Error(), "--input-shape") {
		t.Fatalf("Graph(nil): err = %v, want a dynamic-dimension error naming --input-shape", err)
	}
	if _, err := m.Graph([]int64{3, 16}); err == nil || !strings.Contains(err.Error(), "--input-shape") {
		t.Fatalf("wrong rank: err = %v", err)
	}
	if _, err := m.Graph([]int64{4, 16, 16}); err == nil {
		t.Fatal("channel mismatch: no error")
	}
	g, err := m.Graph([]int64{3, 32, 32})
	if err != nil {
		t.Fatal(err)
	}
	want := onnxtest.CNN(4, 32)
	for name, tt := range want.Tensors {
		if got, ok := g.Tensors[name]; ok && !tt.Const && !reflect.DeepEqual(got.Shape, tt.Shape) {
			t.Errorf("tensor %q: shape %v, want %v", name, got.Shape, tt.Shape)
		}
	}
}

func TestShapeRules(t *testing.T) {
	n := func(op string, attrs ...Attribute) *Node { return &Node{Name: "n", OpType: op, Attrs: attrs} }
	ints := func(name string, v ...int64) Attribute { return Attribute{Name: name, Type: AttrInts, Ints: v} }
	i1 := func(name string, v int64) Attribute { return Attribute{Name: name, Type: AttrInt, I: v} }
	B := batchDim
	cases := []struct {
		name string
		node *Node
		in   []shapeInfo
		want []int64
		err  bool
	}{
		{"conv stride pad", n("Conv", ints("strides", 2, 2), ints("pads", 1, 1, 1, 1)),
			[]shapeInfo{{dims: []int64{B, 3, 224, 224}}, {dims: []int64{64, 3, 3, 3}}}, []int64{B, 64, 112, 112}, false},
		{"conv same upper", n("Conv", ints("strides", 2, 2), Attribute{Name: "auto_pad", Type: AttrString, S: []byte("SAME_UPPER")}),
			[]shapeInfo{{dims: []int64{B, 3, 225, 225}}, {dims: []int64{8, 3, 3, 3}}}, []int64{B, 8, 113, 113}, false},
		{"conv depthwise", n("Conv", i1("group", 32), ints("pads", 1, 1, 1, 1)),
			[]shapeInfo{{dims: []int64{B, 32, 10, 10}}, {dims: []int64{32, 1, 3, 3}}}, []int64{B, 32, 10, 10}, false},
		{"conv bad group", n("Conv", i1("group", 3)),
			[]shapeInfo{{dims: []int64{B, 32, 10, 10}}, {dims: []int64{32, 1, 3, 3}}}, nil, true},
		{"maxpool ceil", n("MaxPool", ints("kernel_shape", 3, 3), ints("strides", 2, 2), i1("ceil_mode", 1)),
			[]shapeInfo{{dims: []int64{B, 64, 112, 112}}}, []int64{B, 64, 56, 56}, false},
		{"maxpool floor", n("MaxPool", ints("kernel_shape", 3, 3), ints("strides", 2, 2)),
			[]shapeInfo{{dims: []int64{B, 64, 112, 112}}}, []int64{B, 64, 55, 55}, false},
		{"gemm transB", n("Gemm", i1("transB", 1)),
			[]shapeInfo{{dims: []int64{B, 512}}, {dims: []int64{1000, 512}}}, []int64{B, 1000}, false},
		{"gemm mismatch", n("Gemm"), []shapeInfo{{dims: []int64{B, 512}}, {dims: []int64{1000, 512}}}, nil, true},
		{"matmul batched", n("MatMul"),
			[]shapeInfo{{dims: []int64{B, 12, 128, 64}}, {dims: []int64{B, 12, 64, 128}}}, []int64{B, 12, 128, 128}, false},
		{"matmul weight", n("MatMul"), []shapeInfo{{dims: []int64{B, 128, 768}}, {dims: []int64{768, 3072}}}, []int64{B, 128, 3072}, false},
		{"add broadcast", n("Add"), []shapeInfo{{dims: []int64{B, 64, 8, 8}}, {dims: []int64{64, 1, 1}}}, []int64{B, 64, 8, 8}, false},
		{"add mismatch", n("Add"), []shapeInfo{{dims: []int64{B, 64, 8, 8}}, {dims: []int64{32, 1, 1}}}, nil, true},
		{"flatten", n("Flatten"), []shapeInfo{{dims: []int64{B, 64, 2, 2}}}, []int64{B, 256}, false},
		{"flatten batch merge", n("Flatten", i1("axis", 2)), []shapeInfo{{dims: []int64{B, 64, 2, 2}}}, nil, true},
		{"reshape keep batch", n("Reshape"), []shapeInfo{{dims: []int64{B, 64, 2, 2}}, {dims: []int64{2}, value: []int64{0, -1}}}, []int64{B, 256}, false},
		{"reshape minus one batch", n("Reshape"), []shapeInfo{{dims: []int64{B, 64, 2, 2}}, {dims: []int64{2}, value: []int64{-1, 256}}}, []int64{B, 256}, false},
		{"reshape heads", n("Reshape"), []shapeInfo{{dims: []int64{B, 128, 768}}, {dims: []int64{4}, value: []int64{0, 0, 12, 64}}}, []int64{B, 128, 12, 64}, false},
		{"reshape unknown", n("Reshape"), []shapeInfo{{dims: []int64{B, 128}}, {dims: []int64{2}}}, nil, true},
		{"concat", n("Concat", i1("axis", 1)), []shapeInfo{{dims: []int64{B, 3, 4}}, {dims: []int64{B, 5, 4}}}, []int64{B, 8, 4}, false},
		{"concat mismatch", n("Concat", i1("axis", 1)), []shapeInfo{{dims: []int64{B, 3, 4}}, {dims: []int64{B, 5, 5}}}, nil, true},
		{"transpose", n("Transpose", ints("perm", 0, 2, 1, 3)), []shapeInfo{{dims: []int64{B, 128, 12, 64}}}, []int64{B, 12, 128, 64}, false},
		{"softmax", n("Softmax", i1("axis", -1)), []shapeInfo{{dims: []int64{B, 10}}}, []int64{B, 10}, false},
		{"gap", n("GlobalAveragePool"), []shapeInfo{{dims: []int64{B, 10, 7, 7}}}, []int64{B, 10, 1, 1}, false},
		{"bn", n("BatchNormalization"), []shapeInfo{{dims: []int64{B, 10, 7, 7}}, {dims: []int64{10}}}, []int64{B, 10, 7, 7}, false},
		{"unknown op", n("FancyOp"), []shapeInfo{{dims: []int64{B, 10}}}, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &Model{}
			shapes := map[string]shapeInfo{}
			for i, s := range c.in {
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

// TestSubgraphIO checks block inputs and outputs on the CNN, whose skip connection makes the
// stem output live across the residual block.
func TestSubgraphIO(t *testing.T) {
	g := onnxtest.CNN(8, 16)
	data, err := Build(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Graph(nil); err != nil {
		t.Fatal(err)
	}
	// Nodes: 0 Conv, 1 BN, 2 Relu(stem), 3 Conv, 4 Relu, 5 Conv, 6 Add, ...
	stem := g.Nodes[2].Outputs[0]
	cases := []struct {
		first, end  int
		ins, outs   []string
		passThrough bool
	}{
		{0, 3, []string{"input"}, []string{stem}, false},
		{3, 5, []string{stem}, []string{stem, g.Nodes[4].Outputs[0]}, true},
		{3, 7, []string{stem}, []string{g.Nodes[6].Outputs[0]}, false},
		{0, len(g.Nodes), []string{"input"}, g.Outputs, false},
	}
	all := graph.AllCutBytes(g)
	for _, c := range cases {
		ins, outs, err := BlockIO(m, c.first, c.end)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ins, c.ins) || !reflect.DeepEqual(outs, c.outs) {
			t.Errorf("[%d,%d): io %v → %v, want %v → %v", c.first, c.end, ins, outs, c.ins, c.outs)
		}
		var cut int64
		for _, o := range outs {
			cut += g.Tensors[o].TransferBytes()
		}
		if c.end < len(g.Nodes) && cut != all[c.end] {
			t.Errorf("cut %d: outputs carry %d bytes, AllCutBytes says %d", c.end, cut, all[c.end])
		}
		sub, err := Subgraph(m, c.first, c.end)
		if err != nil {
			t.Fatal(err)
		}
		sm, err := Parse(sub)
		if err != nil {
			t.Fatalf("subgraph does not parse: %v", err)
		}
		if len(sm.Nodes) != c.end-c.first {
			t.Errorf("subgraph has %d nodes, want %d", len(sm.Nodes), c.end-c.first)
		}
		sg, err := sm.Graph(nil)
		if err != nil {
			t.Fatalf("subgraph shapes: %v", err)
		}
		for _, o := range outs {
			if !reflect.DeepEqual(sg.Tensors[o].Shape, g.Tensors[o].Shape) {
				t.Errorf("subgraph output %q: shape %v, want %v", o, sg.Tensors[o].Shape, g.Tensors[o].Shape)
			}
		}
	}
	if _, err := Subgraph(m, 3, 3); err == nil {
		t.Error("empty block: no error")
	}
}

func FuzzParse(f *testing.F) {
	for _, g := range []*graph.Graph{onnxtest.MLP(4, 8, 2), onnxtest.CNN(2, 8)} {
		data, err := Build(g, 1)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	if fpn, err := Build(FPN(), 1); err == nil {
		f.Add(fpn)
	}
	f.Add(DetectStyle())
	f.Add([]byte("not onnx"))
	f.Add([]byte{0x08, 0x08, 0x3a, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrNotONNX) {
				t.Fatalf("error does not wrap ErrNotONNX: %v", err)
			}
			return
		}
		// Whatever parses must survive inference and cutting without panicking.
		if _, err := m.Graph(nil); err == nil && len(m.Nodes) > 0 {
			if _, err := Subgraph(m, 0, len(m.Nodes)); err != nil {
				t.Logf("subgraph: %v", err)
			}
		}
	})
}

// TestZooStructure writes every zoo model as an ONNX skeleton (weights without data: the big
// ones would take gigabytes) and checks that reading it back gives every tensor the zoo's
// shape: the writer covers every op the zoo uses, and shape inference agrees with the zoo.
func TestZooStructure(t *testing.T) {
	for _, name := range zoo.Names() {
		t.Run(name, func(t *testing.T) {
			g, err := zoo.Build(name)
			if err != nil {
				t.Fatal(err)
			}
			data, err := build(g, 1, true)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Graph(nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Nodes) != len(g.Nodes) {
				t.Fatalf("%d nodes, want %d", len(got.Nodes), len(g.Nodes))
			}
			bad := 0
			for name, tt := range g.Tensors {
				if tt.Const {
					continue
				}
				if gt, ok := got.Tensors[name]; !ok || !reflect.DeepEqual(gt.Shape, tt.Shape) {
					if bad++; bad <= 5 {
						t.Errorf("tensor %q: shape %v, want %v", name, gt.Shape, tt.Shape)
					}
				}
			}
			if d := got.TotalFLOPs() - g.TotalFLOPs(); d > 1e-6*g.TotalFLOPs() || d < -1e-6*g.TotalFLOPs() {
				t.Errorf("FLOPs %g, want %g", got.TotalFLOPs(), g.TotalFLOPs())
			}
		})
	}
}

func TestExternalData(t *testing.T) {
	ext := tensorHeader("w", Float, []int64{4}, 0)
	ext = putVarint(ext, fTensorDataLocation, 1)
	var gr []byte
	gr = putBytes(gr, fGraphNode, nodeProto("mm", "MatMul", []string{"x", "w"}, []string{"y"}))
	gr = putBytes(gr, fGraphInitializer, ext)
	gr = putBytes(gr, fGraphInput, encodeValueInfo("x", Float, []Dim{{Param: "N"}, {Value: 4}}))
	gr = putBytes(gr, fGraphOutput, encodeValueInfo("y", Float, []Dim{{Param: "N"}}))
	m, err := Parse(model(8, map[string]int64{"": 17}, gr))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.ExternalData(); !reflect.DeepEqual(got, []string{"w"}) {
		t.Fatalf("ExternalData() = %v", got)
	}
	if _, err := m.Initializers["w"].Int64s(); err == nil {
		t.Error("reading external data: no error")
	}
}
