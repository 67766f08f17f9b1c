package zoo

import (
	"fmt"
	"math"

	"github.com/plan-dev/plan/profiler/graph"
)

// resnet builds a bottleneck ResNet (torchvision v1.5: the stride sits in the 3×3 conv).
// widthMult scales the bottleneck's inner width (2 for WideResNet-*-2). Batch norm is folded
// into the convolutions, as in an inference export.
func resnet(name string, depths []int, widthMult int64) (*graph.Graph, error) {
	b, x := newBuilder(name, 3, 224, 224)
	b.scope("stem")
	x = b.relu(b.convp(x, 64, 7, 2, 3))
	x = b.maxpool(x, 3, 2, 1)
	for s, n := range depths {
		planes := int64(64) << s
		stride := int64(1)
		if s > 0 {
			stride = 2
		}
		for i := 0; i < n; i++ {
			b.scope(fmt.Sprintf("layer%d.%d", s+1, i))
			st := int64(1)
			if i == 0 {
				st = stride
			}
			x = bottleneck(b, x, planes*widthMult, planes*4, st, 1)
		}
	}
	b.scope("head")
	x = b.gemm(b.flatten(b.gap(x)), 1000)
	return b.finish(x)
}

// bottleneck is 1×1 → 3×3 (stride, dilation) → 1×1 with a projection shortcut when the shape
// changes.
func bottleneck(b *builder, x string, inner, out, stride, dilation int64) string {
	identity := x
	if stride != 1 || b.shape(x)[0] != out {
		identity = b.convx(x, out, convOpt{kh: 1, kw: 1, sh: stride, sw: stride, group: 1, dilation: 1})
	}
	y := b.relu(b.conv(x, inner, 1, 1))
	if dilation > 1 {
		y = b.relu(b.dconv(y, inner, 3, dilation))
	} else {
		y = b.relu(b.conv(y, inner, 3, stride))
	}
	y = b.conv(y, out, 1, 1)
	return b.relu(b.add(y, identity))
}

// fcnR101D8 is mmsegmentation's FCN with a dilated ResNet-101 (V1c deep stem, output stride
// 8: stages 3 and 4 keep stride 1 with dilation 2 and 4) at 512×1024 and Cityscapes' 19
// classes. The head is two 3×3 convs to 512 channels, a concat with its input, a fusing 3×3
// conv and a 1×1 classifier; logits are upsampled ×8 to the input size. The auxiliary head
// is training-only and omitted.
func fcnR101D8() (*graph.Graph, error) {
	return fcn("fcn-r101-d8", []int{3, 4, 23, 3}, 64, 512, 1024)
}

// fcn is the dilated-ResNet FCN with the given stage depths, base width and input size.
func fcn(name string, depths []int, width, h, w int64) (*graph.Graph, error) {
	b, x := newBuilder(name, 3, h, w)
	x = resnetD8(b, x, depths, width)
	b.scope("decode")
	in := x
	head := width * 8
	y := b.relu(b.conv(x, head, 3, 1))
	y = b.relu(b.conv(y, head, 3, 1))
	y = b.relu(b.conv(b.concat(in, y), head, 3, 1))
	y = b.conv(y, 19, 1, 1)
	y = b.resize(y, 8)
	return b.finish(y)
}

// resnetD8 is mmsegmentation's ResNetV1c backbone with output stride 8: a deep stem (three
// 3×3 convs), then bottleneck stages where stages 3 and 4 keep stride 1 and dilate by 2 and 4.
func resnetD8(b *builder, x string, depths []int, width int64) string {
	b.scope("stem")
	x = b.relu(b.conv(x, width/2, 3, 2))
	x = b.relu(b.conv(x, width/2, 3, 1))
	x = b.relu(b.conv(x, width, 3, 1))
	x = b.maxpool(x, 3, 2, 1)
	strides := []int64{1, 2, 1, 1}
	dilations := []int64{1, 1, 2, 4}
	for s, n := range depths {
		planes := width << s
		for i := 0; i < n; i++ {
			b.scope(fmt.Sprintf("layer%d.%d", s+1, i))
			st := int64(1)
			if i == 0 {
				st = strides[s]
			}
			x = bottleneck(b, x, planes, planes*4, st, dilations[s])
		}
	}
	return x
}

