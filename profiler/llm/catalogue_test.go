package llm

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/profiler/gpus"
	"github.com/plan-dev/plan/profiler/kerneltab"
	"github.com/plan-dev/plan/profiler/roofline"
)

// TestCatalogue: every embedded config reads, names its source, and profiles on every
// measured GPU that eight of can hold it; mixture-of-experts models also with expert
// parallelism; what does not fit says so.
func TestCatalogue(t *testing.T) {
	if _, err := loadCatalogue(); err != nil {
		t.Fatal(err)
	}
	entries := Catalogue()
	if len(entries) != len(Names()) || len(entries) < 25 {
		t.Fatalf("%d index entries, %d models: want one each, at least 25", len(entries), len(Names()))
	}
	moe := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Source, "https://huggingface.co/"+e.HF+"/") {
			t.Errorf("%s: source %q is not its HF id %s's", e.Name, e.Source, e.HF)
		}
		m, _ := Lookup(e.Name)
		if m.MoE != nil {
			moe++
			if e.ActiveParamsB <= 0 {
				t.Errorf("%s: a mixture-of-experts model without active_params_b", e.Name)
			} else if r := m.ActiveParams() / 1e9 / e.ActiveParamsB; r < 0.8 || r > 1.2 { // cards differ on counting the embedding
				t.Errorf("%s: shapes give %.1fB active parameters, the card %.1fB", e.Name, m.ActiveParams()/1e9, e.ActiveParamsB)
			}
		}
		fits := 0
		for _, g := range kerneltab.GPUs() {
			p, err := EstimateModel(m, g, 0, roofline.LinkAuto, "", 0)
			if err != nil {
				if !strings.Contains(err.Error(), "does not fit 8") {
					t.Errorf("%s on %s: %v", e.Name, g, err)
				}
				continue
			}
			fits++
			if p.KVCapacityTokens < minKVTokens || p.DecodeUsPerToken <= 0 || p.PrefillUsPerToken <= 0 {
				t.Errorf("%s on %s: %+v", e.Name, g, p)
			}
			if m.MoE != nil && p.GPUCount > 1 && m.CheckEP(p.GPUCount) == nil {
				spec, _ := gpus.Lookup(g)
				d, _ := NewDeployment(m, spec, p.GPUCount, roofline.LinkAuto)
				if dep, err := d.WithExpertParallel(); err != nil || dep.Decode(32, 512).MoE <= 0 {
					t.Errorf("%s on %d × %s with expert parallelism: %v", e.Name, p.GPUCount, g, err)
				}
			}
		}
		if fits == 0 {
			t.Errorf("%s: fits no measured GPU", e.Name)
		}
	}
	if moe < 8 {
		t.Errorf("%d mixture-of-experts models, want the eight families' sizes", moe)
	}
}

