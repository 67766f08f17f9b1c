package zoo

import (
	"fmt"
	"math"

	"github.com/plan-dev/plan/profiler/graph"
)

// The detectors and the colorization model of PPipe's evaluation, from their mmdetection /
// published configurations. Simplifications, all minor in cost: batch and group norms are
// folded into the convolutions, deformable convolutions are plain ones, and a head whose
// weights are shared across pyramid levels is written once per level (so MemoryBytes counts
// the head once per level; FLOPs and traffic are exact). Nearest ×2 upsampling is written as
// Reshape + Concat and 4×4 stride-2 transposed convolutions as upsampling + a 2×2 conv with the
// same FLOPs (see upsample2, deconv2), so profiler/onnx can shape-infer every model.

// resnetC returns the C3, C4, C5 maps of a bottleneck ResNet / ResNeXt (torchvision v1.5)
// with stem width w (64 for the published models). groups > 1 makes it ResNeXt with
// baseWidth channels per group.
func resnetC(b *builder, x string, depths []int, w, groups, baseWidth int64) (c3, c4, c5 string) {
	b.scope("backbone.stem")
	x = b.relu(b.convp(x, w, 7, 2, 3))
	x = b.maxpool(x, 3, 2, 1)
	var outs []string
	for s, n := range depths {
		planes := w << s
		inner := planes
		if groups > 1 {
			inner = groups * baseWidth << s
		}
		for i := 0; i < n; i++ {
			b.scope(fmt.Sprintf("backbone.layer%d.%d", s+1, i))
			st := int64(1)
			if i == 0 && s > 0 {
				st = 2
			}
			x = bottleneckG(b, x, inner, planes*4, st, groups)
		}
		outs = append(outs, x)
	}
	return outs[1], outs[2], outs[3]
}

// bottleneckG is a bottleneck whose 3×3 conv may be grouped (ResNeXt).
func bottleneckG(b *builder, x string, inner, out, stride, groups int64) string {
	identity := x
	if stride != 1 || b.shape(x)[0] != out {
		identity = b.convx(x, out, convOpt{kh: 1, kw: 1, sh: stride, sw: stride, group: 1, dilation: 1})
	}
	y := b.relu(b.conv(x, inner, 1, 1))
	y = b.relu(b.convx(y, inner, convOpt{kh: 3, kw: 3, sh: stride, sw: stride, group: groups, dilation: 1}))
	y = b.conv(y, out, 1, 1)
	return b.relu(b.add(y, identity))
}

// fpn is the feature pyramid (Lin et al. 2017) on C3–C5 with c channels (256) and two extra
// levels from stride-2 convs, on the P5 output (ATSS, GFL) or on C5 (RetinaNet/FSAF).
func fpn(b *builder, c3, c4, c5 string, c int64, extraOnInput bool) []string {
	b.scope("neck")
	l3, l4, l5 := b.conv(c3, c, 1, 1), b.conv(c4, c, 1, 1), b.conv(c5, c, 1, 1)
	l4 = b.add(l4, b.upsample2(l5))
	l3 = b.add(l3, b.upsample2(l4))
	p3, p4, p5 := b.conv(l3, c, 3, 1), b.conv(l4, c, 3, 1), b.conv(l5, c, 3, 1)
	src := p5
	if extraOnInput {
		src = c5
	}
	p6 := b.conv(src, c, 3, 2)
	p7 := b.conv(b.relu(p6), c, 3, 2)
	return []string{p3, p4, p5, p6, p7}
}

// denseHead runs the two 4-conv towers of RetinaNet-style heads on every level and the
// output convs; it returns every output.
func denseHead(b *builder, levels []string, cls, reg, extra int64) []string {
	var outs []string
	for l, p := range levels {
		b.scope(fmt.Sprintf("head.P%d", l+3))
		c, r := p, p
		w := b.shape(p)[0]
		for i := 0; i < 4; i++ {
			c = b.relu(b.conv(c, w, 3, 1))
			r = b.relu(b.conv(r, w, 3, 1))
		}
		outs = append(outs, b.conv(c, cls, 3, 1), b.conv(r, reg, 3, 1))
		if extra > 0 {
			outs = append(outs, b.conv(r, extra, 3, 1))
		}
	}
	return outs
}

