package llm

import (
	"fmt"
	"math"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/gpus"
	"github.com/plan-dev/plan/profiler/kerneltab"
	"github.com/plan-dev/plan/profiler/roofline"
)

// Breakdown is the analytic time of one engine step by term, µs. The kernel terms are
// summed (the engine runs them one after the other on each GPU); Overhead is the per-step
// host work (scheduling, input preparation, sampling) that does not overlap them.
type Breakdown struct {
	// GEMM: the Q/K/V, output, gate/up and down projections of every layer and the LM head.
	GEMM float64 `json:"gemm_us"`
	// Attention: prefill (FlashAttention, compute-bound) or decode (KV read) attention.
	Attention float64 `json:"attention_us"`
	// MoE: the fused expert layers (routing, the top-k experts' GEMMs, activation) of a
	// mixture-of-experts model; the router's and shared experts' GEMMs are in GEMM.
	MoE float64 `json:"moe_us,omitempty"`
	// AllReduce: two tensor-parallel all-reduces per layer and one after the embedding.
	AllReduce float64 `json:"allreduce_us"`
	// Elementwise: RMSNorms, rotary embedding, SiLU-and-mul and the residual add.
	Elementwise float64 `json:"elementwise_us"`
	// Overhead: the per-step host overhead.
	Overhead float64 `json:"overhead_us"`
	// Sources are the measured-table points the kernel terms came from (none for a
	// roofline estimate): `plan profile --explain` prints them.
	Sources []Source `json:"sources,omitempty"`
}

// Source is one kernel of a term and the measured-table point its time came from.
type Source struct {
	Term  string          `json:"term"` // gemm, attention, moe or allreduce
	Point kerneltab.Point `json:"point"`
}

// Kernels is the GPU time of the step: every term but the overhead.
func (b Breakdown) Kernels() float64 {
	return b.GEMM + b.Attention + b.MoE + b.AllReduce + b.Elementwise
}

// Total is the step time.
func (b Breakdown) Total() float64 { return b.Kernels() + b.Overhead }

// Deployment is a model served on TP GPUs of one type joined by Link.
type Deployment struct {
	Model Model
	GPU   gpus.Spec
	TP    int
	Link  roofline.Link
	k     roofline.Kernels
	// tab is the GPU's measured kernel tables (profiler/kerneltab); nil where there are
	// none, or where the GPUs are joined by a link other than the one the tables' GPUs were
	// measured on (PCIe between SXM GPUs): the roofline then times every kernel.
	tab *kerneltab.Tables
	// kvFP8: the KV cache is FP8 (vLLM's --kv-cache-dtype fp8): attention reads the
	// measured FP8-cache kernels, and a token's KV is half the bytes.
	kvFP8 bool
	// ep: the experts are spread over the TP GPUs whole (vLLM's --enable-expert-parallel)
	// rather than each split TP ways; see moeUs.
	ep bool
	// version is the vLLM release whose engine runs the steps (formats.VLLMVersion; zero:
	// formats.DefaultVLLMVersion), graphSeqs the engine's max_num_seqs (0: the GPU's
	// default), which sets its largest CUDA-graph size (cudaGraphMaxTokens).
	version   formats.VLLMVersion
	graphSeqs int
	// corr are the fitted corrections the step model applies (nil: the fitted ones,
	// FittedCorrections; a fit passes its candidates).
	corr *Corrections
}

// Corrections are the step model's learned terms: what no kernel table measures, fitted
// globally — one value for every model, GPU and run — on the real-run validation set
// (bench/vllmruns) and reported with their leave-one-run-out error (fitted_corrections.go).
type Corrections struct {
	// HostUs is the per-step host time an engine with async scheduling (vLLM 0.14 on)
	// leaves exposed, µs: the scheduler works a step ahead, so only what cannot overlap the
	// GPU remains of the synchronous engine's stepOverheadUs.
	HostUs float64 `json:"async_host_overhead_us"`
	// ElementwiseScale is the compiled elementwise efficiency: the share of the elementwise
	// kernels' eager cost (RMSNorm, rotary embedding, SiLU-and-mul, residual add, timed as
	// separate kernels from HBM: roofline.ElementwiseUs) a V1 engine pays, which compiles
	// them into fused kernels replayed in CUDA graphs and reads step-sized activations from
	// L2 rather than HBM.
	ElementwiseScale float64 `json:"compiled_elementwise_scale"`
}

