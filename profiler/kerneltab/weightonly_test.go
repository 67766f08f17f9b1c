package kerneltab

import (
	"strings"
	"testing"
)

// TestWeightOnly: FP8 on the A100 (no FP8 tensor cores), and MXFP4 experts where no
// MXFP4 kernel was measured, are timed as vLLM's weight-only kernels run them — their
// weight bytes where the layer is bound by reading them, the BF16 time where it is bound by
// the math — and a GPU with measured tables of the dtype keeps them.
func TestWeightOnly(t *testing.T) {
	a, err := Load("A100")
	if err != nil {
		t.Fatal(err)
	}
	mixtral := MoEShape{Hidden: 4096, Inter: 14336, TopK: 2, Experts: 8, TP: 2, EP: 1}
	cases := []struct {
		name   string
		fp8    func() (float64, Point, error)
		bf16   func() (float64, Point, error)
		lo, hi float64 // the FP8 time over the BF16 time
	}{
		{"gemm decode m=1", func() (float64, Point, error) { return a.GEMMUs(FP8, 1, 14336, 4096) },
			func() (float64, Point, error) { return a.GEMMUs(BF16, 1, 14336, 4096) }, 0.45, 0.65},
		{"gemm decode m=16", func() (float64, Point, error) { return a.GEMMUs(FP8, 16, 6144, 4096) },
			func() (float64, Point, error) { return a.GEMMUs(BF16, 16, 6144, 4096) }, 0.45, 0.7},
		{"gemm prefill m=8192", func() (float64, Point, error) { return a.GEMMUs(FP8, 8192, 14336, 4096) },
			func() (float64, Point, error) { return a.GEMMUs(BF16, 8192, 14336, 4096) }, 0.97, 1.0},
		{"moe decode 4 tokens", func() (float64, Point, error) { s := mixtral; s.DType = FP8; return a.MoEUs(s, 4) },
			func() (float64, Point, error) { s := mixtral; s.DType = BF16; return a.MoEUs(s, 4) }, 0.45, 0.7},
		{"moe prefill 8192 tokens", func() (float64, Point, error) { s := mixtral; s.DType = FP8; return a.MoEUs(s, 8192) },
			func() (float64, Point, error) { s := mixtral; s.DType = BF16; return a.MoEUs(s, 8192) }, 0.97, 1.0},
	}
	gptoss := MoEShape{Hidden: 2880, Inter: 2880, TopK: 4, Experts: 32, TP: 1, EP: 1}
	cases = append(cases, struct {
		name   string
		fp8    func() (float64, Point, error)
		bf16   func() (float64, Point, error)
		lo, hi float64
	}{"moe mxfp4 decode 32 tokens", func() (float64, Point, error) { s := gptoss; s.DType = MXFP4; return a.MoEUs(s, 32) },
		func() (float64, Point, error) { s := gptoss; s.DType = BF16; return a.MoEUs(s, 32) }, 0.25, 0.4})
	for _, c := range cases {
		q, p, err := c.fp8()
		if err != nil {
			t.Fatalf("%s: fp8: %v", c.name, err)
		}
		b, _, err := c.bf16()
		if err != nil {
			t.Fatalf("%s: bf16: %v", c.name, err)
		}
		t.Logf("%s: weight-only %.1f µs, BF16 %.1f µs (×%.3f)", c.name, q, b, q/b)
		if r := q / b; r < c.lo || r > c.hi {
			t.Errorf("%s: weight-only %.1f µs, BF16 %.1f µs: ×%.3f, want [%g, %g]", c.name, q, b, r, c.lo, c.hi)
		}
		if p.Measured || !strings.Contains(p.ScaledFrom, "weight-only") || strings.HasPrefix(p.Slice, string(BF16)) {
			t.Errorf("%s: point %v: want it named as scaled weight-only from BF16", c.name, p)
		}
	}
	h, err := Load("H100")
	if err != nil {
		t.Fatal(err)
	}
	if _, p, err := h.GEMMUs(FP8, 16, 6144, 4096); err != nil || p.ScaledFrom != "" || p.Slice != string(FP8) {
		t.Errorf("H100 FP8 GEMM: %v %v: want its own FP8 table", p, err)
	}
	s := gptoss
	s.DType = MXFP4
	if _, p, err := h.MoEUs(s, 32); err != nil || strings.Contains(p.ScaledFrom, "weight-only") {
		t.Errorf("H100 MXFP4 experts: %v %v: want its measured w4a16_mxfp4 kernels", p, err)
	}
}

// TestKVDTypeScaled: an FP8 KV cache on the A100, whose tables measured only BF16 caches,
// reads the BF16 decode-attention measurement scaled by the cache bytes (about half where the
// read dominates) and the BF16 prefill attention; the H100 reads its own FP8-cache tables.
func TestKVDTypeScaled(t *testing.T) {
	a, err := Load("A100")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		batch  int
		step   float64
		lo, hi float64
	}{{32, 2048, 0.5, 0.6}, {128, 4096, 0.5, 0.6}, {1, 16, 0.6, 1}} {
		b, _, _, err := a.GenerationAttentionFromMemoryUs(c.batch, 32, 8, 128, BF16, c.step)
		if err != nil {
			t.Fatal(err)
		}
		q, p, _, err := a.GenerationAttentionFromMemoryUs(c.batch, 32, 8, 128, FP8, c.step)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("decode attention b=%d step=%g: FP8 cache %.1f µs, BF16 %.1f µs (×%.3f)", c.batch, c.step, q, b, q/b)
		if r := q / b; r < c.lo || r > c.hi {
			t.Errorf("decode attention b=%d step=%g: FP8 cache ×%.3f of BF16, want [%g, %g]", c.batch, c.step, r, c.lo, c.hi)
		}
		if p.Measured || !strings.Contains(p.ScaledFrom, "KV-read floors") {
			t.Errorf("decode attention b=%d: point %v: want it named as scaled from the BF16 cache", c.batch, p)
		}
	}
	b, _, err := a.ContextAttentionUs(1, 2048, 32, 8, 128, BF16)
	if err != nil {
		t.Fatal(err)
	}
	if q, p, err := a.ContextAttentionUs(1, 2048, 32, 8, 128, FP8); err != nil || q != b || p.Measured {
		t.Errorf("prefill attention, FP8 cache: %.1f µs %v %v, want BF16's %.1f µs, not measured", q, p, err, b)
	}
	h, err := Load("H100")
	if err != nil {
		t.Fatal(err)
	}
	if _, p, _, err := h.GenerationAttentionFromMemoryUs(32, 32, 8, 128, FP8, 2048); err != nil || p.ScaledFrom != "" {
		t.Errorf("H100 FP8 cache: %v %v: want its own measurements", p, err)
	}
}
