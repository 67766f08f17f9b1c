package onnx

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/plan-dev/plan/profiler/graph"
)

// batchParam names the dynamic batch dimension in every model the writer produces.
const batchParam = "N"

// irVersion 8 goes with opsets up to 18, 9 up to 20 (onnx/docs/Versioning.md).
func irFor(opset int64) int64 {
	if opset > 18 {
		return 9
	}
	return 8
}

// scalarAttrs are ONNX attributes of type INT; every other integer attribute is INTS.
var scalarAttrs = map[string]bool{
	"group": true, "axis": true, "transA": true, "transB": true, "keepdims": true,
	"ceil_mode": true, "count_include_pad": true, "storage_order": true, "to": true,
	"allowzero": true, "noop_with_empty_axes": true, "select_last_index": true,
}

// helperAttrs are IR-only attributes (see package graph) that become inputs, not attributes.
// Besides those package graph lists, Resize "nearest" = [1] selects nearest-neighbour
// interpolation (the writer's default is linear, which the zoo's upsampling layers use).
var helperAttrs = map[string]bool{"vocab_size": true, "scales": true, "shape": true, "nearest": true}

// Build materializes an IR graph as a runnable ONNX model: every node becomes the ONNX
// operator of the same name, weights the op implies (graph.WeightShapes) or that the graph
// lists as Const tensors become initializers with seeded random values, and every graph input
// and output gets a dynamic batch dimension "N" in front of its per-sample shape. The same
// graph and seed always give the same bytes.
func Build(g *graph.Graph, seed int64) ([]byte, error) { return build(g, seed, false) }

// build is Build; skeleton leaves the float weights without data, which keeps every shape
// (for tests that check the structure of models too big to materialize, e.g. BERT-large).
func build(g *graph.Graph, seed int64, skeleton bool) ([]byte, error) {
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("build %q: %w", g.Name, err)
	}
	b := &builder{g: g, rng: rand.New(rand.NewPCG(uint64(seed), 0x5eed0f0a11)), used: map[string]bool{}, emitted: map[string]bool{}, skeleton: skeleton}
	for name := range g.Tensors {
		b.used[name] = true
	}
	for _, n := range g.Nodes {
		b.used[n.Name] = true
		if n.Op == "Gelu" {
			b.opset = max(b.opset, 20)
		}
	}
	b.opset = max(b.opset, 17)
	var nodes [][]byte
	for i := range g.Nodes {
		enc, err := b.node(&g.Nodes[i])
		if err != nil {
			return nil, fmt.Errorf("build %q: node %q (%s): %w", g.Name, g.Nodes[i].Name, g.Nodes[i].Op, err)
		}
		nodes = append(nodes, enc)
	}
	name := g.Name
	if name == "" {
		name = "graph"
	}
	// The graph's fields, encoded once: the weights dominate the size, so the model is
	// assembled with a single copy of each instead of nesting buffers.
	var parts [][]byte
	field := func(num protowire.Number, v []byte) {
		parts = append(parts, protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.BytesType), uint64(len(v))), v)
	}
	for _, n := range nodes {
		field(fGraphNode, n)
	}
	field(fGraphName, []byte(name))
	for _, t := range b.inits {
		field(fGraphInitializer, t)
	}
	io := func(name string) []byte {
		t := g.Tensors[name]
		dt, ok := dtypeByName(t.DType)
		if !ok {
			dt = Float
		}
		return valueInfo(name, dt, t.Shape)
	}
	for _, in := range g.Inputs {
		field(fGraphInput, io(in))
	}
	for _, out := range g.Outputs {
		field(fGraphOutput, io(out))
	}
	graphLen := 0
	for _, p := range parts {
		graphLen += len(p)
	}
	out := modelHeader(irFor(b.opset), map[string]int64{"": b.opset}, graphLen)
	out = slices.Grow(out, graphLen)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, nil
}