// FittedCorrections are the corrections fitted on the validation set.
func FittedCorrections() Corrections {
	return Corrections{HostUs: asyncStepOverheadUs, ElementwiseScale: compiledElementwiseScale}
}

// corrections are d's: a fit's candidates, or the fitted ones.
func (d Deployment) corrections() Corrections {
	if d.corr != nil {
		return *d.corr
	}
	return FittedCorrections()
}

// WithEngine returns d run by vLLM release v with max_num_seqs seqs (0: the GPU's default):
// the release decides the per-step host overhead (overheadUs), the sequence budget the
// largest step vLLM replays as a CUDA graph.
func (d Deployment) WithEngine(v formats.VLLMVersion, seqs int) Deployment {
	d.version, d.graphSeqs = v, seqs
	return d
}

// overheadUs is the per-step host time the GPU waits for: the scheduler, input preparation
// and sampling's host side. With async scheduling (vLLM 0.14 on) the scheduler works one
// step ahead while the GPU runs, so only what cannot overlap remains: Corrections.HostUs,
// fitted on the real-run validation set. A synchronous engine (V0; V1 before async
// scheduling) runs all of it between steps, so it waits at least as long as the async one
// is left waiting: the larger of that fitted part and stepOverheadUs, the estimate of the
// whole host time set before any real run was seen (and below what the async engine alone
// leaves exposed). What async scheduling hides beyond that is not measured here, so this
// is a lower bound.
func (d Deployment) overheadUs() float64 {
	if d.Version().AsyncScheduling() {
		return d.corrections().HostUs
	}
	return syncStepOverheadUs(d.corrections())
}

// syncStepOverheadUs is a synchronous engine's per-step host time under corrections c (see
// overheadUs).
func syncStepOverheadUs(c Corrections) float64 {
	return math.Max(stepOverheadUs, c.HostUs)
}

// elementwiseScale is the share of the eager elementwise cost a step of tokens rows pays:
// under V1 (torch.compile fuses the norms with the residual add, SiLU with the multiply),
// on a step whose largest elementwise working set — the MLP activation's gate and up read
// and product written, or a fused add-norm's two reads and two writes — fits the GPU's L2,
// the compiled elementwise efficiency (Corrections.ElementwiseScale): the kernels read what
// the GEMM before them just wrote, from L2 rather than HBM. Larger steps, and V0, pay it
// all.
func (d Deployment) elementwiseScale(tokens int) float64 {
	if !d.Version().V1() {
		return 1
	}
	m := d.Model
	inter := max(m.Intermediate, 0)
	if m.MoE != nil {
		inter = max(inter, m.MoE.SharedIntermediate)
	}
	ws := float64(tokens) * max(6*float64(inter/d.TP), 8*float64(m.Hidden))
	if ws > float64(d.GPU.L2Bytes) {
		return 1
	}
	return d.corrections().ElementwiseScale
}

// Version is the vLLM release the deployment's steps model.
func (d Deployment) Version() formats.VLLMVersion {
	if d.version.Minor == 0 {
		return (*formats.LLMEngine)(nil).Version()
	}
	return d.version
}

// graphMaxTokens is the largest step the engine replays as a CUDA graph: vLLM's default
// max_cudagraph_capture_size, min(2 × max_num_seqs, 512) (its compilation config); larger
// steps run eagerly.
func (d Deployment) graphMaxTokens() int {
	return min(2*d.graphSeqsOrDefault(), cudaGraphMaxTokens)
}

