package zoo

import (
	"fmt"

	"github.com/plan-dev/plan/profiler/graph"
)

// builder appends nodes to a graph, inferring every output shape from the op's attributes so
// that architectures read like their published definitions.
type builder struct {
	g      *graph.Graph
	prefix string
	count  map[string]int
}

func newBuilder(name string, inputShape ...int64) (*builder, string) {
	b := &builder{
		g:     &graph.Graph{Name: name, Tensors: map[string]graph.Tensor{}},
		count: map[string]int{},
	}
	b.g.Tensors["input"] = graph.Tensor{Name: "input", Shape: inputShape, DType: "float32"}
	b.g.Inputs = []string{"input"}
	return b, "input"
}

// scope sets the name prefix of the nodes that follow (e.g. "layer3.4").
func (b *builder) scope(p string) { b.prefix = p }

func (b *builder) shape(t string) []int64 { return b.g.Tensors[t].Shape }

// node appends a node with one output of the given shape and returns the output's name.
func (b *builder) node(op string, inputs []string, shape []int64, attrs map[string][]int64) string {
	base := op
	if b.prefix != "" {
		base = b.prefix + "." + op
	}
	b.count[base]++
	name := base
	if c := b.count[base]; c > 1 {
		name = fmt.Sprintf("%s_%d", base, c)
	}
	out := name + ":0"
	b.g.Tensors[out] = graph.Tensor{Name: out, Shape: append([]int64(nil), shape...), DType: "float32"}
	b.g.Nodes = append(b.g.Nodes, graph.Node{Name: name, Op: op, Inputs: inputs, Outputs: []string{out}, Attrs: attrs})
	return out
}

type convOpt struct {
	kh, kw     int64
	sh, sw     int64
	ph, pw     int64 // symmetric pads
	group      int64
	dilation   int64
	explicitPd bool
}

// conv is a square k×k convolution with "same"-style padding (k/2·dilation).
func (b *builder) conv(x string, cout, k, stride int64) string {
	return b.convx(x, cout, convOpt{kh: k, kw: k, sh: stride, sw: stride, group: 1, dilation: 1})
}

// convp is a square convolution with explicit padding.
func (b *builder) convp(x string, cout, k, stride, pad int64) string {
	return b.convx(x, cout, convOpt{kh: k, kw: k, sh: stride, sw: stride, ph: pad, pw: pad, group: 1, dilation: 1, explicitPd: true})
}

// dwconv is a depthwise k×k convolution.
func (b *builder) dwconv(x string, k, stride int64) string {
	c := b.shape(x)[0]
	return b.convx(x, c, convOpt{kh: k, kw: k, sh: stride, sw: stride, group: c, dilation: 1})
}

// dconv is a dilated k×k convolution (stride 1, padding keeps the size).
func (b *builder) dconv(x string, cout, k, dilation int64) string {
	return b.convx(x, cout, convOpt{kh: k, kw: k, sh: 1, sw: 1, group: 1, dilation: dilation})
}

// convAsym is a kh×kw convolution with stride 1 and "same" padding (Inception's 1×7 / 7×1).
func (b *builder) convAsym(x string, cout, kh, kw int64) string {
	return b.convx(x, cout, convOpt{kh: kh, kw: kw, sh: 1, sw: 1, group: 1, dilation: 1})
}

func (b *builder) convx(x string, cout int64, o convOpt) string {
	in := b.shape(x)
	if o.group == 0 {
		o.group = 1
	}
	if o.dilation == 0 {
		o.dilation = 1
	}
	if !o.explicitPd {
		o.ph, o.pw = (o.kh-1)/2*o.dilation, (o.kw-1)/2*o.dilation
	}
	h := (in[1]+2*o.ph-o.dilation*(o.kh-1)-1)/o.sh + 1
	w := (in[2]+2*o.pw-o.dilation*(o.kw-1)-1)/o.sw + 1
	attrs := map[string][]int64{
		"kernel_shape": {o.kh, o.kw},
		"strides":      {o.sh, o.sw},
		"pads":         {o.ph, o.pw, o.ph, o.pw},
		"dilations":    {o.dilation, o.dilation},
		"group":        {o.group},
	}
	return b.node("Conv", []string{x}, []int64{cout, h, w}, attrs)
}

