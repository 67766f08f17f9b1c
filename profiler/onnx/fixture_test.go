package onnx

import (
	"bytes"
	"encoding/binary"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/onnx fixtures")

var (
	torchFixture  = filepath.Join("..", "..", "testdata", "onnx", "torch_style.onnx")
	staticFixture = filepath.Join("..", "..", "testdata", "onnx", "static_batch.onnx")
)

// attr encoders for hand-written nodes.
func intsAttr(name string, v ...int64) []byte {
	a := putString(nil, fAttrName, name)
	a = putVarint(a, fAttrType, int64(AttrInts))
	for _, x := range v {
		a = putVarint(a, fAttrInts, x)
	}
	return a
}

func intAttr(name string, v int64) []byte {
	a := putString(nil, fAttrName, name)
	a = putVarint(a, fAttrType, int64(AttrInt))
	return putVarint(a, fAttrI, v)
}

func tensorAttr(name string, t []byte) []byte {
	a := putString(nil, fAttrName, name)
	a = putVarint(a, fAttrType, int64(AttrTensor))
	return putBytes(a, fAttrT, t)
}

func nodeProto(name, op string, ins, outs []string, attrs ...[]byte) []byte {
	var n []byte
	for _, i := range ins {
		n = putString(n, fNodeInput, i)
	}
	for _, o := range outs {
		n = putString(n, fNodeOutput, o)
	}
	if name != "" {
		n = putString(n, fNodeName, name)
	}
	n = putString(n, fNodeOpType, op)
	for _, a := range attrs {
		n = putBytes(n, fNodeAttribute, a)
	}
	return n
}

func floatTensor(name string, dims []int64, seed uint32) []byte {
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	raw := make([]byte, 4*n)
	s := seed | 1
	for i := int64(0); i < n; i++ {
		s ^= s << 13
		s ^= s >> 17
		s ^= s << 5
		v := (float32(s%2000)/1000 - 1) * 0.2
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	return tensorProto(name, Float, dims, raw)
}

func int64Tensor(name string, dims []int64, v ...int64) []byte {
	raw := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(x))
	}
	return tensorProto(name, Int64, dims, raw)
}

// torchStyle builds a model the way PyTorch's exporter writes one: unnamed nodes, a
// Constant node, IR 7 / opset 13, Conv without kernel_shape, a BatchNormalization, a residual
// Add, MaxPool with ceil_mode, and a dynamic flatten (Shape → Gather → Unsqueeze → Concat →
// Reshape) before the classifier; input [batch, 3, 24, 24] (batch: a symbol, or a fixed size).
func torchStyle(batch Dim) []byte {
	var gr []byte
	add := func(n []byte) { gr = putBytes(gr, fGraphNode, n) }
	add(nodeProto("/conv1/Conv", "Conv", []string{"input", "conv1.w", "conv1.b"}, []string{"/conv1/Conv_output_0"}, intsAttr("pads", 1, 1, 1, 1), intsAttr("strides", 1, 1)))
	add(nodeProto("/bn1/BatchNormalization", "BatchNormalization", []string{"/conv1/Conv_output_0", "bn.s", "bn.b", "bn.m", "bn.v"}, []string{"/bn1/bn_out"}))
	add(nodeProto("/relu/Relu", "Relu", []string{"/bn1/bn_out"}, []string{"/relu/Relu_output_0"}))
	add(nodeProto("", "Conv", []string{"/relu/Relu_output_0", "conv2.w"}, []string{"c2"}, intsAttr("pads", 1, 1, 1, 1)))
	add(nodeProto("", "Add", []string{"c2", "/relu/Relu_output_0"}, []string{"sum"}))
	add(nodeProto("", "Relu", []string{"sum"}, []string{"r2"}))
	add(nodeProto("/pool/MaxPool", "MaxPool", []string{"r2"}, []string{"p"}, intsAttr("kernel_shape", 3, 3), intsAttr("strides", 2, 2), intAttr("ceil_mode", 1)))
	add(nodeProto("", "GlobalAveragePool", []string{"p"}, []string{"gap"}))
	add(nodeProto("/Shape", "Shape", []string{"gap"}, []string{"shape"}))
	add(nodeProto("/Constant", "Constant", nil, []string{"zero"}, tensorAttr("value", int64Tensor("", nil, 0))))
	add(nodeProto("/Gather", "Gather", []string{"shape", "zero"}, []string{"batch"}, intAttr("axis", 0)))
	add(nodeProto("/Unsqueeze", "Unsqueeze", []string{"batch", "axes0"}, []string{"batch1"}))
	add(nodeProto("/Concat", "Concat", []string{"batch1", "minus1"}, []string{"target"}, intAttr("axis", 0)))
	add(nodeProto("/Reshape", "Reshape", []string{"gap", "target"}, []string{"flat"}))
	add(nodeProto("/fc/Gemm", "Gemm", []string{"flat", "fc.w", "fc.b"}, []string{"logits"}, intAttr("transB", 1)))
	gr = putString(gr, fGraphName, "torch_jit")
	for i, t := range [][]byte{
		floatTensor("conv1.w", []int64{8, 3, 3, 3}, 1), floatTensor("conv1.b", []int64{8}, 2),
		floatTensor("bn.s", []int64{8}, 3), floatTensor("bn.b", []int64{8}, 4), floatTensor("bn.m", []int64{8}, 5),
		tensorProto("bn.v", Float, []int64{8}, bytes.Repeat([]byte{0, 0, 0x80, 0x3f}, 8)),
		floatTensor("conv2.w", []int64{8, 8, 3, 3}, 6),
		int64Tensor("axes0", []int64{1}, 0), int64Tensor("minus1", []int64{1}, -1),
		floatTensor("fc.w", []int64{5, 8}, 7), floatTensor("fc.b", []int64{5}, 8),
	} {
		_ = i
		gr = putBytes(gr, fGraphInitializer, t)
	}
	gr = putBytes(gr, fGraphInput, encodeValueInfo("input", Float, []Dim{batch, {Value: 3}, {Value: 24}, {Value: 24}}))
	gr = putBytes(gr, fGraphOutput, encodeValueInfo("logits", Float, []Dim{batch, {Value: 5}}))
	return model(7, map[string]int64{"": 13}, gr)
}