// graphSeqsOrDefault is the engine's max_num_seqs, or the GPU's default.
func (d Deployment) graphSeqsOrDefault() int {
	if d.graphSeqs > 0 {
		return d.graphSeqs
	}
	_, seqs := formats.DefaultBatchedTokens(d.GPU.Name)
	return seqs
}

// WithExpertParallel returns d with its experts placed whole on the GPUs (expert
// parallelism over the tensor-parallel group), after CheckEP.
func (d Deployment) WithExpertParallel() (Deployment, error) {
	if err := d.Model.CheckEP(d.TP); err != nil {
		return d, err
	}
	d.ep = true
	return d, nil
}

// WithKVCache returns d with an FP8 (fp8) or BF16 KV cache.
func (d Deployment) WithKVCache(fp8 bool) Deployment {
	d.kvFP8 = fp8
	return d
}

// kvDType is the tables' name for the cache's dtype.
func (d Deployment) kvDType() kerneltab.DType {
	if d.kvFP8 {
		return kerneltab.FP8
	}
	return kerneltab.BF16
}

// NewDeployment checks the tensor-parallel degree and the link.
func NewDeployment(m Model, g gpus.Spec, tp int, link roofline.Link) (Deployment, error) {
	if err := m.CheckTP(tp); err != nil {
		return Deployment{}, err
	}
	if err := CheckWeights(m.Weights, g); err != nil {
		return Deployment{}, err
	}
	d := Deployment{Model: m, GPU: g, TP: tp, Link: link, k: roofline.NewKernels(g)}
	gbps, l := d.k.LinkGBps(link)
	if tp > 1 && gbps <= 0 {
		return Deployment{}, fmt.Errorf("link %s: %s has none", l, g.Name)
	}
	if _, native := d.k.LinkGBps(roofline.LinkAuto); kerneltab.Has(g.Name) && (tp == 1 || l == native) {
		t, err := kerneltab.Load(g.Name)
		if err != nil {
			return Deployment{}, err
		}
		d.tab = t
	}
	return d, nil
}

// Measured reports whether the kernel terms come from measured tables (else the roofline
// estimates them: "estimated").
func (d Deployment) Measured() bool { return d.tab != nil }

// StepTimes is the profile's label for where its step times come from.
func (d Deployment) StepTimes() string {
	if d.tab != nil {
		s := "measured: " + d.tab.System + " vLLM kernel tables (NVIDIA AIConfigurator)"
		if aside := d.SetAside(); aside != "" {
			s += "; " + SetAsideLabel + ": " + aside
		}
		return s
	}
	var band []string
	for _, op := range []string{"gemm", "prefill", "decode"} {
		e := roofline.EstimateErrorPct[op]
		band = append(band, fmt.Sprintf("%s %.0f%% (p90 %.0f%%)", op, e[0], e[1]))
	}
	from := "uncalibrated defaults"
	if n := roofline.NearestMeasured(d.GPU, ""); n != "" && n != d.GPU.Name {
		from = n + "'s fitted constants"
	} else if n == d.GPU.Name {
		from = "its own fitted constants (over a link its tables were not measured on)"
	}
	return "estimated: roofline with " + from + "; leave-one-GPU-out error " + strings.Join(band, ", ")
}

// cudaGraphMaxTokens bounds the largest step vLLM replays as a CUDA graph (its default
// capture sizes end at min(2 × max_num_seqs, 512) tokens: graphMaxTokens): decode steps and
// small mixed steps run graphed, large prefills eagerly — which decides which of the
// all-reduce tables' rows (graph or eager) a step pays.
const cudaGraphMaxTokens = 512

// gemmUs is one decoder linear layer of m tokens (n outputs, k inputs) on one GPU, in the
// model's weight dtype (FP8 on the A100 runs weight-only: kerneltab scales the BF16
// measurement by the weight-read floors); a dtype the GPU's tables lack otherwise is timed
// as BF16.
func (d Deployment) gemmUs(b *Breakdown, m, n, k int) float64 {
	return d.gemmAt(b, d.Model.Weights.gemmDType(), m, n, k)
}