// detector800 builds backbone + FPN + dense head at 800×1333 (padded to 800×1344).
func detector800(name string, depths []int, groups, baseWidth int64, extraOnInput bool, cls, reg, extra int64) func() (*graph.Graph, error) {
	return func() (*graph.Graph, error) {
		return detector(name, 800, 1344, depths, 64, groups, baseWidth, extraOnInput, cls, reg, extra)
	}
}

// detector is an FPN detector at h×w with backbone stem width sw (neck: 4·sw channels).
func detector(name string, h, w int64, depths []int, sw, groups, baseWidth int64, extraOnInput bool, cls, reg, extra int64) (*graph.Graph, error) {
	b, x := newBuilder(name, 3, h, w)
	c3, c4, c5 := resnetC(b, x, depths, sw, groups, baseWidth)
	return b.finish(denseHead(b, fpn(b, c3, c4, c5, 4*sw, extraOnInput), cls, reg, extra)...)
}

// ATSS R50-FPN: 80 classes, box regression and centerness, one anchor per location.
var atssR50 = detector800("atss-r50", []int{3, 4, 6, 3}, 1, 0, false, 80, 4, 1)

// FSAF R50-FPN: RetinaNet head with one anchor (the anchor-free branch), extra levels on C5.
var fsafR50 = detector800("fsaf-r50", []int{3, 4, 6, 3}, 1, 0, true, 80, 4, 0)

// GFL X101-32x4d-FPN: ResNeXt backbone, distribution regression with 17 bins per side.
var gflX101 = detector800("gfl-x101", []int{3, 4, 23, 3}, 32, 4, false, 80, 4*17, 0)

// centernetR18 is CenterNet with a ResNet-18 backbone and the three-stage deconvolution neck
// (256, 128, 64 channels) at 512×512, with heatmap (80), size (2) and offset (2) heads.
func centernetR18() (*graph.Graph, error) {
	b, x := newBuilder("centernet-r18", 3, 512, 512)
	b.scope("backbone.stem")
	x = b.relu(b.convp(x, 64, 7, 2, 3))
	x = b.maxpool(x, 3, 2, 1)
	for s := 0; s < 4; s++ {
		c := int64(64) << s
		for i := 0; i < 2; i++ {
			b.scope(fmt.Sprintf("backbone.layer%d.%d", s+1, i))
			st := int64(1)
			if i == 0 && s > 0 {
				st = 2
			}
			identity := x
			if st != 1 || b.shape(x)[0] != c {
				identity = b.convx(x, c, convOpt{kh: 1, kw: 1, sh: st, sw: st, group: 1, dilation: 1})
			}
			y := b.relu(b.conv(x, c, 3, st))
			y = b.conv(y, c, 3, 1)
			x = b.relu(b.add(y, identity))
		}
	}
	for i, c := range []int64{256, 128, 64} {
		b.scope(fmt.Sprintf("neck.%d", i))
		x = b.relu(b.conv(x, c, 3, 1))
		x = b.relu(b.deconv2(x, c))
	}
	var outs []string
	for _, h := range []struct {
		name string
		c    int64
	}{{"heatmap", 80}, {"wh", 2}, {"offset", 2}} {
		b.scope("head." + h.name)
		y := b.conv(b.relu(b.conv(x, 64, 3, 1)), h.c, 1, 1)
		if h.name == "heatmap" {
			y = b.sigmoid(y)
		}
		outs = append(outs, y)
	}
	return b.finish(outs...)
}

// rtmdetX is RTMDet-x (Lyu et al. 2022) at 640×640: CSPNeXt backbone (widen 1.25, deepen
// 1.33), CSPNeXt-PAFPN neck with 320 channels, and the separated-BN head (two 3×3 convs per
// branch and level, 1×1 outputs). Activations are SiLU.
func rtmdetX() (*graph.Graph, error) { return rtmdet("rtmdet-x", 1.25, []int{4, 8, 8, 4}, 4, 640) }