func (b *builder) unary(op, x string) string { return b.node(op, []string{x}, b.shape(x), nil) }
func (b *builder) relu(x string) string      { return b.unary("Relu", x) }
func (b *builder) sigmoid(x string) string   { return b.unary("Sigmoid", x) }
func (b *builder) gelu(x string) string      { return b.unary("Gelu", x) }

// swish is x·sigmoid(x), written as two ONNX ops.
func (b *builder) swish(x string) string { return b.mul(x, b.sigmoid(x)) }

// binary ops broadcast; the output takes the larger operand's shape.
func (b *builder) binary(op, x, y string) string {
	s := b.shape(x)
	if graph.Elements(b.shape(y)) > graph.Elements(s) {
		s = b.shape(y)
	}
	return b.node(op, []string{x, y}, s, nil)
}
func (b *builder) add(x, y string) string { return b.binary("Add", x, y) }
func (b *builder) mul(x, y string) string { return b.binary("Mul", x, y) }

func (b *builder) pool(op, x string, k, stride, pad int64) string {
	in := b.shape(x)
	h := (in[1]+2*pad-k)/stride + 1
	w := (in[2]+2*pad-k)/stride + 1
	attrs := map[string][]int64{"kernel_shape": {k, k}, "strides": {stride, stride}, "pads": {pad, pad, pad, pad}}
	return b.node(op, []string{x}, []int64{in[0], h, w}, attrs)
}
func (b *builder) maxpool(x string, k, s, p int64) string { return b.pool("MaxPool", x, k, s, p) }
func (b *builder) avgpool(x string, k, s, p int64) string { return b.pool("AveragePool", x, k, s, p) }

func (b *builder) gap(x string) string {
	return b.node("GlobalAveragePool", []string{x}, []int64{b.shape(x)[0], 1, 1}, nil)
}

func (b *builder) flatten(x string) string {
	return b.node("Flatten", []string{x}, []int64{graph.Elements(b.shape(x))}, map[string][]int64{"axis": {1}})
}

// gemm is a fully connected layer on a [K] input with a [N, K] weight (transB = 1).
func (b *builder) gemm(x string, n int64) string {
	return b.node("Gemm", []string{x}, []int64{n}, map[string][]int64{"transB": {1}})
}

// linear is a MatMul against a [K, N] weight on the last axis.
func (b *builder) linear(x string, n int64) string {
	s := append([]int64(nil), b.shape(x)...)
	s[len(s)-1] = n
	return b.node("MatMul", []string{x}, s, nil)
}

// matmul multiplies two activations ([..., M, K] × [..., K, N]).
func (b *builder) matmul(x, y string) string {
	s := append([]int64(nil), b.shape(x)...)
	ys := b.shape(y)
	s[len(s)-1] = ys[len(ys)-1]
	return b.node("MatMul", []string{x, y}, s, nil)
}

// concat joins along the channel axis (axis 1 of the batched tensor).
func (b *builder) concat(xs ...string) string {
	s := append([]int64(nil), b.shape(xs[0])...)
	s[0] = 0
	for _, x := range xs {
		s[0] += b.shape(x)[0]
	}
	return b.node("Concat", xs, s, map[string][]int64{"axis": {1}})
}

// resize upsamples the spatial axes by an integer factor (bilinear).
func (b *builder) resize(x string, factor int64) string {
	in := b.shape(x)
	return b.node("Resize", []string{x}, []int64{in[0], in[1] * factor, in[2] * factor},
		map[string][]int64{"scales": {1, 1, factor, factor}})
}

// reshape to a per-sample shape (the attribute carries ONNX's shape input, 0 = batch).
func (b *builder) reshape(x string, shape ...int64) string {
	return b.node("Reshape", []string{x}, shape, map[string][]int64{"shape": append([]int64{0}, shape...)})
}