// gemmAt is one linear layer in dtype dt (the LM head and routers stay BF16).
func (d Deployment) gemmAt(b *Breakdown, dt kerneltab.DType, m, n, k int) float64 {
	if d.tab != nil && m > 0 {
		us, p, err := d.tab.GEMMUs(dt, m, n, k)
		if err != nil && dt != kerneltab.BF16 {
			us, p, err = d.tab.GEMMUs(kerneltab.BF16, m, n, k)
		}
		if err == nil {
			b.Sources = append(b.Sources, Source{Term: "gemm", Point: p})
			return us
		}
	}
	return d.k.GEMMUs(m, n, k)
}

// mustDeployment is NewDeployment for degrees already checked (GPUCount's).
func mustDeployment(m Model, g gpus.Spec, tp int) Deployment {
	d, err := NewDeployment(m, g, tp, roofline.LinkAuto)
	if err != nil {
		// GPUCount picks powers of two up to 8; a catalogue model they do not divide is a
		// catalogue error, which TestCatalogueShards rules out.
		panic(err)
	}
	return d
}

// LayerGEMMUs is the projection GEMMs of one dense layer over tokens rows on one GPU: QKV
// (the GPU's query and KV heads), output, gate and up fused, down.
func (d Deployment) LayerGEMMUs(tokens int) float64 {
	var b Breakdown
	return d.attnProjUs(&b, tokens) + d.mlpUs(&b, tokens, d.Model.Intermediate)
}

// attnProjUs is one layer's QKV and output projections.
func (d Deployment) attnProjUs(b *Breakdown, tokens int) float64 {
	if d.Model.MLA != nil {
		return d.mlaProjUs(b, tokens)
	}
	m, tp := d.Model, d.TP
	qd := m.Heads / tp * m.HeadDim
	kvd := m.kvHeadsPerGPU(tp) * m.HeadDim
	dt := m.attnDType()
	return d.gemmAt(b, dt, tokens, qd+2*kvd, m.Hidden) + d.gemmAt(b, dt, tokens, m.Hidden, qd)
}

// mlpUs is a gated MLP of intermediate size inter split over the TP GPUs: gate and up
// fused, down (0 for inter 0).
func (d Deployment) mlpUs(b *Breakdown, tokens, inter int) float64 {
	if inter <= 0 {
		return 0
	}
	i := max(inter/d.TP, 1)
	return d.gemmUs(b, tokens, 2*i, d.Model.Hidden) + d.gemmUs(b, tokens, d.Model.Hidden, i)
}

// LayerElementwiseUs is the elementwise kernels of one dense layer over tokens rows: two
// RMSNorms (read and write tokens×hidden), rotary embedding of the GPU's query and key heads
// (read and write), SiLU-and-mul (read gate and up, write one) and one residual add (read
// two, write one; vLLM fuses the other into the next norm) — the kernels of the measured
// table.
func (d Deployment) LayerElementwiseUs(tokens int) float64 {
	return d.layerElementwiseUs(tokens, d.Model.Intermediate)
}

// layerElementwiseUs: inter is the MLP whose activation runs as its own kernel (a fused MoE
// layer applies its experts' inside; its shared expert's runs apart).
func (d Deployment) layerElementwiseUs(tokens, inter int) float64 {
	m, tp := d.Model, d.TP
	t, h := float64(tokens), float64(m.Hidden)
	norm := d.k.ElementwiseUs(4 * t * h)
	rope := d.k.ElementwiseUs(4 * t * float64((m.Heads/tp+m.kvHeadsPerGPU(tp))*m.HeadDim))
	act := d.k.ElementwiseUs(6 * t * float64(inter/tp))
	add := d.k.ElementwiseUs(6 * t * h)
	return 2*norm + rope + act + add
}

// AllReduceUs is one all-reduce of a tokens×hidden BF16 activation across the GPUs.
func (d Deployment) AllReduceUs(tokens int) float64 {
	return d.allReduceUs(&Breakdown{}, tokens)
}