// TestTorchStyle parses the exporter-style fixture: names for unnamed nodes, Constant folded
// into an initializer, kernel_shape taken from the weight, and the dynamic flatten resolved by
// propagating shape values.
func TestTorchStyle(t *testing.T) {
	for path, data := range map[string][]byte{
		torchFixture:  torchStyle(Dim{Param: "batch"}),
		staticFixture: torchStyle(Dim{Value: 1}),
	} {
		if *update {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		onDisk, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(onDisk, data) {
			t.Fatalf("%s is stale: run go test -run TestTorchStyle -update", path)
		}
	}
	m, err := Load(torchFixture)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Nodes) != 14 || m.Opset() != 13 {
		t.Fatalf("%d nodes (want 14: the Constant becomes an initializer), opset %d", len(m.Nodes), m.Opset())
	}
	g, err := m.Graph(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int64{
		"/conv1/Conv_output_0": {8, 24, 24}, "sum": {8, 24, 24}, "p": {8, 12, 12}, "gap": {8, 1, 1},
		"flat": {8}, "logits": {5},
	}
	for name, s := range want {
		if !reflect.DeepEqual(g.Tensors[name].Shape, s) {
			t.Errorf("tensor %q: shape %v, want %v", name, g.Tensors[name].Shape, s)
		}
	}
	names := map[string]bool{}
	for _, n := range g.Nodes {
		if n.Name == "" || names[n.Name] {
			t.Errorf("node name %q: empty or duplicate", n.Name)
		}
		names[n.Name] = true
	}
	if ks := g.Nodes[3].Attrs["kernel_shape"]; !reflect.DeepEqual(ks, []int64{3, 3}) {
		t.Errorf("kernel_shape of the unnamed Conv: %v, want [3 3] (from its weight)", ks)
	}
	if g.Nodes[0].FLOPs != 2*3*3*3*8*24*24 {
		t.Errorf("conv1 FLOPs %g", g.Nodes[0].FLOPs)
	}
	// The reshape target is known, so the IR records it (0 = batch).
	var reshape []int64
	for _, n := range g.Nodes {
		if n.Op == "Reshape" {
			reshape = n.Attrs["shape"]
		}
	}
	if !reflect.DeepEqual(reshape, []int64{0, -1}) {
		t.Errorf("reshape target %v, want [0 -1]", reshape)
	}
}

// TestStaticBatch reads a model exported with a fixed batch of 1: dimension 0 of every
// activation is still the batch, so per-sample shapes match the dynamic model's.
func TestStaticBatch(t *testing.T) {
	m, err := Load(staticFixture)
	if err != nil {
		t.Fatal(err)
	}
	g, err := m.Graph(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string][]int64{"input": {3, 24, 24}, "p": {8, 12, 12}, "flat": {8}, "logits": {5}} {
		if !reflect.DeepEqual(g.Tensors[name].Shape, s) {
			t.Errorf("tensor %q: shape %v, want %v", name, g.Tensors[name].Shape, s)
		}
	}
}