// transpose with a per-sample permutation (the attribute includes the batch axis).
func (b *builder) transpose(x string, perm ...int64) string {
	in := b.shape(x)
	s := make([]int64, len(perm))
	full := []int64{0}
	for i, p := range perm {
		s[i] = in[p]
		full = append(full, p+1)
	}
	return b.node("Transpose", []string{x}, s, map[string][]int64{"perm": full})
}

func (b *builder) softmax(x string) string {
	return b.node("Softmax", []string{x}, b.shape(x), map[string][]int64{"axis": {-1}})
}

func (b *builder) layernorm(x string) string {
	return b.node("LayerNormalization", []string{x}, b.shape(x), map[string][]int64{"axis": {-1}})
}

// finish marks the outputs, annotates costs and checks the result.
func (b *builder) finish(outputs ...string) (*graph.Graph, error) {
	b.g.Outputs = outputs
	if err := b.g.Validate(); err != nil {
		return nil, err
	}
	if err := graph.Annotate(b.g); err != nil {
		return nil, err
	}
	return b.g, nil
}

func (b *builder) sub(x, y string) string { return b.binary("Sub", x, y) }

// adaptiveAvgPool pools a [C, H, W] map to s×s the way ONNX can: stride ⌊H/s⌋ and a kernel
// that makes the last window end at the border (PyTorch's adaptive windows differ by at most
// one row or column).
func (b *builder) adaptiveAvgPool(x string, s int64) string {
	in := b.shape(x)
	sh, sw := in[1]/s, in[2]/s
	kh, kw := in[1]-(s-1)*sh, in[2]-(s-1)*sw
	attrs := map[string][]int64{"kernel_shape": {kh, kw}, "strides": {sh, sw}, "pads": {0, 0, 0, 0}}
	return b.node("AveragePool", []string{x}, []int64{in[0], s, s}, attrs)
}

// reduceMean averages over one per-sample axis, keeping it (size 1).
func (b *builder) reduceMean(x string, axis int64) string {
	s := append([]int64(nil), b.shape(x)...)
	s[axis] = 1
	return b.node("ReduceMean", []string{x}, s, map[string][]int64{"axes": {axis + 1}, "keepdims": {1}})
}

// flat2 reshapes a [C, H, W] map to [C, H·W].
func (b *builder) flat2(x string) string {
	s := b.shape(x)
	return b.reshape(x, s[0], s[1]*s[2])
}

// concatAt joins along a per-sample axis.
func (b *builder) concatAt(axis int64, xs ...string) string {
	s := append([]int64(nil), b.shape(xs[0])...)
	s[axis] = 0
	for _, x := range xs {
		s[axis] += b.shape(x)[axis]
	}
	return b.node("Concat", xs, s, map[string][]int64{"axis": {axis + 1}})
}

// upsample2 is nearest-neighbour ×2 upsampling of a [C, H, W] map written with Reshape and
// Concat (each pixel duplicated along W, then each row along H), which every ONNX consumer
// can shape-infer; it moves about twice the bytes of a Resize, a small share of any model.
func (b *builder) upsample2(x string) string {
	s := b.shape(x)
	c, h, w := s[0], s[1], s[2]
	y := b.reshape(x, c, h, w, 1)
	y = b.reshape(b.concatAt(3, y, y), c, h, 1, 2*w)
	return b.reshape(b.concatAt(2, y, y), c, 2*h, 2*w)
}

// deconv2 stands for a 4×4, stride-2, padding-1 transposed convolution (CenterNet's and the
// colorization network's upsampling) as ×2 nearest upsampling followed by a 2×2 convolution
// padded on the bottom and right: the same output size and the same FLOPs
// (2·4·Cin·Cout·4HW = 2·16·Cin·Cout·HW), in operators every ONNX consumer shape-infers. Its
// weights are a quarter of the deconvolution's (4·Cin·Cout instead of 16·Cin·Cout).
func (b *builder) deconv2(x string, cout int64) string {
	y := b.upsample2(x)
	in := b.shape(y)
	attrs := map[string][]int64{
		"kernel_shape": {2, 2}, "strides": {1, 1}, "pads": {0, 0, 1, 1}, "dilations": {1, 1}, "group": {1},
	}
	return b.node("Conv", []string{y}, []int64{cout, in[1], in[2]}, attrs)
}