// repvggB3 is RepVGG-B3 in its deployed (re-parameterized) form: plain 3×3 conv + ReLU
// stacks. a = 3, b = 5: widths 64, 192, 384, 768, 2560 with 1, 4, 6, 16, 1 layers.
func repvggB3() (*graph.Graph, error) {
	b, x := newBuilder("repvgg-b3", 3, 224, 224)
	widths := []int64{64, 192, 384, 768, 2560}
	layers := []int{1, 4, 6, 16, 1}
	for s := range widths {
		for i := 0; i < layers[s]; i++ {
			b.scope(fmt.Sprintf("stage%d.%d", s, i))
			st := int64(1)
			if i == 0 {
				st = 2
			}
			x = b.relu(b.conv(x, widths[s], 3, st))
		}
	}
	b.scope("head")
	x = b.gemm(b.flatten(b.gap(x)), 1000)
	return b.finish(x)
}

// efficientNet builds EfficientNet-B* from the B0 stage table scaled by width and depth
// multipliers (Tan & Le 2019), with squeeze-and-excitation (ratio 0.25) and swish.
func efficientNet(name string, width, depth float64, res int64) (*graph.Graph, error) {
	type stage struct {
		expand, k, stride, cin, cout, repeats int64
	}
	stages := []stage{
		{1, 3, 1, 32, 16, 1}, {6, 3, 2, 16, 24, 2}, {6, 5, 2, 24, 40, 2}, {6, 3, 2, 40, 80, 3},
		{6, 5, 1, 80, 112, 3}, {6, 5, 2, 112, 192, 4}, {6, 3, 1, 192, 320, 1},
	}
	round := func(f int64) int64 { return roundFilters(f, width) }
	b, x := newBuilder(name, 3, res, res)
	b.scope("stem")
	x = b.swish(b.conv(x, round(32), 3, 2))
	for s, st := range stages {
		reps := int64(math.Ceil(float64(st.repeats) * depth))
		cout := round(st.cout)
		for i := int64(0); i < reps; i++ {
			b.scope(fmt.Sprintf("blocks%d.%d", s, i))
			stride := int64(1)
			if i == 0 {
				stride = st.stride
			}
			x = mbconv(b, x, st.expand, st.k, stride, cout)
		}
	}
	b.scope("head")
	x = b.swish(b.conv(x, round(1280), 1, 1))
	x = b.gemm(b.flatten(b.gap(x)), 1000)
	return b.finish(x)
}

// mbconv is the inverted bottleneck: 1×1 expand, depthwise k×k, squeeze-and-excitation,
// 1×1 project, and a residual when the shape is unchanged.
func mbconv(b *builder, x string, expand, k, stride, cout int64) string {
	cin := b.shape(x)[0]
	y := x
	if expand != 1 {
		y = b.swish(b.conv(y, cin*expand, 1, 1))
	}
	y = b.swish(b.dwconv(y, k, stride))
	// Squeeze-and-excitation on the input width × 0.25.
	se := b.gap(y)
	se = b.swish(b.conv(se, max(1, cin/4), 1, 1))
	se = b.sigmoid(b.conv(se, b.shape(y)[0], 1, 1))
	y = b.mul(y, se)
	y = b.conv(y, cout, 1, 1)
	if stride == 1 && cin == cout {
		y = b.add(y, x)
	}
	return y
}

// convnextL is ConvNeXt-L (dims 192-384-768-1536, depths 3-3-27-3) at 224. Channels-last
// layer norms and MLPs are written as Transpose + LayerNormalization + MatMul, which is how
// the PyTorch model exports.
func convnextL() (*graph.Graph, error) {
	return convnext("convnext-l", []int64{192, 384, 768, 1536}, []int{3, 3, 27, 3}, 224)
}