// modelHeader encodes a ModelProto's fields up to the length prefix of its graph; the
// graph's bytes follow. Field order does not matter to protobuf readers.
func modelHeader(ir int64, opsets map[string]int64, graphLen int) []byte {
	var out []byte
	out = putVarint(out, fModelIRVersion, ir)
	out = putString(out, fModelProducerName, "plan")
	doms := slices.Sorted(maps.Keys(opsets))
	for _, d := range doms {
		var op []byte
		if d != "" {
			op = putString(op, fOpsetDomain, d)
		}
		op = putVarint(op, fOpsetVersion, opsets[d])
		out = putBytes(out, fModelOpsetImport, op)
	}
	out = protowire.AppendTag(out, fModelGraph, protowire.BytesType)
	return protowire.AppendVarint(out, uint64(graphLen))
}

// model wraps an encoded GraphProto into a ModelProto.
func model(ir int64, opsets map[string]int64, graphBytes []byte) []byte {
	out := modelHeader(ir, opsets, len(graphBytes))
	return append(slices.Grow(out, len(graphBytes)), graphBytes...)
}

// valueInfo encodes a tensor declaration with a dynamic batch in front of shape.
func valueInfo(name string, dt DataType, shape []int64) []byte {
	dims := []Dim{{Param: batchParam}}
	for _, d := range shape {
		dims = append(dims, Dim{Value: d})
	}
	return encodeValueInfo(name, dt, dims)
}

func encodeValueInfo(name string, dt DataType, dims []Dim) []byte {
	var sh []byte
	for _, d := range dims {
		var dm []byte
		if d.Known() {
			dm = putVarint(dm, fDimValue, d.Value)
		} else {
			dm = putString(dm, fDimParam, d.Param)
		}
		sh = putBytes(sh, fShapeDim, dm)
	}
	var tt []byte
	tt = putVarint(tt, fTensorTypeElem, int64(dt))
	tt = putBytes(tt, fTensorTypeShape, sh)
	var ty []byte
	ty = putBytes(ty, fTypeTensor, tt)
	var vi []byte
	vi = putString(vi, fValueInfoName, name)
	vi = putBytes(vi, fValueInfoType, ty)
	return vi
}

// tensorProto encodes an initializer with raw little-endian data.
func tensorProto(name string, dt DataType, dims []int64, raw []byte) []byte {
	return append(tensorHeader(name, dt, dims, len(raw)), raw...)
}

// tensorHeader encodes a TensorProto up to the length prefix of rawLen bytes of raw data,
// with capacity for the data.
func tensorHeader(name string, dt DataType, dims []int64, rawLen int) []byte {
	t := make([]byte, 0, rawLen+len(name)+32+11*len(dims))
	for _, d := range dims {
		t = putVarint(t, fTensorDims, d)
	}
	t = putVarint(t, fTensorDataType, int64(dt))
	t = putString(t, fTensorName, name)
	t = protowire.AppendTag(t, fTensorRawData, protowire.BytesType)
	return protowire.AppendVarint(t, uint64(rawLen))
}

type builder struct {
	g     *graph.Graph
	rng   *rand.Rand
	inits [][]byte
	used  map[string]bool
	opset int64
	// emitted marks Const tensors already written (several nodes may read one).
	emitted map[string]bool
	// skeleton writes float weights without data.
	skeleton bool
}

func (b *builder) fresh(base string) string {
	name := base
	for k := 1; b.used[name]; k++ {
		name = fmt.Sprintf("%s_%d", base, k)
	}
	b.used[name] = true
	return name
}

