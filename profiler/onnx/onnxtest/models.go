// Package onnxtest builds the small IR graphs the profiler's tests turn into ONNX models with
// onnx.Build: an MLP and a CNN with a skip connection and a depthwise-separable block. The
// sizes are parameters so timing tests can make the compute dominate session overhead.
package onnxtest

import (
	"fmt"

	"github.com/plan-dev/plan/profiler/graph"
)

type builder struct {
	g *graph.Graph
	n int
}

func newBuilder(name string, input []int64) *builder {
	g := &graph.Graph{Name: name, Tensors: map[string]graph.Tensor{}, Inputs: []string{"input"}}
	g.Tensors["input"] = graph.Tensor{Name: "input", Shape: input, DType: "float32"}
	return &builder{g: g}
}

func (b *builder) add(op string, inputs []string, shape []int64, attrs map[string][]int64) string {
	b.n++
	name := fmt.Sprintf("%s_%d", op, b.n)
	out := name + ".out"
	b.g.Tensors[out] = graph.Tensor{Name: out, Shape: shape, DType: "float32"}
	b.g.Nodes = append(b.g.Nodes, graph.Node{Name: name, Op: op, Inputs: inputs, Outputs: []string{out}, Attrs: attrs})
	return out
}

func (b *builder) shape(t string) []int64 { return b.g.Tensors[t].Shape }

// conv is a k×k convolution with padding k/2.
func (b *builder) conv(x string, cout, k, stride, group int64) string {
	in := b.shape(x)
	p := k / 2
	h := (in[1]+2*p-k)/stride + 1
	w := (in[2]+2*p-k)/stride + 1
	return b.add("Conv", []string{x}, []int64{cout, h, w}, map[string][]int64{
		"kernel_shape": {k, k}, "strides": {stride, stride}, "pads": {p, p, p, p}, "group": {group},
	})
}

func (b *builder) unary(op, x string) string { return b.add(op, []string{x}, b.shape(x), nil) }

func (b *builder) finish(out string) *graph.Graph {
	b.g.Outputs = []string{out}
	if err := b.g.Validate(); err != nil {
		panic(err) // a bug in this package, not in the code under test
	}
	if err := graph.Annotate(b.g); err != nil {
		panic(err)
	}
	return b.g
}

// MLP is input [in] → Gemm(hidden) → Relu → MatMul(hidden) → Add(bias) → Relu → Gemm(out) →
// Softmax.
func MLP(in, hidden, out int64) *graph.Graph {
	b := newBuilder("mlp", []int64{in})
	x := b.add("Gemm", []string{"input"}, []int64{hidden}, map[string][]int64{"transB": {1}})
	x = b.unary("Relu", x)
	x = b.add("MatMul", []string{x}, []int64{hidden}, nil)
	// The bias is listed as a Const tensor: the IR's way to name a weight explicitly.
	b.g.Tensors["mlp.bias"] = graph.Tensor{Name: "mlp.bias", Shape: []int64{hidden}, DType: "float32", Const: true}
	x = b.add("Add", []string{x, "mlp.bias"}, []int64{hidden}, nil)
	x = b.unary("Relu", x)
	x = b.add("Gemm", []string{x}, []int64{out}, map[string][]int64{"transB": {1}})
	x = b.add("Softmax", []string{x}, []int64{out}, map[string][]int64{"axis": {-1}})
	return b.finish(x)
}