func convnext(name string, dims []int64, depths []int, res int64) (*graph.Graph, error) {
	b, x := newBuilder(name, 3, res, res)
	b.scope("stem")
	x = b.convp(x, dims[0], 4, 4, 0)
	x = channelNorm(b, x)
	for s, n := range depths {
		if s > 0 {
			b.scope(fmt.Sprintf("downsample%d", s))
			x = channelNorm(b, x)
			x = b.convp(x, dims[s], 2, 2, 0)
		}
		for i := 0; i < n; i++ {
			b.scope(fmt.Sprintf("stages%d.%d", s, i))
			y := b.dwconv(x, 7, 1)
			y = b.transpose(y, 1, 2, 0) // [H, W, C]
			y = b.layernorm(y)
			y = b.gelu(b.linear(y, 4*dims[s]))
			y = b.linear(y, dims[s])
			y = b.transpose(y, 2, 0, 1)
			x = b.add(x, y)
		}
	}
	b.scope("head")
	x = b.flatten(b.gap(x))
	x = b.layernorm(x)
	x = b.gemm(x, 1000)
	return b.finish(x)
}

// channelNorm is a layer norm over the channel axis of a [C, H, W] map.
func channelNorm(b *builder, x string) string {
	y := b.transpose(x, 1, 2, 0)
	y = b.layernorm(y)
	return b.transpose(y, 2, 0, 1)
}

// inceptionV3 follows torchvision's Inception3 at 299×299 (no auxiliary classifier).
func inceptionV3() (*graph.Graph, error) {
	b, x := newBuilder("inception-v3", 3, 299, 299)
	cbr := func(x string, c, k, s, p int64) string { return b.relu(b.convp(x, c, k, s, p)) }
	asym := func(x string, c, kh, kw int64) string { return b.relu(b.convAsym(x, c, kh, kw)) }
	b.scope("stem")
	x = cbr(x, 32, 3, 2, 0)
	x = cbr(x, 32, 3, 1, 0)
	x = cbr(x, 64, 3, 1, 1)
	x = b.maxpool(x, 3, 2, 0)
	x = cbr(x, 80, 1, 1, 0)
	x = cbr(x, 192, 3, 1, 0)
	x = b.maxpool(x, 3, 2, 0)
	inceptionA := func(x string, pool int64) string {
		b1 := cbr(x, 64, 1, 1, 0)
		b5 := cbr(cbr(x, 48, 1, 1, 0), 64, 5, 1, 2)
		b3 := cbr(cbr(cbr(x, 64, 1, 1, 0), 96, 3, 1, 1), 96, 3, 1, 1)
		bp := cbr(b.avgpool(x, 3, 1, 1), pool, 1, 1, 0)
		return b.concat(b1, b5, b3, bp)
	}
	for i, pool := range []int64{32, 64, 64} {
		b.scope(fmt.Sprintf("Mixed_5%c", 'b'+i))
		x = inceptionA(x, pool)
	}
	b.scope("Mixed_6a")
	{
		b3 := cbr(x, 384, 3, 2, 0)
		bd := cbr(cbr(cbr(x, 64, 1, 1, 0), 96, 3, 1, 1), 96, 3, 2, 0)
		bp := b.maxpool(x, 3, 2, 0)
		x = b.concat(b3, bd, bp)
	}
	for i, c7 := range []int64{128, 160, 160, 192} {
		b.scope(fmt.Sprintf("Mixed_6%c", 'b'+i))
		b1 := cbr(x, 192, 1, 1, 0)
		b7 := asym(asym(cbr(x, c7, 1, 1, 0), c7, 1, 7), 192, 7, 1)
		bd := cbr(x, c7, 1, 1, 0)
		bd = asym(asym(asym(asym(bd, c7, 7, 1), c7, 1, 7), c7, 7, 1), 192, 1, 7)
		bp := cbr(b.avgpool(x, 3, 1, 1), 192, 1, 1, 0)
		x = b.concat(b1, b7, bd, bp)
	}
	b.scope("Mixed_7a")
	{
		b3 := cbr(cbr(x, 192, 1, 1, 0), 320, 3, 2, 0)
		b7 := asym(asym(cbr(x, 192, 1, 1, 0), 192, 1, 7), 192, 7, 1)
		b7 = cbr(b7, 192, 3, 2, 0)
		bp := b.maxpool(x, 3, 2, 0)
		x = b.concat(b3, b7, bp)
	}
	for i := 0; i < 2; i++ {
		b.scope(fmt.Sprintf("Mixed_7%c", 'b'+i))
		b1 := cbr(x, 320, 1, 1, 0)
		b3 := cbr(x, 384, 1, 1, 0)
		b3 = b.concat(asym(b3, 384, 1, 3), asym(b3, 384, 3, 1))
		bd := cbr(cbr(x, 448, 1, 1, 0), 384, 3, 1, 1)
		bd = b.concat(asym(bd, 384, 1, 3), asym(bd, 384, 3, 1))
		bp := cbr(b.avgpool(x, 3, 1, 1), 192, 1, 1, 0)
		x = b.concat(b1, b3, bd, bp)
	}
	b.scope("head")
	x = b.gemm(b.flatten(b.gap(x)), 1000)
	return b.finish(x)
}