// floats adds a float initializer whose values are mean + std·U where U is uniform with unit
// variance (|U| when abs). Uniform rather than normal (PyTorch's default initialization is
// Kaiming-uniform too) because the values do not matter for timing, and a multiply-shift
// generator keeps a 100 MB model fast to build.
func (b *builder) floats(base string, dims []int64, mean, std float64, abs bool) string {
	name := b.fresh(base)
	n := graph.Elements(dims)
	if b.skeleton {
		n = 0
	}
	// Encode the TensorProto header, then generate the data in place (no copy of the data).
	t := tensorHeader(name, Float, dims, int(4*n))
	off := len(t)
	t = t[:off+int(4*n)]
	raw := t[off:]
	// Uniform on [-√3, √3) has unit variance.
	scale := float32(std * math.Sqrt(3) / (1 << 31))
	m := float32(mean)
	state := b.rng.Uint64() | 1
	for i := int64(0); i < n; i++ {
		// xorshift64*: cheap, and seeded from the builder's seeded PCG.
		state ^= state >> 12
		state ^= state << 25
		state ^= state >> 27
		r := int32((state * 0x2545F4914F6CDD1D) >> 32)
		v := float32(r) * scale
		if abs && v < 0 {
			v = -v
		}
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(m+v))
	}
	b.inits = append(b.inits, t)
	return name
}

func (b *builder) int64s(base string, vals []int64) string {
	name := b.fresh(base)
	raw := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(v))
	}
	b.inits = append(b.inits, tensorProto(name, Int64, []int64{int64(len(vals))}, raw))
	return name
}

func (b *builder) scalar(base string, v float32) string {
	name := b.fresh(base)
	raw := make([]byte, 4)
	binary.LittleEndian.PutUint32(raw, math.Float32bits(v))
	b.inits = append(b.inits, tensorProto(name, Float, nil, raw))
	return name
}

// weight initializes a weight with a scale that keeps activations O(1) through deep stacks
// (He initialization): exploding or denormal values would distort CPU timings.
func (b *builder) weight(base string, dims []int64, fanIn int64) string {
	return b.floats(base, dims, 0, math.Sqrt(2/float64(max(fanIn, 1))), false)
}

// constInput materializes a Const tensor the graph lists as an input.
func (b *builder) constInput(n *graph.Node, t graph.Tensor) (string, error) {
	dt, ok := dtypeByName(t.DType)
	if !ok {
		return "", fmt.Errorf("constant %q: unsupported dtype %q", t.Name, t.DType)
	}
	if b.emitted[t.Name] {
		return t.Name, nil
	}
	b.emitted[t.Name] = true
	b.used[t.Name] = true
	switch dt {
	case Float:
		fan := int64(1)
		if len(t.Shape) > 1 {
			fan = graph.Elements(t.Shape[1:])
		}
		name := b.weight(t.Name+"#", t.Shape, fan)
		// Keep the graph's name: rename the freshly encoded tensor.
		last := len(b.inits) - 1
		b.inits[last] = renameTensor(b.inits[last], t.Name)
		delete(b.used, name)
		return t.Name, nil
	case Int64, Int32:
		vals := make([]int64, graph.Elements(t.Shape))
		if n.Op == "Reshape" && len(vals) == len(n.Attrs["shape"]) {
			copy(vals, n.Attrs["shape"])
		}
		size := dt.Size()
		raw := make([]byte, size*int64(len(vals)))
		for i, v := range vals {
			if size == 8 {
				binary.LittleEndian.PutUint64(raw[8*i:], uint64(v))
			} else {
				binary.LittleEndian.PutUint32(raw[4*i:], uint32(v))
			}
		}
		b.inits = append(b.inits, tensorProto(t.Name, dt, t.Shape, raw))
		return t.Name, nil
	}
	return "", fmt.Errorf("constant %q: cannot generate %s data", t.Name, t.DType)
}