// allReduceUs: where the GPU is measured, vLLM's own all-reduce as it runs it
// (tensor_model_parallel_all_reduce: the custom one-shot/two-shot kernel for the message
// sizes it takes — up to 8 MiB, on NVLink or, for two GPUs, PCIe peer-to-peer — and its
// NCCL fallback beyond; the measured table is of that call, so the choice is the one vLLM
// makes), graph-captured for steps vLLM replays as CUDA graphs; elsewhere the roofline's
// ring all-reduce.
func (d Deployment) allReduceUs(b *Breakdown, tokens int) float64 {
	if d.TP <= 1 || tokens <= 0 {
		return 0
	}
	elems := float64(tokens * d.Model.Hidden)
	if d.tab != nil {
		var us float64
		var p kerneltab.Point
		var err error
		if d.customAllReduce() {
			us, p, err = d.tab.AllReduceUs(tokens <= d.graphMaxTokens(), d.TP, elems)
		} else {
			us, p, err = d.tab.NCCLUs("all_reduce", d.TP, elems)
		}
		if err == nil {
			b.Sources = append(b.Sources, Source{Term: "allreduce", Point: p})
			return us
		}
	}
	return d.k.AllReduceUs(2*elems, d.TP, d.Link)
}

// customAllReduceSizes are the tensor-parallel degrees vLLM's custom all-reduce runs on
// (its supported world sizes); other degrees all-reduce through NCCL.
var customAllReduceSizes = map[int]bool{2: true, 4: true, 6: true, 8: true}

// customAllReduce reports whether vLLM runs its custom all-reduce on this group: at a
// supported size, and over NVLink unless the group is two GPUs (vLLM's custom_all_reduce.py
// disables it "on more than two PCIe-only GPUs", which then all-reduce through NCCL — the
// L40S at TP 4 or 8). The measured tables are used on the GPU's own link only
// (NewDeployment), so that link is the GPU's.
func (d Deployment) customAllReduce() bool {
	return customAllReduceSizes[d.TP] && (d.TP == 2 || d.GPU.NVLinkGBps > 0)
}

// logitsGatherUs gathers the vocabulary-parallel logits of rows tokens across the GPUs
// (vLLM's LogitsProcessor all-gathers them on CUDA): NCCL's all_gather of rows × vocab
// BF16 values, measured where the GPU is; elsewhere a ring all-gather moves half the bytes
// an all-reduce of the gathered tensor would.
func (d Deployment) logitsGatherUs(b *Breakdown, rows int) float64 {
	if d.TP <= 1 || rows <= 0 {
		return 0
	}
	elems := float64(rows * d.Model.Vocab)
	if d.tab != nil {
		if us, p, err := d.tab.NCCLUs("all_gather", d.TP, elems); err == nil {
			b.Sources = append(b.Sources, Source{Term: "allreduce", Point: p})
			return us
		}
	}
	return d.k.AllReduceUs(elems, d.TP, d.Link)
}

// allReduces per step: after attention and after the MLP in every layer (Megatron tensor
// parallelism, llm-deploy-search.md §3) and after the vocabulary-parallel embedding (161 for
// an 80-layer model: llm-engine-2.md, "Measured H100 kernel facts").
func (d Deployment) allReduces() int { return 2*d.Model.Layers + 1 }

