package graph

import "testing"

// TestDecoderCosts checks the costs of the decoder ops of detectors and segmenters:
// ConvTranspose (weights implied by the op, or listed as constants as the ONNX reader does),
// Resize and Upsample.
func TestDecoderCosts(t *testing.T) {
	f := func(name string, s ...int64) Tensor { return Tensor{Name: name, Shape: s, DType: "float32"} }
	g := &Graph{
		Name: "decoder",
		Tensors: map[string]Tensor{
			"x": f("x", 8, 8, 8), "d": f("d", 4, 16, 16), "u": f("u", 4, 32, 32), "v": f("v", 4, 64, 64),
			"e": f("e", 4, 16, 16),
			"w": {Name: "w", Shape: []int64{8, 2, 3, 3}, DType: "float32", Const: true},
			"s": {Name: "s", Shape: []int64{4}, DType: "float32", Const: true},
		},
		Inputs:  []string{"x"},
		Outputs: []string{"v", "e"},
		Nodes: []Node{
			// 4×4 stride-2 deconvolution, 8 → 4 channels, 8×8 → 16×16.
			{Name: "deconv", Op: "ConvTranspose", Inputs: []string{"x"}, Outputs: []string{"d"},
				Attrs: map[string][]int64{"kernel_shape": {4, 4}, "strides": {2, 2}, "pads": {1, 1, 1, 1}}},
			{Name: "up", Op: "Resize", Inputs: []string{"d", "s"}, Outputs: []string{"u"}, Attrs: map[string][]int64{"scales": {1, 1, 2, 2}}},
			{Name: "up2", Op: "Upsample", Inputs: []string{"u"}, Outputs: []string{"v"}},
			// Grouped, weight listed: W [Cin, Cout/group, k, k] = [8, 2, 3, 3], 2 groups.
			{Name: "deconv2", Op: "ConvTranspose", Inputs: []string{"x", "w"}, Outputs: []string{"e"},
				Attrs: map[string][]int64{"kernel_shape": {3, 3}, "strides": {2, 2}, "pads": {1, 1, 1, 1}, "output_padding": {1, 1}, "group": {2}}},
		},
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := Annotate(g); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		flops  float64
		params int64
		act    float64
	}{
		// Every input pixel scatters a Cout/group × k window: 2·16·8·4·64; W [8, 4, 4, 4] + B [4].
		{2 * 16 * 8 * 4 * 64, 4 * (8*4*4*4 + 4), 4 * (8*8*8 + 4*16*16)},
		// 4 operations per output element; the scales constant counts as a (tiny) weight.
		{4 * 4 * 32 * 32, 16, 4 * (4*16*16 + 4*32*32)},
		{4 * 4 * 64 * 64, 0, 4 * (4*32*32 + 4*64*64)},
		{2 * 9 * 8 * 2 * 64, 4 * 8 * 2 * 3 * 3, 4 * (8*8*8 + 4*16*16)},
	}
	for i, w := range want {
		n := g.Nodes[i]
		if n.FLOPs != w.flops || n.ParamBytes != w.params || n.ActBytes != w.act {
			t.Errorf("%s: FLOPs %g, params %d, act %g; want %g, %d, %g", n.Name, n.FLOPs, n.ParamBytes, n.ActBytes, w.flops, w.params, w.act)
		}
	}
	// Resize without a listed scales constant has no weights either.
	shapes, err := WeightShapes(g, &g.Nodes[2])
	if err != nil || shapes != nil {
		t.Errorf("Upsample weights %v, %v: want none", shapes, err)
	}
}