func (b *builder) node(n *graph.Node) ([]byte, error) {
	var acts, consts []string
	resize := n.Op == "Resize" || n.Op == "Upsample"
	for i, in := range n.Inputs {
		if resize && i > 0 {
			// roi, scales and sizes (constants or computed) are rewritten from the shapes.
			continue
		}
		t := b.g.Tensors[in]
		if t.Const {
			name, err := b.constInput(n, t)
			if err != nil {
				return nil, err
			}
			consts = append(consts, name)
		} else {
			acts = append(acts, in)
		}
	}
	if len(n.Outputs) == 0 {
		return nil, fmt.Errorf("no outputs")
	}
	out := b.g.Tensors[n.Outputs[0]]
	inputs := append([]string{}, acts...)
	attrs := map[string][]int64{}
	for k, v := range n.Attrs {
		if !helperAttrs[k] {
			attrs[k] = v
		}
	}
	var strAttrs [][2]string
	if len(consts) > 0 {
		// The graph names its weights (it came from an ONNX file): keep ONNX's input order.
		inputs = append(inputs[:0], n.Inputs...)
	} else {
		var err error
		inputs, err = b.implied(n, acts, out, attrs, &strAttrs)
		if err != nil {
			return nil, err
		}
	}
	// Opset 13 moved Squeeze/Unsqueeze/ReduceSum axes, opset 18 the other reductions', to inputs.
	if axes, ok := attrs["axes"]; ok {
		moved := n.Op == "Squeeze" || n.Op == "Unsqueeze" || n.Op == "ReduceSum" ||
			(b.opset >= 18 && len(n.Op) > 6 && n.Op[:6] == "Reduce")
		if moved {
			delete(attrs, "axes")
			inputs = append(inputs, b.int64s(n.Name+".axes", axes))
		}
	}
	var enc []byte
	for _, in := range inputs {
		enc = putString(enc, fNodeInput, in)
	}
	for _, o := range n.Outputs {
		enc = putString(enc, fNodeOutput, o)
	}
	enc = putString(enc, fNodeName, n.Name)
	op := n.Op
	if op == "Upsample" {
		op = "Resize" // Upsample left the opset in version 10
	}
	enc = putString(enc, fNodeOpType, op)
	keys := slices.Sorted(maps.Keys(attrs))
	for _, k := range keys {
		var a []byte
		a = putString(a, fAttrName, k)
		if scalarAttrs[k] && len(attrs[k]) == 1 {
			a = putVarint(a, fAttrType, int64(AttrInt))
			a = putVarint(a, fAttrI, attrs[k][0])
		} else {
			a = putVarint(a, fAttrType, int64(AttrInts))
			for _, v := range attrs[k] {
				a = putVarint(a, fAttrInts, v)
			}
		}
		enc = putBytes(enc, fNodeAttribute, a)
	}
	for _, sa := range strAttrs {
		var a []byte
		a = putString(a, fAttrName, sa[0])
		a = putVarint(a, fAttrType, int64(AttrString))
		a = putString(a, fAttrS, sa[1])
		enc = putBytes(enc, fNodeAttribute, a)
	}
	return enc, nil
}