// step is the terms common to prefill and decode: tokens rows through every layer, logits
// for logits rows, attention (already in b) given.
func (d Deployment) step(b Breakdown, tokens, logits int) Breakdown {
	m := d.Model
	l, dense, moe := float64(m.Layers), float64(m.denseLayers()), float64(m.moeLayers())
	b.GEMM = l*d.attnProjUs(&b, tokens) + d.gemmAt(&b, kerneltab.BF16, logits, m.Vocab/d.TP, m.Hidden)
	if dense > 0 {
		b.GEMM += dense * d.mlpUs(&b, tokens, m.Intermediate)
		b.Elementwise = dense * d.layerElementwiseUs(tokens, m.Intermediate)
	}
	if m.MoE != nil {
		// The router (replicated, BF16) and the shared expert (a dense MLP split TP ways).
		b.GEMM += moe * (d.gemmAt(&b, kerneltab.BF16, tokens, m.MoE.Experts, m.Hidden) + d.mlpUs(&b, tokens, m.MoE.SharedIntermediate))
		b.Elementwise += moe * d.layerElementwiseUs(tokens, m.MoE.SharedIntermediate)
		b.MoE = moe * d.moeUs(&b, tokens)
	}
	b.Elementwise *= d.elementwiseScale(tokens)
	b.Overhead = d.overheadUs()
	if d.TP > 1 {
		b.AllReduce = float64(d.allReduces())*d.allReduceUs(&b, tokens) + d.logitsGatherUs(&b, logits)
	}
	return b
}

// Prefill is one step prefilling tokens prompt tokens of one sequence whose KV cache holds
// ctx tokens already (a chunk of a longer prompt when ctx > 0); logits for its last token.
func (d Deployment) Prefill(tokens, ctx int) Breakdown {
	var b Breakdown
	m := d.Model
	t := d.prefillAttentionUs(&b, tokens, ctx)
	b.Attention = float64(m.fullLayers()) * t
	for _, l := range m.boundedLayers() {
		if l.layers == 0 {
			continue
		}
		// A sliding (or chunked) layer visits the window's pairs of the chunk's
		// (window.go), and never costs less than the chunk alone up to a window's length
		// as a prompt.
		w := t * windowPairs(tokens, ctx, l.span) / windowPairs(tokens, ctx, 0)
		if tokens > 0 {
			w = max(w, d.prefillAttentionUs(&Breakdown{}, min(tokens, l.span), 0))
		}
		b.Attention += float64(l.layers) * min(w, t)
	}
	return d.step(b, tokens, 1)
}

// prefillAttentionUs is one layer's attention over a chunk of tokens after ctx cached
// ones. The measured tables hold whole prompts (no cached prefix), so a chunk is the
// difference of two: causal attention over ctx+tokens less that over ctx — exact for the
// quadratic work, and never less than the chunk alone as a prompt.
func (d Deployment) prefillAttentionUs(b *Breakdown, tokens, ctx int) float64 {
	if d.Model.MLA != nil {
		return d.mlaPrefillUs(b, tokens, ctx)
	}
	m, tp := d.Model, d.TP
	q, kv := m.Heads/tp, m.kvHeadsPerGPU(tp)
	if d.tab != nil && tokens > 0 {
		at := func(n int) (float64, kerneltab.Point, error) {
			return d.tab.ContextAttentionUs(1, n, q, kv, m.HeadDim, d.kvDType())
		}
		whole, p, err := at(ctx + tokens)
		if err == nil {
			alone, _, err1 := at(tokens)
			if err1 == nil {
				t := alone
				if ctx > 0 {
					before, _, err2 := at(ctx)
					if err2 != nil {
						return d.k.PrefillAttentionUs(tokens, ctx, q, kv, m.HeadDim)
					}
					t = max(whole-before, alone)
				}
				b.Sources = append(b.Sources, Source{Term: "attention", Point: p})
				return t
			}
		}
	}
	return d.k.PrefillAttentionUs(tokens, ctx, q, kv, m.HeadDim)
}

// Decode is one decode step of batch sequences whose KV caches hold ctx tokens each.
func (d Deployment) Decode(batch int, ctx float64) Breakdown {
	var b Breakdown
	b.Attention = d.layersDecodeAttentionUs(&b, batch, ctx)
	return d.step(b, batch, batch)
}

// layersDecodeAttentionUs is every layer's decode attention: the full-attention layers over
// ctx tokens, the sliding (and chunked) ones over at most their window (chunk).
func (d Deployment) layersDecodeAttentionUs(b *Breakdown, batch int, ctx float64) float64 {
	m := d.Model
	us := float64(m.fullLayers()) * d.decodeAttentionUs(b, batch, ctx)
	for _, l := range m.boundedLayers() {
		if l.layers == 0 {
			continue
		}
		us += float64(l.layers) * d.decodeAttentionUs(b, batch, min(ctx, float64(l.span)))
	}
	return us
}