// rtmdet builds an RTMDet with widen factor wf, CSP blocks per stage, neck CSP blocks and
// input size res.
func rtmdet(name string, wf float64, depths []int, neckBlocks int, res int64) (*graph.Graph, error) {
	ch := func(c float64) int64 { return int64(c * wf) }
	b, x := newBuilder(name, 3, res, res)
	cbs := func(x string, c, k, s int64) string { return b.swish(b.conv(x, c, k, s)) }
	// csp is CSPNeXt's CSP layer with channel attention.
	csp := func(x string, out int64, blocks int, identity bool) string {
		mid := out / 2
		main := cbs(x, mid, 1, 1)
		short := cbs(x, mid, 1, 1)
		for i := 0; i < blocks; i++ {
			y := cbs(main, mid, 3, 1)
			y = cbs(b.swish(b.dwconv(y, 5, 1)), mid, 1, 1)
			if identity {
				y = b.add(y, main)
			}
			main = y
		}
		y := b.concat(main, short)
		att := b.unary("HardSigmoid", b.conv(b.gap(y), 2*mid, 1, 1))
		y = b.mul(y, att)
		return cbs(y, out, 1, 1)
	}
	b.scope("backbone.stem")
	x = cbs(x, ch(32), 3, 2)
	x = cbs(x, ch(32), 3, 1)
	x = cbs(x, ch(64), 3, 1)
	widths := []int64{ch(128), ch(256), ch(512), ch(1024)}
	neck := ch(256)
	var c []string
	for s := range widths {
		b.scope(fmt.Sprintf("backbone.stage%d", s+1))
		x = cbs(x, widths[s], 3, 2)
		if s == 3 {
			// SPPF: three chained 5×5 max pools.
			y := cbs(x, widths[s]/2, 1, 1)
			p1 := b.maxpool(y, 5, 1, 2)
			p2 := b.maxpool(p1, 5, 1, 2)
			p3 := b.maxpool(p2, 5, 1, 2)
			x = cbs(b.concat(y, p1, p2, p3), widths[s], 1, 1)
		}
		x = csp(x, widths[s], depths[s], s < 3)
		c = append(c, x)
	}
	c3, c4, c5 := c[1], c[2], c[3]
	b.scope("neck.top_down")
	r5 := cbs(c5, widths[2], 1, 1)
	t4 := csp(b.concat(b.upsample2(r5), c4), widths[2], neckBlocks, false)
	r4 := cbs(t4, widths[1], 1, 1)
	p3 := csp(b.concat(b.upsample2(r4), c3), widths[1], neckBlocks, false)
	b.scope("neck.bottom_up")
	p4 := csp(b.concat(cbs(p3, widths[1], 3, 2), r4), widths[2], neckBlocks, false)
	p5 := csp(b.concat(cbs(p4, widths[2], 3, 2), r5), widths[3], neckBlocks, false)
	var outs []string
	for l, p := range []string{p3, p4, p5} {
		b.scope(fmt.Sprintf("head.P%d", l+3))
		p = cbs(p, neck, 3, 1)
		cl, rg := cbs(cbs(p, neck, 3, 1), neck, 3, 1), cbs(cbs(p, neck, 3, 1), neck, 3, 1)
		outs = append(outs, b.conv(cl, 80, 1, 1), b.conv(rg, 4, 1, 1))
	}
	return b.finish(outs...)
}

