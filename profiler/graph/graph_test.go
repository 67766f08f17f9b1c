package graph

import (
	"strings"
	"testing"
)

// skipGraph: x -> conv1 -> a -> relu -> b -> conv2 -> c -> add(a, c) -> y
// so tensor a is live across the cuts before relu, conv2 and add.
func skipGraph() *Graph {
	f := func(name string, s ...int64) Tensor { return Tensor{Name: name, Shape: s, DType: "float32"} }
	return &Graph{
		Name: "skip",
		Tensors: map[string]Tensor{
			"x": f("x", 3, 8, 8), "a": f("a", 4, 8, 8), "b": f("b", 4, 8, 8),
			"c": f("c", 4, 8, 8), "y": f("y", 4, 8, 8),
		},
		Inputs:  []string{"x"},
		Outputs: []string{"y"},
		Nodes: []Node{
			{Name: "conv1", Op: "Conv", Inputs: []string{"x"}, Outputs: []string{"a"}, Attrs: map[string][]int64{"kernel_shape": {3, 3}, "pads": {1, 1, 1, 1}}},
			{Name: "relu", Op: "Relu", Inputs: []string{"a"}, Outputs: []string{"b"}},
			{Name: "conv2", Op: "Conv", Inputs: []string{"b"}, Outputs: []string{"c"}, Attrs: map[string][]int64{"kernel_shape": {1, 1}}},
			{Name: "add", Op: "Add", Inputs: []string{"a", "c"}, Outputs: []string{"y"}},
		},
	}
}

func TestCutBytes(t *testing.T) {
	g := skipGraph()
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	fm := int64(4 * 8 * 8 * 2) // one 4x8x8 feature map in fp16
	tests := []struct {
		pos  int
		want int64
	}{
		{0, 3 * 8 * 8 * 2}, // the input
		{1, fm},            // a
		{2, 2 * fm},        // a (skip) + b
		{3, 2 * fm},        // a (skip) + c
		{4, fm},            // y, a graph output
	}
	for _, tc := range tests {
		got, err := CutBytes(g, []int{tc.pos})
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != tc.want {
			t.Errorf("cut %d: got %d bytes, want %d", tc.pos, got[0], tc.want)
		}
	}
	if _, err := CutBytes(g, []int{5}); err == nil {
		t.Error("cut 5 of a 4-node graph: want an error")
	}
}

func TestTransferElemSize(t *testing.T) {
	g := &Graph{
		Tensors: map[string]Tensor{
			"ids": {Name: "ids", Shape: []int64{128}, DType: "int64"},
			"h":   {Name: "h", Shape: []int64{128, 16}, DType: "float32"},
			"w":   {Name: "w", Shape: []int64{16, 16}, DType: "float32", Const: true},
		},
		Inputs:  []string{"ids"},
		Outputs: []string{"o"},
		Nodes: []Node{
			{Name: "emb", Op: "Gather", Inputs: []string{"ids"}, Outputs: []string{"h"}, Attrs: map[string][]int64{"vocab_size": {100}}},
			{Name: "mm", Op: "MatMul", Inputs: []string{"h", "w", "ids"}, Outputs: []string{"o"}},
		},
	}
	g.Tensors["o"] = Tensor{Name: "o", Shape: []int64{128, 16}, DType: "float32"}
	got, _ := CutBytes(g, []int{1})
	// ids (int64 → 4 B) + h (fp32 → 2 B); the const weight w never crosses.
	if want := int64(128*4 + 128*16*2); got[0] != want {
		t.Errorf("got %d, want %d", got[0], want)
	}
}