// CNN is a small image classifier on [3, res, res]: a stem (Conv-BN-Relu), a residual block
// whose skip connection crosses three nodes, a depthwise-separable block (depthwise Conv,
// Relu, pointwise Conv, Relu) and a 3×3 Conv at half resolution, a squeeze-excitation gate (GlobalAveragePool, Conv,
// Sigmoid, Mul), a concat of two pooled branches, and a Gemm head.
func CNN(width, res int64) *graph.Graph {
	b := newBuilder("cnn", []int64{3, res, res})
	x := b.conv("input", width, 3, 1, 1)
	x = b.unary("BatchNormalization", x)
	stem := b.unary("Relu", x)
	y := b.conv(stem, width, 3, 1, 1)
	y = b.unary("Relu", y)
	y = b.conv(y, width, 3, 1, 1)
	x = b.add("Add", []string{y, stem}, b.shape(stem), nil)
	x = b.unary("Relu", x)
	// Depthwise-separable block.
	x = b.conv(x, width, 3, 2, width)
	x = b.unary("Relu", x)
	x = b.conv(x, 2*width, 1, 1, 1)
	x = b.unary("Relu", x)
	x = b.conv(x, 2*width, 3, 1, 1)
	x = b.unary("Relu", x)
	// Squeeze-excitation gate.
	s := b.add("GlobalAveragePool", []string{x}, []int64{2 * width, 1, 1}, nil)
	s = b.conv(s, 2*width, 1, 1, 1)
	s = b.unary("Sigmoid", s)
	x = b.add("Mul", []string{x, s}, b.shape(x), nil)
	in := b.shape(x)
	pool := func(op string) string {
		return b.add(op, []string{x}, []int64{in[0], in[1] / 2, in[2] / 2},
			map[string][]int64{"kernel_shape": {2, 2}, "strides": {2, 2}, "pads": {0, 0, 0, 0}})
	}
	p1, p2 := pool("MaxPool"), pool("AveragePool")
	x = b.add("Concat", []string{p1, p2}, []int64{2 * in[0], in[1] / 2, in[2] / 2}, map[string][]int64{"axis": {1}})
	x = b.add("GlobalAveragePool", []string{x}, []int64{2 * in[0], 1, 1}, nil)
	x = b.add("Flatten", []string{x}, []int64{2 * in[0]}, map[string][]int64{"axis": {1}})
	x = b.add("Gemm", []string{x}, []int64{10}, map[string][]int64{"transB": {1}})
	x = b.add("Softmax", []string{x}, []int64{10}, map[string][]int64{"axis": {-1}})
	return b.finish(x)
}

// Transformer is a one-layer BERT-style encoder on token ids [seq]: embedding lookup
// (Gather with the IR's vocab_size attribute), layer norm, multi-head self-attention
// (Reshape/Transpose/MatMul/Softmax), residual adds and a GELU feed-forward block.
func Transformer(vocab, hidden, heads, seq int64) *graph.Graph {
	b := &builder{g: &graph.Graph{Name: "transformer", Tensors: map[string]graph.Tensor{}, Inputs: []string{"ids"}}}
	b.g.Tensors["ids"] = graph.Tensor{Name: "ids", Shape: []int64{seq}, DType: "int64"}
	x := b.add("Gather", []string{"ids"}, []int64{seq, hidden}, map[string][]int64{"axis": {0}, "vocab_size": {vocab}})
	ln := func(t string) string {
		return b.add("LayerNormalization", []string{t}, b.shape(t), map[string][]int64{"axis": {-1}})
	}
	linear := func(t string, n int64) string {
		s := append([]int64(nil), b.shape(t)...)
		s[len(s)-1] = n
		return b.add("MatMul", []string{t}, s, nil)
	}
	transpose := func(t string, perm ...int64) string {
		in := b.shape(t)
		s := make([]int64, len(perm))
		full := []int64{0}
		for i, p := range perm {
			s[i] = in[p]
			full = append(full, p+1)
		}
		return b.add("Transpose", []string{t}, s, map[string][]int64{"perm": full})
	}
	reshape := func(t string, shape ...int64) string {
		return b.add("Reshape", []string{t}, shape, map[string][]int64{"shape": append([]int64{0}, shape...)})
	}
	matmul := func(p, q string) string {
		s := append([]int64(nil), b.shape(p)...)
		qs := b.shape(q)
		s[len(s)-1] = qs[len(qs)-1]
		return b.add("MatMul", []string{p, q}, s, nil)
	}
	x = ln(x)
	dh := hidden / heads
	split := func(t string) string { return reshape(t, seq, heads, dh) }
	q := transpose(split(linear(x, hidden)), 1, 0, 2)
	k := transpose(split(linear(x, hidden)), 1, 2, 0)
	v := transpose(split(linear(x, hidden)), 1, 0, 2)
	s := b.add("Softmax", []string{matmul(q, k)}, []int64{heads, seq, seq}, map[string][]int64{"axis": {-1}})
	c := reshape(transpose(matmul(s, v), 1, 0, 2), seq, hidden)
	x = ln(b.add("Add", []string{linear(c, hidden), x}, []int64{seq, hidden}, nil))
	f := b.unary("Gelu", linear(x, 4*hidden))
	x = ln(b.add("Add", []string{linear(f, hidden), x}, []int64{seq, hidden}, nil))
	return b.finish(x)
}
