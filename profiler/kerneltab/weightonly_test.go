package kerneltab

import (
	"strings"
	"testing"
)

// TestWeightOnly: FP8 on the A100 (no FP8 tensor cores) is timed as vLLM's weight-only
// kernels run it — half the weight bytes where the layer is bound by reading them, the BF16
// time where it is bound by the math — and a GPU with FP8 tensor cores keeps its own
// measured FP8 tables.
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
	for _, c := range cases {
		q, p, err := c.fp8()
		if err != nil {
			t.Fatalf("%s: fp8: %v", c.name, err)
		}
		b, _, err := c.bf16()
		if err != nil {
			t.Fatalf("%s: bf16: %v", c.name, err)
		}
		t.Logf("%s: FP8 weight-only %.1f µs, BF16 %.1f µs (×%.3f)", c.name, q, b, q/b)
		if r := q / b; r < c.lo || r > c.hi {
			t.Errorf("%s: FP8 weight-only %.1f µs, BF16 %.1f µs: ×%.3f, want [%g, %g]", c.name, q, b, r, c.lo, c.hi)
		}
		if p.Measured || !strings.Contains(p.ScaledFrom, "weight-only") || !strings.HasPrefix(p.Slice, string(FP8)) {
			t.Errorf("%s: point %v: want it named as FP8 scaled weight-only from BF16", c.name, p)
		}
	}
	h, err := Load("H100")
	if err != nil {
		t.Fatal(err)
	}
	if _, p, err := h.GEMMUs(FP8, 16, 6144, 4096); err != nil || p.ScaledFrom != "" || p.Slice != string(FP8) {
		t.Errorf("H100 FP8 GEMM: %v %v: want its own FP8 table", p, err)
	}
}
