package llm

import (
	"math"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/gpus"
	"github.com/plan-dev/plan/profiler/roofline"
)

// TestParamsMatchShapes: the shapes transcribed from each config.json give the model card's
// parameter count within 1.5% (a wrong intermediate size, vocabulary or head count would be
// off by far more).
func TestParamsMatchShapes(t *testing.T) {
	for _, name := range Names() {
		m, _ := Lookup(name)
		got := m.ShapeParams() / 1e9
		if r := got / m.ParamsB; math.Abs(r-1) > 0.015 {
			t.Errorf("%s: shapes give %.2fB parameters, the card %.2fB (×%.3f)", name, got, m.ParamsB, r)
		}
		if m.HF == "" || m.HeadDim == 0 || m.Intermediate == 0 || m.Vocab == 0 {
			t.Errorf("%s: incomplete %+v", name, m)
		}
	}
}

// TestCatalogueShards: every catalogue model shards over one and two GPUs and over four or
// eight (Phi-4's 10 KV heads refuse both: vLLM's rule); non-divisors and degrees outside
// 1..8 are refused.
func TestCatalogueShards(t *testing.T) {
	for _, name := range Names() {
		m, _ := Lookup(name)
		for _, tp := range []int{1, 2} {
			if err := m.CheckTP(tp); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		if m.CheckTP(4) != nil && m.CheckTP(8) != nil && name != "phi-4" {
			t.Errorf("%s: shards over neither 4 nor 8 GPUs", name)
		}
	}
	if phi, _ := Lookup("phi-4"); phi.CheckTP(4) == nil || !strings.Contains(phi.CheckTP(4).Error(), "10 KV heads") {
		t.Errorf("phi-4 tp 4: %v, want refused naming its 10 KV heads", phi.CheckTP(4))
	}
	qwen, _ := Lookup("qwen2.5-7b") // 28 query heads, 4 KV heads
	for _, tc := range []struct {
		tp   int
		want string
	}{{8, "28 attention heads"}, {3, "28 attention heads"}, {0, "1..8"}, {9, "1..8"}} {
		if err := qwen.CheckTP(tc.tp); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("qwen2.5-7b tp %d: %v, want an error naming %q", tc.tp, err, tc.want)
		}
	}
	if err := qwen.CheckTP(7); err == nil {
		t.Error("qwen2.5-7b tp 7: 7 divides the 28 query heads but not the 4 KV heads: want an error")
	}
}

// TestStepTerms: the terms behave as their physics says — no all-reduce on one GPU, more GPUs
// shrink the GEMMs and add all-reduces, PCIe all-reduces cost more than NVLink ones, prefill
// attention grows faster than linearly in the prompt, decode attention linearly in the
// context, and the total is the sum of the terms.
func TestStepTerms(t *testing.T) {
	m, _ := Lookup("llama-3.1-70b")
	h100, _ := gpus.Lookup("H100")
	d4, err := NewDeployment(m, h100, 4, roofline.LinkAuto)
	if err != nil {
		t.Fatal(err)
	}
	d8, _ := NewDeployment(m, h100, 8, roofline.LinkNVLink)
	p4, _ := NewDeployment(m, h100, 4, roofline.LinkPCIe)
	b4, b8, bp := d4.Prefill(2048, 0), d8.Prefill(2048, 0), p4.Prefill(2048, 0)
	if !(b8.GEMM < b4.GEMM && b8.Attention < b4.Attention) {
		t.Errorf("TP8 GEMM %.0f attention %.0f not below TP4's %.0f %.0f", b8.GEMM, b8.Attention, b4.GEMM, b4.Attention)
	}
	if !(bp.AllReduce > 2*b4.AllReduce) {
		t.Errorf("PCIe all-reduce %.0f µs, NVLink %.0f: want PCIe (50 GB/s) far slower than NVLink (450)", bp.AllReduce, b4.AllReduce)
	}
	if got := b4.Total() - (b4.GEMM + b4.Attention + b4.AllReduce + b4.Elementwise + b4.Overhead); got != 0 {
		t.Errorf("total is not the sum of the terms: off by %g", got)
	}
	small, _ := Lookup("llama-3.1-8b")
	d1, _ := NewDeployment(small, h100, 1, roofline.LinkAuto)
	if b := d1.Prefill(2048, 0); b.AllReduce != 0 {
		t.Errorf("TP1 all-reduce %g, want 0", b.AllReduce)
	}
	a2, a8 := d1.Prefill(2048, 0).Attention, d1.Prefill(8192, 0).Attention
	if a8 < 10*a2 {
		t.Errorf("prefill attention 8192 tokens %.0f µs, 2048 %.0f: want ~16× (quadratic)", a8, a2)
	}
	c1, c2 := d1.Decode(32, 1024).Attention, d1.Decode(32, 4096).Attention
	// Measured: less than 4× — the kernel's fixed cost and the query read do not grow.
	if r := c2 / c1; r < 2.5 || r > 4.1 {
		t.Errorf("decode attention at 4× the context ×%.2f, want 2.5–4", r)
	}
	// A chunk of a prompt attends to the context before it too.
	if d1.Prefill(512, 4096).Attention <= d1.Prefill(512, 0).Attention {
		t.Error("prefill chunk after 4096 tokens of context costs no more attention than the first chunk")
	}
}