func (d Deployment) decodeAttentionUs(b *Breakdown, batch int, ctx float64) float64 {
	if d.Model.MLA != nil {
		return d.mlaDecodeUs(b, batch, ctx)
	}
	m, tp := d.Model, d.TP
	q, kv := m.Heads/tp, m.kvHeadsPerGPU(tp)
	if d.tab != nil && batch > 0 {
		if us, p, _, err := d.tab.GenerationAttentionFromMemoryUs(batch, q, kv, m.HeadDim, d.kvDType(), ctx); err == nil {
			b.Sources = append(b.Sources, Source{Term: "attention", Point: p})
			return us
		}
	}
	return d.k.DecodeAttentionUs(batch, float64(batch)*ctx, q, kv, m.HeadDim)
}

// DecodeUsPerContextToken is the decode attention time per token of context held in the KV
// caches (the iteration model's context term): where the GPU is measured, the slope of the
// measured decode attention between 256 and 4,096 tokens of context at a batch of 64, over
// every layer; elsewhere the KV bytes a token reads at the roofline's bandwidth share.
func (d Deployment) DecodeUsPerContextToken() float64 {
	m := d.Model
	if d.tab != nil {
		const batch, lo, hi = 64, 256.0, 4096.0
		var b Breakdown
		tlo, thi := d.layersDecodeAttentionUs(&b, batch, lo), d.layersDecodeAttentionUs(&b, batch, hi)
		if slope := (thi - tlo) / (batch * (hi - lo)); slope > 0 {
			return slope
		}
	}
	// A sliding layer reads no more once its window is full: only the other layers' share
	// of a token's KV grows with the context (a chunked layer's too, through its chunk of
	// thousands of tokens).
	perGPU := float64(m.kvBytesPerTokenTP(d.TP)*kvElemBytes(d.kvFP8)/2) / float64(d.TP)
	perGPU *= float64(m.Layers-m.SlidingLayers) / float64(m.Layers)
	return perGPU / (d.k.Params.EtaMem * d.GPU.MemBWGBps * 1e3)
}

// Cell is one (phase, size) point of the step model, as `plan profile --llm --explain`
// reports it.
type Cell struct {
	Phase   string    `json:"phase"` // "prefill" or "decode"
	Tokens  int       `json:"tokens"`
	Batch   int       `json:"batch"`
	Context int       `json:"context"`
	Terms   Breakdown `json:"terms"`
	TotalUs float64   `json:"total_us"`
}

// ExplainCells are the cells the published H100 kernel timings cover (CALIBRATION.md):
// prefill of 512, 2,048 and 8,192 tokens of one sequence, and decode of 1, 8, 32 and 128
// sequences at 2,048 tokens of context.
func (d Deployment) ExplainCells() []Cell {
	var out []Cell
	for _, n := range []int{512, 2048, 8192} {
		b := d.Prefill(n, 0)
		out = append(out, Cell{Phase: "prefill", Tokens: n, Batch: 1, Terms: b, TotalUs: b.Total()})
	}
	for _, bs := range []int{1, 8, 32, 128} {
		b := d.Decode(bs, 2048)
		out = append(out, Cell{Phase: "decode", Tokens: bs, Batch: bs, Context: 2048, Terms: b, TotalUs: b.Total()})
	}
	return out
}

