package zoo

import (
	"github.com/plan-dev/plan/profiler/graph"
)

// The dilated R101-D8 segmenters of PPipe's evaluation (mmsegmentation configurations at
// 512×1024, Cityscapes' 19 classes): the FCN backbone with different decode heads. Every
// head reduces the 2048-channel output-stride-8 map to 512 channels, applies its context
// module, concatenates the backbone output where mmseg's head does, and classifies; logits
// are upsampled ×8. Auxiliary heads are training-only and omitted; batch norms are folded.

// segmenter builds backbone + head.
func segmenter(name string, depths []int, width, h, w int64, head func(b *builder, x string, c int64) string) (*graph.Graph, error) {
	b, x := newBuilder(name, 3, h, w)
	x = resnetD8(b, x, depths, width)
	b.scope("decode")
	y := head(b, x, width*8)
	y = b.conv(y, 19, 1, 1)
	return b.finish(b.resize(y, 8))
}

// r101d8 is the full-size configuration.
func r101d8(name string, head func(b *builder, x string, c int64) string) func() (*graph.Graph, error) {
	return func() (*graph.Graph, error) { return segmenter(name, []int{3, 4, 23, 3}, 64, 512, 1024, head) }
}

// positions turns a [C, H, W] map into [H·W, C] rows.
func positions(b *builder, x string) string { return b.transpose(b.flat2(x), 1, 0) }

// backToMap turns [H·W, C] rows back into a [C, H, W] map shaped like ref.
func backToMap(b *builder, rows, ref string) string {
	s := b.shape(ref)
	c := b.shape(rows)[1]
	return b.reshape(b.transpose(rows, 1, 0), c, s[1], s[2])
}

// nonLocal is the embedded-Gaussian non-local block (Wang et al. 2018), reduction 2; with
// disentangled set it is DNL's version (Yin et al. 2020): whitened pairwise term plus a unary
// attention term.
func nonLocal(b *builder, x string, disentangled bool) string {
	c := b.shape(x)[0]
	inner := c / 2
	theta := positions(b, b.conv(x, inner, 1, 1)) // [HW, C/2]
	phi := b.flat2(b.conv(x, inner, 1, 1))        // [C/2, HW]
	g := positions(b, b.conv(x, inner, 1, 1))     // [HW, C/2]
	if disentangled {
		theta = b.sub(theta, b.reduceMean(theta, 0))
		phi = b.sub(phi, b.reduceMean(phi, 1))
	}
	attn := b.softmax(b.matmul(theta, phi)) // [HW, HW]
	y := b.matmul(attn, g)                  // [HW, C/2]
	if disentangled {
		mask := b.softmax(b.flat2(b.conv(x, 1, 1, 1))) // [1, HW]
		y = b.add(y, b.matmul(mask, g))                // + [1, C/2]
	}
	y = b.conv(backToMap(b, y, x), c, 1, 1)
	return b.add(x, y)
}

// nlHead: conv, non-local, conv, concat input, fuse (mmseg NLHead / DNLHead).
func nlHead(disentangled bool) func(b *builder, x string, c int64) string {
	return func(b *builder, x string, c int64) string {
		y := b.relu(b.conv(x, c, 3, 1))
		y = nonLocal(b, y, disentangled)
		y = b.relu(b.conv(y, c, 3, 1))
		return b.relu(b.conv(b.concat(x, y), c, 3, 1))
	}
}

// gcHead: conv, global-context block (Cao et al. 2019: attention pooling, channel-add
// transform with ratio 1/4), conv, concat input, fuse (mmseg GCHead).
func gcHead(b *builder, x string, c int64) string {
	y := b.relu(b.conv(x, c, 3, 1))
	mask := b.softmax(b.flat2(b.conv(y, 1, 1, 1)))       // [1, HW]
	ctx := b.matmul(b.flat2(y), b.transpose(mask, 1, 0)) // [C, 1]
	ctx = b.reshape(ctx, c, 1, 1)
	t := b.relu(b.layernorm(b.conv(ctx, c/4, 1, 1)))
	y = b.add(y, b.conv(t, c, 1, 1))
	y = b.relu(b.conv(y, c, 3, 1))
	return b.relu(b.conv(b.concat(x, y), c, 3, 1))
}

// encHead: bottleneck conv and the context-encoding module (Zhang et al. 2018) with 32
// codewords: soft-assign every position to the codewords, aggregate residuals, and rescale
// the channels with the resulting descriptor (mmseg EncHead, SE-loss branch omitted).
func encHead(b *builder, x string, c int64) string {
	y := b.relu(b.conv(x, c, 3, 1))
	e := b.relu(b.conv(y, c, 1, 1))
	rows := positions(b, e)                          // [HW, C]
	assign := b.softmax(b.linear(rows, 32))          // [HW, K]
	agg := b.matmul(b.transpose(assign, 1, 0), rows) // [K, C]
	agg = b.relu(agg)
	desc := b.reshape(b.reduceMean(agg, 0), c) // [C]
	gamma := b.reshape(b.sigmoid(b.gemm(desc, c)), c, 1, 1)
	return b.relu(b.add(y, b.mul(y, gamma)))
}

// apcHead: adaptive context modules (He et al. 2019) at pool scales 1, 2, 3, 6: each builds
// an s²-way affinity per position from local and global features and mixes the pooled
// features with it; outputs are concatenated with the input and fused (mmseg APCHead).
func apcHead(b *builder, x string, c int64) string {
	outs := []string{x}
	for _, s := range []int64{1, 2, 3, 6} {
		pooled := b.conv(b.adaptiveAvgPool(x, s), c, 1, 1)                      // [C, s, s]
		local := b.relu(b.conv(x, c, 1, 1))                                     // [C, H, W]
		global := b.conv(b.gap(local), c, 1, 1)                                 // [C, 1, 1]
		aff := b.sigmoid(positions(b, b.conv(b.add(local, global), s*s, 1, 1))) // [HW, s²]
		z := b.matmul(aff, positions(b, pooled))                                // [HW, C]
		z = b.conv(backToMap(b, z, x), c, 1, 1)
		z = b.relu(b.add(z, local))
		outs = append(outs, b.conv(z, c, 1, 1))
	}
	return b.relu(b.conv(b.concat(outs...), c, 3, 1))
}