// efficientDetD1 is EfficientDet-D1 (Tan et al. 2020) at 640×640: EfficientNet-B1 backbone,
// four BiFPN layers with 88 channels on P3–P7, and class (9 anchors × 90 classes) and box
// nets of three separable convs per level. Fast normalized fusion weights are folded.
func efficientDetD1() (*graph.Graph, error) {
	b, x := newBuilder("efficientdet-d1", 3, 640, 640)
	feats := efficientNetBody(b, x, 1.0, 1.1)
	const w = 88
	sep := func(x string) string { return b.conv(b.dwconv(b.swish(x), 3, 1), w, 1, 1) }
	b.scope("bifpn.in")
	p3, p4, p5 := b.conv(feats[2], w, 1, 1), b.conv(feats[3], w, 1, 1), b.conv(feats[4], w, 1, 1)
	p6 := b.maxpool(b.conv(feats[4], w, 1, 1), 3, 2, 1)
	p7 := b.maxpool(p6, 3, 2, 1)
	ps := []string{p3, p4, p5, p6, p7}
	for layer := 0; layer < 4; layer++ {
		b.scope(fmt.Sprintf("bifpn.%d", layer))
		td := make([]string, 5)
		td[4] = ps[4]
		for l := 3; l >= 0; l-- {
			td[l] = sep(b.add(ps[l], b.upsample2(td[l+1])))
		}
		out := make([]string, 5)
		out[0] = td[0]
		for l := 1; l < 5; l++ {
			down := b.maxpool(out[l-1], 3, 2, 1)
			in := b.add(ps[l], down)
			if l < 4 {
				in = b.add(in, td[l])
			}
			out[l] = sep(in)
		}
		ps = out
	}
	var outs []string
	for l, p := range ps {
		b.scope(fmt.Sprintf("head.P%d", l+3))
		c, r := p, p
		for i := 0; i < 3; i++ {
			c, r = b.swish(sep(c)), b.swish(sep(r))
		}
		outs = append(outs, b.conv(b.dwconv(c, 3, 1), 9*90, 1, 1), b.conv(b.dwconv(r, 3, 1), 9*4, 1, 1))
	}
	return b.finish(outs...)
}

// colorizationV2 is Zhang et al.'s ECCV16 colorization network (OpenVINO's colorization-v2):
// the L channel at 256×256 in, 313 quantized ab bins at 64×64, softmax, projection to ab and
// ×4 upsampling.
func colorizationV2() (*graph.Graph, error) {
	b, x := newBuilder("colorization-v2", 1, 256, 256)
	stage := func(x string, c int64, n int, last, dil int64) string {
		for i := 0; i < n; i++ {
			s := int64(1)
			if i == n-1 {
				s = last
			}
			if dil > 1 {
				x = b.relu(b.dconv(x, c, 3, dil))
			} else {
				x = b.relu(b.conv(x, c, 3, s))
			}
		}
		return x
	}
	for i, st := range []struct {
		c         int64
		n         int
		last, dil int64
	}{{64, 2, 2, 1}, {128, 2, 2, 1}, {256, 3, 2, 1}, {512, 3, 1, 1}, {512, 3, 1, 2}, {512, 3, 1, 2}, {512, 3, 1, 1}} {
		b.scope(fmt.Sprintf("model%d", i+1))
		x = stage(x, st.c, st.n, st.last, st.dil)
	}
	b.scope("model8")
	x = b.relu(b.deconv2(x, 256))
	x = stage(x, 256, 2, 1, 1)
	x = b.conv(x, 313, 1, 1)
	b.scope("out")
	x = b.transpose(b.softmax(b.transpose(x, 1, 2, 0)), 2, 0, 1)
	x = b.conv(x, 2, 1, 1)
	return b.finish(b.resize(x, 4))
}

// efficientNetBody builds an EfficientNet trunk and returns the outputs of stages 1–7
// (strides 2, 4, 8, 16, 16, 32, 32): feats[2] = P3, feats[3] = P4 (stage 5), feats[4] = P5.
func efficientNetBody(b *builder, x string, width, depth float64) []string {
	type stage struct{ expand, k, stride, cout, repeats int64 }
	stages := []stage{{1, 3, 1, 16, 1}, {6, 3, 2, 24, 2}, {6, 5, 2, 40, 2}, {6, 3, 2, 80, 3}, {6, 5, 1, 112, 3}, {6, 5, 2, 192, 4}, {6, 3, 1, 320, 1}}
	round := func(f int64) int64 { return roundFilters(f, width) }
	b.scope("backbone.stem")
	x = b.swish(b.conv(x, round(32), 3, 2))
	var outs []string
	for s, st := range stages {
		for i := int64(0); i < int64(math.Ceil(float64(st.repeats)*depth)); i++ {
			b.scope(fmt.Sprintf("backbone.blocks%d.%d", s, i))
			stride := int64(1)
			if i == 0 {
				stride = st.stride
			}
			x = mbconv(b, x, st.expand, st.k, stride, round(st.cout))
		}
		outs = append(outs, x)
	}
	// P3 = stage 3 (stride 8), P4 = stage 5 (stride 16), P5 = stage 7 (stride 32).
	return []string{outs[0], outs[1], outs[2], outs[4], outs[6]}
}