// demoCNN is the model behind `plan profile` / `plan solve` with no inputs: 29 convolutions
// and a classifier on a 3×1024×1024 video frame, about 31 GFLOPs (L4 ≈ 2.8 ms at batch 1 in
// the roofline). The early stages are depthwise-separable blocks at high resolution (wide in
// space, thin in channels: bandwidth-bound, P4 ≈ 2× slower than L4), the late stages
// widening bottlenecks whose dense 3×3 convolutions run at 512–1024 channels (compute-bound,
// P4 ≈ 4× slower), as PPipe observes on real models. Between the late blocks only a narrow
// tensor (≈ 100–500 KB in fp16) crosses, so pipelines that hand the tail to P4s are worth
// their network transfer even on the demo cluster's shared 2 Gbit/s links.
func demoCNN() (*graph.Graph, error) {
	b, x := newBuilder("demo", 3, 1024, 1024)
	sep := func(x string, cout, stride int64) string {
		return b.relu(b.conv(b.relu(b.dwconv(x, 3, stride)), cout, 1, 1))
	}
	resSep := func(x string) string {
		y := b.conv(b.relu(b.dwconv(x, 3, 1)), b.shape(x)[0], 1, 1)
		return b.relu(b.add(y, x))
	}
	// inverted is a bottleneck that widens: 1×1 up to inner channels, a dense 3×3 at that
	// width, 1×1 back down. Most FLOPs sit in the wide 3×3 while the tensor between blocks
	// stays narrow, so the cheap cuts are where the expensive layers end.
	inverted := func(x string, inner int64) string {
		c := b.shape(x)[0]
		y := b.relu(b.conv(x, inner, 1, 1))
		y = b.relu(b.conv(y, inner, 3, 1))
		y = b.conv(y, c, 1, 1)
		return b.relu(b.add(y, x))
	}
	res := func(x string) string {
		c := b.shape(x)[0]
		y := b.conv(b.relu(b.conv(x, c, 3, 1)), c, 3, 1)
		return b.relu(b.add(y, x))
	}
	b.scope("stem")
	x = b.relu(b.conv(x, 16, 3, 2)) // 512
	b.scope("sep1")
	x = sep(x, 32, 1)
	b.scope("sep2")
	x = sep(x, 48, 2) // 256
	b.scope("sep3")
	x = resSep(x)
	b.scope("sep4")
	x = sep(x, 96, 2) // 128
	b.scope("sep5")
	x = resSep(x)
	b.scope("down1")
	x = b.relu(b.conv(x, 192, 3, 2)) // 64
	b.scope("res1")
	x = res(x)
	b.scope("down2")
	x = b.relu(b.conv(x, 256, 3, 2)) // 32
	b.scope("ib1")
	x = inverted(x, 512)
	b.scope("ib2")
	x = inverted(x, 512)
	b.scope("down3")
	x = b.relu(b.conv(x, 192, 3, 2)) // 16
	b.scope("ib3")
	x = inverted(x, 1024)
	b.scope("ib4")
	x = inverted(x, 1024)
	b.scope("head")
	x = b.relu(b.conv(x, 1280, 1, 1))
	x = b.gemm(b.flatten(b.gap(x)), 1000)
	return b.finish(x)
}

// roundFilters is EfficientNet's channel count for f channels at width multiplier width: the
// nearest multiple of 8 (at least 8), one multiple up when that loses more than 10%
// (EfficientNet's round_filters, Tan & Le 2019, reference implementation).
func roundFilters(f int64, width float64) int64 {
	v := float64(f) * width
	n := int64(math.Max(8, float64(int64(v+4)/8*8)))
	if float64(n) < 0.9*v {
		n += 8
	}
	return n
}
