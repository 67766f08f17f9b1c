package kerneltab

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpectedDistinctExperts checks the closed form against a direct simulation of top-k
// routing: each token draws topk distinct experts uniformly, seeded.
func TestExpectedDistinctExperts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ experts, topk, tokens int }{
		{8, 2, 1}, {8, 2, 4}, {16, 1, 8}, {128, 8, 1}, {128, 8, 16}, {128, 8, 256}, {256, 8, 64}, {32, 4, 3},
	} {
		const trials = 1500
		sum := 0
		for range trials {
			seen := map[int]bool{}
			for range c.tokens {
				for _, e := range rng.Perm(c.experts)[:c.topk] {
					seen[e] = true
				}
			}
			sum += len(seen)
		}
		sim := float64(sum) / trials
		got := ExpectedDistinctExperts(c.experts, c.topk, float64(c.tokens))
		if math.Abs(got-sim)/sim > 0.03 {
			t.Errorf("E=%d k=%d T=%d: closed form %.3f, simulated %.3f", c.experts, c.topk, c.tokens, got, sim)
		}
	}
	if ExpectedDistinctExperts(8, 2, 0) != 0 || ExpectedDistinctExperts(8, 16, 5) != 8 {
		t.Error("edges: no tokens touch nothing; top-k past the experts touches all")
	}
}

// TestMoELeaveOneOut: every measured MoE node, hidden in turn, is predicted from its
// neighbouring token counts within 10% at the median, on every GPU; the shape-scaling
// (an unmeasured model, its own measurements hidden) is logged with its error.
func TestMoELeaveOneOut(t *testing.T) {
	for _, g := range GPUs() {
		tb, err := Load(g)
		if err != nil {
			t.Fatal(err)
		}
		s := tb.LeaveOneOut(TableMoE, 3, nil)
		t.Logf("%-5s moe tokens       nodes %5d  median %5.2f%%  p90 %6.2f%%  max %6.1f%%", g, s.Points, s.MedianPct, s.P90Pct, s.MaxPct)
		if s.Points < 100 || s.MedianPct > 10 {
			t.Errorf("%s moe: %d nodes, leave-one-out median %.2f%%, want ≤ 10%%", g, s.Points, s.MedianPct)
		}
		for _, dt := range []DType{BF16, FP8} {
			med, p90, n := tb.MoEShapeLOO(dt, 16384)
			t.Logf("%-5s moe %-8s other shapes only: nodes %5d  median %5.1f%%  p90 %5.1f%%", g, dt, n, med, p90)
			if n > 0 && med > 60 {
				t.Errorf("%s moe %s shape scaling: median %.1f%%", g, dt, med)
			}
		}
	}
}

// TestMoEUs: a measured shape comes back measured; an unmeasured one is scaled from a
// named measured shape and grows with its work; tokens never make it fall.
func TestMoEUs(t *testing.T) {
	h, err := Load("H100")
	if err != nil {
		t.Fatal(err)
	}
	mixtral := MoEShape{DType: BF16, Hidden: 4096, Inter: 14336, TopK: 2, Experts: 8, TP: 1, EP: 1}
	us, p, err := h.MoEUs(mixtral, 64)
	if err != nil || !p.Measured || us <= 0 {
		t.Fatalf("Mixtral shape at 64 tokens: %g µs %v %v: want measured", us, p, err)
	}
	other := mixtral
	other.Inter = 2 * mixtral.Inter
	us2, p2, err := h.MoEUs(other, 64)
	if err != nil || p2.ScaledFrom == "" {
		t.Fatalf("unmeasured shape: %v %v", p2, err)
	}
	if r := us2 / us; r < 1.5 || r > 2.5 {
		t.Errorf("twice the expert size: ×%.2f, want about 2", r)
	}
	prev := 0.0
	for _, n := range []int{1, 2, 8, 64, 512, 4096, 16384, 40000} {
		v, _, err := h.MoEUs(mixtral, n)
		if err != nil || v < prev {
			t.Errorf("tokens %d: %g µs after %g (%v)", n, v, prev, err)
		}
		prev = v
	}
	if _, _, err := h.MoEUs(MoEShape{DType: NVFP4, Hidden: 4096, Inter: 14336, TopK: 2, Experts: 8, TP: 1, EP: 1}, 8); err == nil {
		t.Error("NVFP4 on H100: want no measurements")
	}
}