// implied returns the ONNX inputs of a node whose graph lists only activations, creating the
// weights and constant operands the op needs.
func (b *builder) implied(n *graph.Node, acts []string, out graph.Tensor, attrs map[string][]int64, strAttrs *[][2]string) ([]string, error) {
	ws, err := graph.WeightShapes(b.g, n)
	if err != nil {
		return nil, err
	}
	first := func() graph.Tensor {
		if len(acts) == 0 {
			return graph.Tensor{}
		}
		return b.g.Tensors[acts[0]]
	}
	in := append([]string{}, acts...)
	switch n.Op {
	case "Conv", "ConvTranspose":
		if len(ws) != 2 || len(acts) != 1 {
			return nil, fmt.Errorf("needs one activation input")
		}
		fan := graph.Elements(ws[0][1:])
		if _, ok := attrs["kernel_shape"]; !ok {
			attrs["kernel_shape"] = ws[0][2:]
		}
		return append(in, b.weight(n.Name+".weight", ws[0], fan), b.floats(n.Name+".bias", ws[1], 0, 0.01, false)), nil
	case "Gemm":
		if len(acts) != 1 || len(ws) != 2 {
			return nil, fmt.Errorf("needs one activation input")
		}
		if len(first().Shape) != 1 {
			return nil, fmt.Errorf("input %q: per-sample shape %v must have rank 1 (the batched input is [N, K])", acts[0], first().Shape)
		}
		k := ws[0][1]
		if attrs["transB"] == nil || attrs["transB"][0] == 0 {
			k = ws[0][0]
		}
		return append(in, b.weight(n.Name+".weight", ws[0], k), b.floats(n.Name+".bias", ws[1], 0, 0.01, false)), nil
	case "MatMul":
		if len(acts) == 1 {
			return append(in, b.weight(n.Name+".weight", ws[0], ws[0][0])), nil
		}
	case "BatchNormalization":
		c := ws[0]
		return append(in,
			b.floats(n.Name+".scale", c, 1, 0.1, false),
			b.floats(n.Name+".bias", c, 0, 0.1, false),
			b.floats(n.Name+".mean", c, 0, 0.1, false),
			b.floats(n.Name+".var", c, 1, 0.1, true)), nil
	case "LayerNormalization":
		return append(in, b.floats(n.Name+".scale", ws[0], 1, 0, false), b.floats(n.Name+".bias", ws[1], 0, 0, false)), nil
	case "Gather":
		if len(ws) == 1 {
			// The table is the data input; the activation holds the indices.
			return append([]string{b.floats(n.Name+".table", ws[0], 0, 0.02, false)}, acts...), nil
		}
	case "PRelu":
		return append(in, b.floats(n.Name+".slope", ws[0], 0.25, 0, false)), nil
	case "Reshape":
		shape, ok := n.Attrs["shape"]
		if !ok {
			// The IR's reshape target is the output's per-sample shape behind the batch.
			shape = append([]int64{0}, out.Shape...)
		}
		return append(in, b.int64s(n.Name+".shape", shape)), nil
	case "Resize", "Upsample":
		if len(acts) != 1 {
			return nil, fmt.Errorf("needs one activation input")
		}
		scales, err := resizeScales(n, first().Shape, out.Shape)
		if err != nil {
			return nil, err
		}
		name := b.fresh(n.Name + ".scales")
		raw := make([]byte, 4*len(scales))
		for i, s := range scales {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(s))
		}
		b.inits = append(b.inits, tensorProto(name, Float, []int64{int64(len(scales))}, raw))
		delete(attrs, "axes")
		mode := "linear"
		if n.AttrInt("nearest", 0) == 1 {
			mode = "nearest"
		}
		*strAttrs = append(*strAttrs, [2]string{"mode", mode})
		return append(in, "", name), nil
	case "Clip":
		// Without bounds Clip is the identity; the IR has no float attributes, so use ReLU6,
		// the clip CNNs use.
		return append(in, b.scalar(n.Name+".min", 0), b.scalar(n.Name+".max", 6)), nil
	case "Add", "Sub", "Mul", "Div":
		if len(acts) == 1 {
			// A bias or scale: a learned operand of the output's per-sample shape.
			return append(in, b.floats(n.Name+".operand", out.Shape, 0, 0.1, false)), nil
		}
	}
	return in, nil
}

// resizeScales returns the float scales of a Resize over the batched axes: the integer
// factors of the "scales" attribute, or else output/input per axis, nudged so that ONNX
// Runtime's floor(input · scale) in float32 gives the output size exactly.
func resizeScales(n *graph.Node, in, out []int64) ([]float32, error) {
	if f := n.Attrs["scales"]; f != nil {
		if len(f) != len(in)+1 {
			return nil, fmt.Errorf("scales %v do not fit the per-sample input %v", f, in)
		}
		s := make([]float32, len(f))
		for i, v := range f {
			s[i] = float32(v)
		}
		return s, nil
	}
	if len(in) != len(out) {
		return nil, fmt.Errorf("input %v and output %v differ in rank", in, out)
	}
	s := []float32{1}
	for i, d := range in {
		if d <= 0 || out[i] <= 0 {
			return nil, fmt.Errorf("input %v or output %v has an empty axis", in, out)
		}
		v := float32(float64(out[i]) / float64(d))
		for k := 0; k < 4 && int64(v*float32(d)) < out[i]; k++ {
			v = math.Nextafter32(v, float32(math.Inf(1)))
		}
		if int64(v*float32(d)) != out[i] {
			return nil, fmt.Errorf("no float32 scale resizes %d to %d", d, out[i])
		}
		s = append(s, v)
	}
	return s, nil
}