// TermsNote says where the terms no kernel table measures come from, for `plan profile
// --explain`: the release's per-step host overhead and the compiled elementwise share, with
// the fit's leave-one-run-out error where they are fitted.
func (d Deployment) TermsNote() []string {
	v := d.Version()
	loo := fmt.Sprintf("fitted on the real vLLM runs of bench/vllmruns; leave-one-run-out median error E2E %.1f%%, TTFT %.1f%%, ITL %.1f%%",
		CorrectionsLOO[0], CorrectionsLOO[1], CorrectionsLOO[2])
	var out []string
	if v.AsyncScheduling() {
		out = append(out, fmt.Sprintf("overhead: %.0f µs a step: vLLM %s schedules a step ahead of the GPU (async scheduling); what does not overlap it, %s", d.overheadUs(), v, loo))
	} else {
		out = append(out, fmt.Sprintf("overhead: %.0f µs a step: vLLM %s schedules between steps (synchronous), so it waits at least the host time vLLM 0.15 leaves exposed with async scheduling (%.0f µs, fitted on the real vLLM runs of bench/vllmruns); what async scheduling hides beyond it is unmeasured, so this is a lower bound", d.overheadUs(), v, d.corrections().HostUs))
	}
	if v.V1() {
		c := d.corrections()
		note := fmt.Sprintf("elementwise: %.2g× the eager kernels' time on steps whose activations fit the %d MiB L2 (vLLM %s compiles them into fused kernels), the full time on larger steps; %s", c.ElementwiseScale, d.GPU.L2Bytes>>20, v, loo)
		if c.ElementwiseScale <= 0 || c.ElementwiseScale >= 1 {
			note += "; at its bound: the runs do not separate these kernels from the per-step overhead"
		}
		out = append(out, note)
	}
	if m := d.Model; m.ChunkedLayers > 0 && v.V1() {
		out = append(out, fmt.Sprintf("cuda graphs: %d of the %d layers are chunked local attention (%d-token chunks), whose metadata builder vLLM declares unable to run in a full CUDA graph, so vLLM %s runs this model piecewise, each layer's attention launched eagerly between captured pieces; the step model does not charge those launches. Real runs of the one such model measured (Llama-4-Scout FP8 on 2×H100, bench/vllmruns) decoded %s",
			m.ChunkedLayers, m.Layers, m.AttentionChunk, v, piecewiseResidual))
		if v.ChunkedLocalHybrid() {
			out = append(out, fmt.Sprintf("kv groups: vLLM %s runs its hybrid KV cache manager for the chunked layers (a group each of full and chunked layers, window.go), which builds the attention metadata and local virtual batches per group each step: about 2 ms a step before PR #29627 cached the builds across groups (PR #21761's measurement), about 1 ms after it (PR #46553, Llama-4-Maverick on MI300X); not charged", v))
		}
	}
	if d.tab != nil && d.Model.MLA == nil {
		out = append(out, fmt.Sprintf("attention: decode points measured over a KV cache that fits the %d MiB L2 (the benchmark replays one layer over one cache) are read from memory, as a serving step reads them: the line through the first two measured contexts above the L2",
			d.GPU.L2Bytes>>20))
	}
	return out
}

// piecewiseResidual is what the validation set shows of a piecewise-captured model's decode
// against the step model (bench vllm-runs, Llama-4-Scout FP8 on 2×H100: ITL by stage, and its
// single-stream decode): a residual one model cannot separate from a per-model constant, so
// it is reported, not fitted.
const piecewiseResidual = "19% slower than predicted at one sequence (bench vllm-runs' single-stream table), 23% slower at ~11 sequences (run 17, 2.5 req/s), within 7% at 27–66 sequences, and 17% slower at 41 sequences of ~1,800-token contexts (run 48)"

// SetAsideLabel marks a profile's step times that read around a measured table set aside as
// suspect (profiler/kerneltab's floor check), so a planner ranking candidates can say so.
const SetAsideLabel = "table set aside"

// SetAside names the measured slice the deployment's MoE layers read around (its points far
// above their floor, kerneltab.Point.SetAside), or "".
func (d Deployment) SetAside() string {
	if d.tab == nil || d.Model.MoE == nil {
		return ""
	}
	var b Breakdown
	d.moeUs(&b, 1)
	for _, s := range b.Sources {
		if s.Point.SetAside != "" {
			return s.Point.SetAside + "; read as the BF16 measurement scaled by the floors"
		}
	}
	return ""
}