// TestNoLink: a GPU without NVLink refuses --link nvlink under tensor parallelism, and
// auto falls back to PCIe.
func TestNoLink(t *testing.T) {
	m, _ := Lookup("llama-3.1-8b")
	l4, _ := gpus.Lookup("L4")
	if _, err := NewDeployment(m, l4, 2, roofline.LinkNVLink); err == nil || !strings.Contains(err.Error(), "nvlink") {
		t.Errorf("L4 TP2 over NVLink: %v, want an error naming the link", err)
	}
	d, err := NewDeployment(m, l4, 2, roofline.LinkAuto)
	if err != nil {
		t.Fatal(err)
	}
	if b := d.Decode(1, 512); b.AllReduce <= 0 || math.IsInf(b.AllReduce, 0) {
		t.Errorf("L4 TP2 auto link: all-reduce %g", b.AllReduce)
	}
}

// TestEstimateAllTP: explicit degrees profile every model × GPU × degree that fits and name
// the ones that do not; nothing fitting is an error.
func TestEstimateAllTP(t *testing.T) {
	ps, skipped, err := EstimateAll([]string{"llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b"}, []string{"H100"}, Options{TP: []int{1, 2, 4, 8}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, p := range ps {
		got[p.Model+"/"+string(rune('0'+p.GPUCount))] = true
	}
	for _, want := range []string{"llama-3.1-8b/1", "llama-3.1-8b/8", "llama-3.1-70b/4", "llama-3.1-70b/8", "qwen2.5-7b/4"} {
		if !got[want] {
			t.Errorf("no profile %s (have %v)", want, got)
		}
	}
	why := map[string]string{}
	for _, s := range skipped {
		why[s.Model+"/"+string(rune('0'+s.TP))] = s.Reason.Error()
	}
	// 70B at TP2: 70.6 GB of weights a GPU, and the dummy sampler pass over 1,024 sequences
	// of a 128K vocabulary peaks near 4.8 GiB (vLLM's profile of Llama-3.3-70B at TP 2),
	// leave under two 4K contexts of KV cache.
	if !strings.Contains(why["llama-3.1-70b/1"], "KV tokens") || !strings.Contains(why["llama-3.1-70b/2"], "KV tokens") || !strings.Contains(why["qwen2.5-7b/8"], "attention heads") {
		t.Errorf("skipped %v: want 70B at TP1 and TP2 (memory) and Qwen2.5-7B at TP8 (heads)", why)
	}
	if _, _, err := EstimateAll([]string{"llama-3.1-70b"}, []string{"L4"}, Options{TP: []int{1}}); err == nil {
		t.Error("70B on one L4: want an error")
	}
	if _, _, err := EstimateAll([]string{"gpt-9"}, []string{"H100"}, Options{TP: []int{1}}); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Errorf("unknown model: %v", err)
	}
}

// TestSyncOverheadBound: a synchronous engine (V0, V1 before async scheduling) runs all of
// its per-step host work between steps, so it never waits less per step than the async
// engine is left waiting (the fitted part), whatever the corrections; the async engine
// waits exactly the fitted part; and --explain says the synchronous figure is a bound.
func TestSyncOverheadBound(t *testing.T) {
	g, _ := gpus.Lookup("H100")
	m := mustLookup(t, "llama-3.1-8b")
	d, err := NewDeployment(m, g, 1, roofline.LinkAuto)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		version string
		host    float64
		want    float64
	}{
		{"0.6", 750, 750},
		{"0.10", 750, 750},
		{"0.13", 900, 900},
		{"0.13", 100, stepOverheadUs},
		{"0.14", 100, 100},
		{"0.15", 750, 750},
	} {
		v, err := formats.ParseVLLMVersion(tc.version)
		if err != nil {
			t.Fatal(err)
		}
		c := Corrections{HostUs: tc.host}
		e := d.WithEngine(v, 0)
		e.corr = &c
		if got := e.overheadUs(); got != tc.want {
			t.Errorf("vLLM %s, fitted host %.0f µs: overhead %.0f µs, want %.0f", tc.version, tc.host, got, tc.want)
		}
		if got := e.Decode(8, 1024).Overhead; got != tc.want {
			t.Errorf("vLLM %s: a decode step's overhead term %.0f µs, want %.0f", tc.version, got, tc.want)
		}
		note := strings.Join(e.TermsNote(), "\n")
		if bound := strings.Contains(note, "lower bound"); bound == v.AsyncScheduling() {
			t.Errorf("vLLM %s: the note calls the overhead a lower bound: %v, want %v:\n%s", tc.version, bound, !v.AsyncScheduling(), note)
		}
	}
}