// TestMoEStep: a mixture-of-experts step reads the measured fused-MoE table at the model's
// own shape where NVIDIA measured it (Mixtral on H100) and scales where not (its TP 8
// split of a shape measured at other splits is still measured); expert parallelism times
// the whole-expert split; an FP8 checkpoint halves the weights; FP4 needs Blackwell; EP
// must divide the experts.
func TestMoEStep(t *testing.T) {
	mixtral, _ := Lookup("mixtral-8x7b")
	h100, _ := gpus.Lookup("H100")
	d, err := NewDeployment(mixtral, h100, 2, roofline.LinkAuto)
	if err != nil {
		t.Fatal(err)
	}
	b := d.Decode(64, 1024)
	var moeSrc []Source
	for _, s := range b.Sources {
		if s.Term == "moe" {
			moeSrc = append(moeSrc, s)
		}
	}
	if b.MoE <= 0 || len(moeSrc) == 0 || !moeSrc[0].Point.Measured || !strings.Contains(moeSrc[0].Point.String(), "bfloat16/4096/14336/2/8/2/1") {
		t.Fatalf("Mixtral TP2 decode: moe %g µs from %v", b.MoE, moeSrc)
	}
	ep, err := d.WithExpertParallel()
	if err != nil {
		t.Fatal(err)
	}
	if e := ep.Decode(64, 1024); e.MoE == b.MoE || e.GEMM != b.GEMM || e.Attention != b.Attention {
		t.Errorf("EP changes only the expert term: TP %+v, EP %+v", b, e)
	}
	fp8, err := mixtral.Quantize("fp8")
	if err != nil {
		t.Fatal(err)
	}
	if r := float64(fp8.WeightBytes()) / float64(mixtral.WeightBytes()); r < 0.5 || r > 0.52 {
		t.Errorf("FP8 weights / BF16: %.3f, want about a half (embeddings stay BF16)", r)
	}
	if KVBudget(fp8, h100, 2, false).Tokens <= KVBudget(mixtral, h100, 2, false).Tokens {
		t.Error("FP8 weights leave no more KV room")
	}
	nv, _ := mixtral.Quantize("nvfp4")
	if _, err := NewDeployment(nv, h100, 2, roofline.LinkAuto); err == nil || !strings.Contains(err.Error(), "needs a Blackwell GPU") {
		t.Errorf("NVFP4 on H100: %v", err)
	}
	b200, _ := gpus.Lookup("B200")
	if d4, err := NewDeployment(nv, b200, 1, roofline.LinkAuto); err != nil || d4.Decode(8, 512).MoE <= 0 {
		t.Errorf("NVFP4 on B200: %v", err)
	}
	if err := mixtral.CheckEP(3); err == nil || !strings.Contains(err.Error(), "does not divide mixtral-8x7b's 8 experts") {
		t.Errorf("EP 3: %v", err)
	}
	if llama, _ := Lookup("llama-3.1-8b"); llama.CheckEP(2) == nil {
		t.Error("EP on a dense model accepted")
	}
	if _, err := mixtral.Quantize("int3"); err == nil {
		t.Error("quantization int3 accepted")
	}
	oss, _ := Lookup("gpt-oss-20b")
	if _, err := oss.Quantize("fp8"); err == nil || !strings.Contains(err.Error(), "mxfp4 checkpoint") {
		t.Errorf("gpt-oss as fp8: %v", err)
	}
}

// TestDeepSeekV3: the latent-attention config reads as published — 671B parameters, the KV
// cache 61 layers × (512 + 64) values a token, whole on every GPU — plans on eight H200s
// and eight B200s (its 671 GB of block-FP8 weights fit neither eight H100s nor A100s), and
// on the H200 its attention is NVIDIA's measured DeepSeek-V3 block, its experts the measured
// block-FP8 MoE at the model's shape.
func TestDeepSeekV3(t *testing.T) {
	m, err := Lookup("deepseek-v3")
	if err != nil {
		t.Fatal(err)
	}
	if r := m.ShapeParams() / 1e9 / 671; r < 0.98 || r > 1.02 || m.MLA == nil || !m.BlockFP8 || m.Weights != WeightsFP8 || m.MoE.DenseLayers != 3 {
		t.Fatalf("%.1fB parameters (×%.3f of 671B), %+v %+v", m.ShapeParams()/1e9, r, m.MLA, m.MoE)
	}
	if got := m.KVBytesPerToken(); got != 61*576*2 {
		t.Errorf("KV %d bytes a token, want %d", got, 61*576*2)
	}
	for _, g := range []string{"H100", "A100"} {
		if _, err := EstimateModel(m, g, 8, roofline.LinkAuto, "", 0); err == nil {
			t.Errorf("%s: 671 GB fits eight", g)
		}
	}
	h200, _ := gpus.Lookup("H200")
	for _, g := range []string{"H200", "B200"} {
		p, err := EstimateModel(m, g, 8, roofline.LinkAuto, "", 0)
		if err != nil {
			t.Fatalf("%s: %v", g, err)
		}
		if p.KVCapacityTokens < 100000 {
			t.Errorf("%s: %d KV tokens", g, p.KVCapacityTokens)
		}
	}
	d, err := NewDeployment(m, h200, 8, roofline.LinkAuto)
	if err != nil {
		t.Fatal(err)
	}
	b := d.Decode(64, 2048)
	var attn, moe bool
	for _, s := range b.Sources {
		attn = attn || (s.Term == "attention" && strings.HasPrefix(s.Point.String(), "mla_generation[fp8_block/bfloat16] num_heads=16 batch_size=64"))
		moe = moe || (s.Term == "moe" && strings.Contains(s.Point.String(), "fp8_block/7168/2048/8/256/8/1") && s.Point.ScaledFrom == "")
	}
	if !attn || !moe || b.MoE <= 0 || b.Attention <= 0 {
		t.Errorf("DeepSeek-V3 on 8 × H200, decode of 64: attention measured %v, experts measured %v: %+v", attn, moe, b.Sources)
	}
}
