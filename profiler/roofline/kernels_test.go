package roofline

import (
	"math"
	"testing"

	"github.com/plan-dev/plan/profiler/gpus"
)

func mustSpec(t *testing.T, name string) gpus.Spec {
	t.Helper()
	s, err := gpus.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestGEMMRegimes: a GEMM of a few tokens streams its weights (time flat in M, weights over
// 0.85 of the H100's bandwidth), one of thousands is compute-bound (time linear in M, near
// 0.78 of the peak), and efficiency grows with M.
func TestGEMMRegimes(t *testing.T) {
	k := NewKernels(mustSpec(t, "H100"))
	n, kd := 14336*2, 4096
	weights := 2 * float64(n*kd)
	t1, t8 := k.GEMMUs(1, n, kd), k.GEMMUs(8, n, kd)
	if want := weights/(0.85*3350e3) + 3; math.Abs(t1/want-1) > 0.02 {
		t.Errorf("M=1: %.1f µs, want the weight stream %.1f", t1, want)
	}
	if t8/t1 > 1.05 {
		t.Errorf("M=8 %.1f µs vs M=1 %.1f: decode GEMMs should be flat in M", t8, t1)
	}
	t4k, t8k := k.GEMMUs(4096, n, kd), k.GEMMUs(8192, n, kd)
	if r := t8k / t4k; r < 1.9 || r > 2.05 {
		t.Errorf("M=8192 / M=4096 = %.2f, want ~2 (compute-bound)", r)
	}
	for _, tc := range []struct {
		m      int
		lo, hi float64
	}{{1, 0, 0.02}, {512, 0.6, 0.72}, {2048, 0.72, 0.78}, {8192, 0.75, 0.78}} {
		if e := k.GEMMEfficiency(tc.m); e < tc.lo || e > tc.hi {
			t.Errorf("η(%d) = %.3f, want in [%.2f, %.2f]", tc.m, e, tc.lo, tc.hi)
		}
	}
	if k.GEMMUs(0, n, kd) != 0 {
		t.Error("empty GEMM costs time")
	}
	// Unmeasured GPUs keep a flat share.
	a10 := NewKernels(mustSpec(t, "A10"))
	if a10.GEMMEfficiency(1) != a10.GEMMEfficiency(4096) {
		t.Error("A10: want a flat GEMM share")
	}
}

// TestAllReduce: none on one GPU; the small-message floor; the ring's 2(n−1)/n growth with
// the degree and linear growth with the message; PCIe slower than NVLink; NVLink asked on
// a GPU without it is unusable, and auto falls back to PCIe.
func TestAllReduce(t *testing.T) {
	k := NewKernels(mustSpec(t, "H100"))
	if got := k.AllReduceUs(1<<20, 1, LinkAuto); got != 0 {
		t.Errorf("one GPU: %g", got)
	}
	if got := k.AllReduceUs(16384, 4, LinkNVLink); got != 41 {
		t.Errorf("16 KiB: %g µs, want the 41 µs floor", got)
	}
	s := float64(32 << 20)
	t2, t4, t8 := k.AllReduceUs(s, 2, LinkNVLink), k.AllReduceUs(s, 4, LinkNVLink), k.AllReduceUs(s, 8, LinkNVLink)
	if want := 27 + 1.5*s/(0.72*450e3); math.Abs(t4-want) > 1e-9 {
		t.Errorf("32 MiB over 4: %.1f µs, want %.1f", t4, want)
	}
	if !(t2 < t4 && t4 < t8) {
		t.Errorf("by degree %.1f %.1f %.1f: want growing", t2, t4, t8)
	}
	if p := k.AllReduceUs(s, 4, LinkPCIe); p < 5*t4 {
		t.Errorf("PCIe %.1f µs vs NVLink %.1f: want ~9× slower (50 vs 450 GB/s)", p, t4)
	}
	l4 := NewKernels(mustSpec(t, "L4"))
	if !math.IsInf(l4.AllReduceUs(s, 2, LinkNVLink), 1) {
		t.Error("L4 over NVLink: want unusable")
	}
	if _, l := l4.LinkGBps(LinkAuto); l != LinkPCIe {
		t.Errorf("L4 auto link: %s, want pcie", l)
	}
}

// TestAttentionScaling: prefill attention is quadratic in the prompt once compute-bound,
// decode attention linear in the context.
func TestAttentionScaling(t *testing.T) {
	k := NewKernels(mustSpec(t, "H100"))
	a, b := k.PrefillAttentionUs(4096, 0, 32, 8, 128), k.PrefillAttentionUs(8192, 0, 32, 8, 128)
	if r := (b - 3) / (a - 3); r < 3.9 || r > 4.1 {
		t.Errorf("prefill 8192/4096 = %.2f, want ~4", r)
	}
	c, d := k.DecodeAttentionUs(32, 32*1024, 32, 8, 128), k.DecodeAttentionUs(32, 32*4096, 32, 8, 128)
	if r := (d - 3) / (c - 3); r < 3.9 || r > 4.1 {
		t.Errorf("decode 4× context = ×%.2f, want ~4", r)
	}
	if k.PrefillAttentionUs(0, 100, 32, 8, 128) != 0 || k.DecodeAttentionUs(0, 0, 32, 8, 128) != 0 {
		t.Error("no tokens cost attention time")
	}
}