func TestAnnotateHandComputed(t *testing.T) {
	f := func(name string, s ...int64) Tensor { return Tensor{Name: name, Shape: s, DType: "float32"} }
	tests := []struct {
		name       string
		node       Node
		in, out    Tensor
		wantFLOPs  float64
		wantParams int64
	}{
		{"conv3x3", Node{Op: "Conv", Attrs: map[string][]int64{"kernel_shape": {3, 3}}}, f("i", 64, 56, 56), f("o", 128, 28, 28),
			2 * 3 * 3 * 64 * 128 * 28 * 28, (3*3*64*128 + 128) * 4},
		{"depthwise", Node{Op: "Conv", Attrs: map[string][]int64{"kernel_shape": {5, 5}, "group": {32}}}, f("i", 32, 20, 20), f("o", 32, 20, 20),
			2 * 5 * 5 * 32 * 20 * 20, (5*5*32 + 32) * 4},
		{"grouped", Node{Op: "Conv", Attrs: map[string][]int64{"kernel_shape": {3, 3}, "group": {4}}}, f("i", 64, 10, 10), f("o", 128, 10, 10),
			2 * 9 * 16 * 128 * 100, (9*16*128 + 128) * 4},
		{"gemm", Node{Op: "Gemm", Attrs: map[string][]int64{"transB": {1}}}, f("i", 2048), f("o", 1000),
			2 * 2048 * 1000, (2048*1000 + 1000) * 4},
		{"matmul-linear", Node{Op: "MatMul"}, f("i", 128, 768), f("o", 128, 3072),
			2 * 128 * 768 * 3072, 768 * 3072 * 4},
		{"maxpool", Node{Op: "MaxPool", Attrs: map[string][]int64{"kernel_shape": {3, 3}, "strides": {2, 2}}}, f("i", 64, 112, 112), f("o", 64, 56, 56),
			9 * 64 * 56 * 56, 0},
		{"gap", Node{Op: "GlobalAveragePool"}, f("i", 2048, 7, 7), f("o", 2048, 1, 1), 2048 * 49, 0},
		{"relu", Node{Op: "Relu"}, f("i", 10, 10), f("o", 10, 10), 100, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.node
			n.Name, n.Inputs, n.Outputs = tc.name, []string{"i"}, []string{"o"}
			g := &Graph{Name: tc.name, Nodes: []Node{n}, Tensors: map[string]Tensor{"i": tc.in, "o": tc.out}, Inputs: []string{"i"}, Outputs: []string{"o"}}
			if err := Annotate(g); err != nil {
				t.Fatal(err)
			}
			got := g.Nodes[0]
			if got.FLOPs != tc.wantFLOPs {
				t.Errorf("FLOPs = %v, want %v", got.FLOPs, tc.wantFLOPs)
			}
			if got.ParamBytes != tc.wantParams {
				t.Errorf("ParamBytes = %v, want %v", got.ParamBytes, tc.wantParams)
			}
			if want := float64(tc.in.Bytes() + tc.out.Bytes()); got.ActBytes != want {
				t.Errorf("ActBytes = %v, want %v", got.ActBytes, want)
			}
		})
	}
}

func TestAttentionMatMul(t *testing.T) {
	// Q·Kᵀ with 12 heads, seq 128, head dim 64: both operands are activations.
	f := func(name string, s ...int64) Tensor { return Tensor{Name: name, Shape: s, DType: "float32"} }
	g := &Graph{
		Name:    "attn",
		Tensors: map[string]Tensor{"q": f("q", 12, 128, 64), "k": f("k", 12, 64, 128), "s": f("s", 12, 128, 128)},
		Inputs:  []string{"q", "k"}, Outputs: []string{"s"},
		Nodes: []Node{{Name: "qk", Op: "MatMul", Inputs: []string{"q", "k"}, Outputs: []string{"s"}}},
	}
	if err := Annotate(g); err != nil {
		t.Fatal(err)
	}
	if want := float64(2 * 12 * 128 * 128 * 64); g.Nodes[0].FLOPs != want {
		t.Errorf("FLOPs = %v, want %v", g.Nodes[0].FLOPs, want)
	}
	if g.Nodes[0].ParamBytes != 0 {
		t.Errorf("ParamBytes = %d, want 0", g.Nodes[0].ParamBytes)
	}
}

func TestValidate(t *testing.T) {
	g := skipGraph()
	g.Nodes[0], g.Nodes[1] = g.Nodes[1], g.Nodes[0]
	err := g.Validate()
	if err == nil || !strings.Contains(err.Error(), "topological") {
		t.Fatalf("swapped nodes: got %v, want a topological-order error", err)
	}
	if err := g.Toposort(); err != nil {
		t.Fatal(err)
	}
	if g.Nodes[0].Name != "conv1" {
		t.Fatalf("after Toposort first node = %s", g.Nodes[0].Name)
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := skipGraph()
	bad.Tensors["b"] = Tensor{Name: "b", Shape: []int64{4, -1, 8}, DType: "float32"}
	bad.Nodes[3].Outputs = []string{"a"}
	err = bad.Validate()
	for _, want := range []string{"must be known", "already produced", "produced by no node"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
	cyc := skipGraph()
	cyc.Nodes[0].Inputs = []string{"y"}
	if err := cyc.Toposort(); err == nil {
		t.Error("cycle: want an error")
	}
}
