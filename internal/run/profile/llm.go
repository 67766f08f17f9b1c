package profile

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/profiler/gpus"
	"github.com/plan-dev/plan/profiler/llm"
	"github.com/plan-dev/plan/profiler/roofline"
)

// parseLLM checks --llm (comma-separated catalogue names, "all", or a profile file), --tp,
// --link and --explain.
func (r *profileRun) parseLLM() error {
	a := r.opt
	llmFlags := a.TPSet || a.LinkSet || a.Explain || a.KVCacheDtype != "" || a.Quantization != "" || a.ExpertParallel
	for _, p := range a.LLMConfigs {
		if a.Import != "" || isFile(a.LLM) {
			return run.UsageErrorf("--llm-config %s: profiles a model from its shapes: not with --import or an imported --llm profile", p)
		}
		ms, err := llm.ReadConfigs(r.ctx, p)
		if err != nil {
			if r.ctx.Err() != nil {
				return fmt.Errorf("--llm-config: %w", err)
			}
			return run.UsageErrorf("--llm-config: %v", err)
		}
		for _, m := range ms {
			m, note := configModel(p, m)
			if note != "" {
				r.configNotes = append(r.configNotes, note)
			}
			if slices.ContainsFunc(r.llmModels, func(x llm.Model) bool { return x.Name == m.Name }) {
				return run.UsageErrorf("--llm-config %s: model name %q is taken by another config: put the config in a directory of another name", p, m.Name)
			}
			r.llmModels = append(r.llmModels, m)
		}
	}
	if ids := noID(r.llmModels); len(ids) > 0 { // (a catalogue model's id the exports know)
		r.configNotes = append(r.configNotes, fmt.Sprintf("--llm-config: %s: no Hugging Face id (the config's _name_or_path is absent or a local path, which exists on this machine only): hf_model is left empty, and `plan export` asks for it; set hf_model in the profile to the model's id or its path on the serving machine", strings.Join(ids, ", ")))
	}
	switch {
	case a.LLM == "" && len(r.llmModels) > 0:
	case a.LLM == "":
		if llmFlags {
			return run.UsageErrorf("--tp, --link, --kv-cache-dtype, --quantization, --expert-parallel and --explain: only with --llm MODEL[,MODEL...]")
		}
		return nil
	case a.Import != "":
		// With --import any model may be named: the step log's engine (import.go).
		if llmFlags {
			return run.UsageErrorf("--tp, --link, --kv-cache-dtype, --quantization, --expert-parallel and --explain: only for analytic estimates (--llm MODEL[,MODEL...]), not with --import")
		}
		return nil
	case isFile(a.LLM):
		if llmFlags {
			return run.UsageErrorf("--tp, --link, --kv-cache-dtype, --quantization, --expert-parallel and --explain: only for analytic estimates (--llm MODEL[,MODEL...]), not an imported profile %s", a.LLM)
		}
		return nil
	}
	if d := a.KVCacheDtype; d != "" && !slices.Contains(formats.KVCacheDtypes, d) {
		return run.UsageErrorf("--kv-cache-dtype: %q: must be one of %s", d, strings.Join(formats.KVCacheDtypes, ", "))
	}
	if q := strings.ToLower(a.Quantization); q != "" && !slices.Contains(llm.Quantizations, q) {
		return run.UsageErrorf("--quantization: %q: must be one of %s", a.Quantization, strings.Join(llm.Quantizations, ", "))
	}
	if a.ExpertParallel && !a.TPSet {
		return run.UsageErrorf("--expert-parallel: needs --tp (the GPUs the experts are spread over)")
	}
	for _, raw := range strings.Split(a.LLM, ",") {
		if a.LLM == "" {
			break
		}
		raw = strings.TrimSpace(raw)
		name := strings.ToLower(raw)
		switch {
		case name == "":
			return run.UsageErrorf("--llm: %q: empty model name (separate names with commas)", a.LLM)
		case name == "all":
			for _, n := range llm.Names() {
				if !slices.Contains(r.llmNames, n) {
					r.llmNames = append(r.llmNames, n)
				}
			}
			continue
		}
		m, err := llm.Lookup(name)
		if err != nil && strings.Contains(raw, "/") {
			hm, herr := llm.LookupHF(raw)
			if herr != nil {
				return run.UsageErrorf("--llm: %v (or a catalogue name, \"all\", or a profile file to import)", herr)
			}
			if cat, _ := llm.Lookup(hm.Name); !strings.EqualFold(raw, cat.HF) {
				hm, note := hfIDModel(raw, hm, cat)
				r.configNotes = append(r.configNotes, note)
				if !slices.ContainsFunc(r.llmModels, func(x llm.Model) bool { return x.Name == hm.Name }) {
					r.llmModels = append(r.llmModels, hm)
				}
				continue
			}
			m, err = hm, nil
		}
		if err != nil {
			return run.UsageErrorf("--llm: %v (or a Hugging Face id, \"all\", or a profile file to import)", err)
		}
		if !slices.Contains(r.llmNames, m.Name) {
			r.llmNames = append(r.llmNames, m.Name)
		}
	}
	// A catalogue model also given by its config (configModel kept its name): profiled once,
	// from the user's config.
	r.llmNames = slices.DeleteFunc(r.llmNames, func(n string) bool {
		return slices.ContainsFunc(r.llmModels, func(x llm.Model) bool { return x.Name == n })
	})
	tps, err := parseIntList(a.TP, 1, 8)
	if err != nil {
		return run.UsageErrorf("--tp: %q: %v", a.TP, err)
	}
	r.tps = tps
	switch l := strings.ToLower(strings.TrimSpace(a.Link)); l {
	case "", "auto":
		r.link = roofline.LinkAuto
	case "nvlink", "pcie":
		r.link = roofline.Link(l)
	default:
		return run.UsageErrorf("--link: %q: must be auto, nvlink or pcie", a.Link)
	}
	return nil
}

// hfIDModel is how --llm profiles a Hugging Face id that is not a catalogue model's own but
// has one's shapes (llm.LookupHF: a base, chat or instruct variant, another organisation's
// copy, a quantized re-publication): as the model the id names, so the exports serve that
// checkpoint. It is named by the id's repository name, lower case (the organisation's too
// where that is a catalogue name: a catalogue name resolves to the catalogue's id), with
// hf_model the id; a re-publication the catalogue lists keeps its quantization. The note
// says which catalogue model's shapes it has.
func hfIDModel(id string, m, cat llm.Model) (llm.Model, string) {
	org, repo, _ := strings.Cut(strings.ToLower(id), "/")
	name := repo
	if _, err := llm.Lookup(name); err == nil {
		name = org + "-" + repo
	}
	if !strings.EqualFold(m.HF, id) {
		m.HF = id
	}
	m.Name = name
	quant := ""
	if m.Weights != cat.Weights || m.AttentionBF16 != cat.AttentionBF16 {
		quant = fmt.Sprintf(", with the quantization its checkpoint carries (%s weights; profiler/llm/catalogue/index.json)", m.Weights)
	}
	return m, fmt.Sprintf("--llm %s: the shapes of the catalogue's %s (profiler/llm/catalogue/%s.json)%s; profiled as model %q, hf_model %s: name %q in workloads and plans", id, cat.Name, cat.Name, quant, name, m.HF, name)
}

// configModel is how --llm-config profiles model m read from path p: as the user's model
// always, whatever its directory is called. A config named like a catalogue model keeps that
// name only when it is the catalogue's model (the same shapes and the same Hugging Face id),
// so the exports' id for the name and the planner's shapes for it are the config's own. Any
// other takes the name NAME-config, said in the note returned: plans resolve a catalogue name
// to the catalogue's shapes and id, which would silently replace the user's model.
func configModel(p string, m llm.Model) (llm.Model, string) {
	cat, err := llm.Lookup(m.Name)
	if err != nil {
		return m, ""
	}
	if cat.SameShapes(m) && m.HF == "" {
		// A copy of a published config (they rarely hold _name_or_path): the catalogue's model.
		return m, fmt.Sprintf("--llm-config %s: %s has the catalogue's shapes and no Hugging Face id of its own: profiled as the catalogue's %s, which the exports load as %s (set hf_model in the profile for another checkpoint)", p, m.Name, cat.Name, cat.HF)
	}
	if cat.SameShapes(m) && strings.EqualFold(m.HF, cat.HF) {
		return m, ""
	}
	why := "whose shapes differ"
	if cat.SameShapes(m) {
		why = fmt.Sprintf("whose Hugging Face id %s the config does not give (its _name_or_path: %q)", cat.HF, m.HF)
	}
	name := m.Name + "-config"
	for i := 2; ; i++ {
		if _, err := llm.Lookup(name); err != nil {
			break
		}
		name = fmt.Sprintf("%s-config-%d", m.Name, i)
	}
	note := fmt.Sprintf("--llm-config %s: profiled as model %q: %q is the catalogue's model (profiler/llm/catalogue/%s.json), %s; name %q in workloads and plans", p, name, m.Name, cat.Name, why, name)
	m.Name = name
	return m, note
}

// noID names the config models without an engine id (hf_model).
func noID(ms []llm.Model) []string {
	var out []string
	for _, m := range ms {
		if _, err := llm.Lookup(m.Name); err != nil && m.HF == "" {
			out = append(out, m.Name)
		}
	}
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("and %d more", len(out)-5))
	}
	return out
}

func (r *profileRun) llmProfiles(io *run.IO) ([]formats.LLMProfile, error) {
	if r.opt.Import != "" && !isFile(r.opt.LLM) {
		// A measured step log names its own engine (import.go).
		return r.importLog()
	}
	if r.llmNames == nil && r.llmModels == nil {
		ls, err := llm.Import(r.opt.LLM)
		if err != nil {
			return nil, run.UsageError(err)
		}
		return r.withSteps(ls)
	}
	gs := llm.DefaultGPUs
	if r.gpusSet {
		gs = r.gpus
	}
	ls, skipped, err := r.estimateAll(gs)
	if err != nil {
		return nil, err
	}
	fp8Notes(ls, io)
	if r.opt.KVCapacityTokensSet && r.opt.Import == "" {
		if ls, err = statedKV(ls, r.opt.KVCapacityTokens, r.opt.kvFrom(), io); err != nil {
			return nil, err
		}
	}
	for _, n := range r.configNotes {
		fmt.Fprintf(io.Err, "note: %s\n", n)
	}
	for _, s := range skipped {
		if s.TP == 0 {
			fmt.Fprintf(io.Err, "warning: skipped %s on %s: %v\n", s.Model, s.GPU, s.Reason)
			continue
		}
		fmt.Fprintf(io.Err, "warning: --tp %d: skipped %s on %s: %v\n", s.TP, s.Model, s.GPU, s.Reason)
	}
	if r.opt.Explain {
		for _, l := range ls {
			e, err := explainLLM(l, r.link, r.llmModels)
			if err != nil {
				return nil, err
			}
			r.explained = append(r.explained, e)
		}
	}
	return r.withSteps(ls)
}

// estimateAll is llm.EstimateAll over the catalogue's models and the configs' on GPUs gs,
// one model at a time so a cancelled context (SIGINT, SIGTERM) stops it between two models:
// --llm-config may name a directory of thousands of configs.
func (r *profileRun) estimateAll(gs []string) ([]formats.LLMProfile, []llm.Skipped, error) {
	opt := llm.Options{TP: r.tps, Link: r.link, KVCacheDtype: r.opt.KVCacheDtype, Quantization: r.opt.Quantization, ExpertParallel: r.opt.ExpertParallel,
		Engine: r.opt.Engine}
	type one struct {
		names  []string
		models []llm.Model
	}
	var work []one
	for _, n := range r.llmNames {
		work = append(work, one{names: []string{n}})
	}
	for _, m := range r.llmModels {
		work = append(work, one{models: []llm.Model{m}})
	}
	var out []formats.LLMProfile
	var skipped []llm.Skipped
	for i, w := range work {
		if err := r.ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("--llm: interrupted after %d of %d models: %w", i, len(work), context.Cause(r.ctx))
		}
		o := opt
		o.Models = w.models
		ls, sk, err := llm.EstimateAll(w.names, gs, o)
		skipped = append(skipped, sk...)
		if err != nil && len(sk) == 0 {
			return nil, nil, run.UsageErrorf("--llm: %v", err)
		}
		out = append(out, ls...)
	}
	if len(out) == 0 {
		if len(skipped) == 0 {
			return nil, nil, run.UsageErrorf("--llm: no model and GPU to profile")
		}
		return nil, nil, run.UsageErrorf("--llm: no (model, GPU, tensor parallel size) combination fits: %v", skipped[0].Reason)
	}
	return out, skipped, nil
}

// llmExplain is one profile's step model by term (--explain).
type llmExplain struct {
	Model string     `json:"model"`
	GPU   string     `json:"gpu"`
	TP    int        `json:"tp"`
	Link  string     `json:"link"`
	Cells []llm.Cell `json:"cells"`
	// StepTimes says whether the kernel terms are measured or estimated (and how well).
	StepTimes string `json:"step_times"`
	// Terms say where the terms no table measures come from (the per-step overhead, the
	// compiled elementwise share) and how well they were fitted.
	Terms []string `json:"terms"`
	// KV is the KV cache's memory budget, term by term, as vLLM sizes it.
	KV llm.KVMemory `json:"kv_memory"`
	// Weights is the linear layers' dtype; MoE a mixture-of-experts model's experts, and
	// ExpertParallel whether they sit whole on the GPUs.
	Weights string `json:"weights"`
	// AttentionBF16: the checkpoint leaves its attention projections unquantized.
	AttentionBF16  bool     `json:"attention_bf16,omitempty"`
	MoE            *llm.MoE `json:"moe,omitempty"`
	ExpertParallel bool     `json:"expert_parallel,omitempty"`
}

func explainLLM(p formats.LLMProfile, link roofline.Link, configs []llm.Model) (llmExplain, error) {
	m, err := llm.Lookup(p.Model)
	for _, c := range configs {
		if c.Name == p.Model {
			m, err = c, nil
		}
	}
	if err != nil {
		return llmExplain{}, err
	}
	if m, err = m.Quantize(p.WeightDType); err != nil {
		return llmExplain{}, err
	}
	g, err := gpus.Lookup(p.GPU)
	if err != nil {
		return llmExplain{}, err
	}
	d, err := llm.NewDeployment(m, g, p.GPUCount, link)
	if err != nil {
		return llmExplain{}, err
	}
	fp8 := p.Engine.KVFP8()
	seqs, batched, util, block := 0, 0, 0.0, 0
	noHybrid := false
	if e := p.Engine; e != nil {
		seqs, batched, util, block = e.MaxNumSeqs, e.MaxNumBatchedTokens, e.GPUMemoryUtilization, e.BlockSize
		noHybrid = e.HybridKVOff()
	}
	d = d.WithKVCache(fp8).WithEngine(p.Engine.Version(), seqs)
	ep := p.Engine != nil && p.Engine.EnableExpertParallel
	if ep {
		if d, err = d.WithExpertParallel(); err != nil {
			return llmExplain{}, err
		}
	}
	resolved := "-"
	if p.GPUCount > 1 {
		_, l := roofline.NewKernels(g).LinkGBps(link)
		resolved = string(l)
	}
	return llmExplain{Model: m.Name, GPU: g.Name, TP: p.GPUCount, Link: resolved, Cells: d.ExplainCells(), Weights: m.Weights.String(), AttentionBF16: m.AttentionBF16, ExpertParallel: ep, MoE: m.MoE,
		StepTimes: d.StepTimes(), Terms: d.TermsNote(), KV: kvBudget(m, g, p.GPUCount, fp8, batched, seqs, util, block, noHybrid, p.Engine.Version())}, nil
}

// writeExplain prints one table per explained profile: a row per cell, a column per term
// (ms); then the measured-table points each cell's terms came from, and the KV budget.
func writeExplain(w io.Writer, es []llmExplain) {
	ms := func(us float64) string { return strconv.FormatFloat(us/1000, 'f', 3, 64) }
	gib := func(b int64) string { return strconv.FormatFloat(float64(b)/(1<<30), 'f', 2, 64) + " GiB" }
	for _, e := range es {
		link := ""
		if e.TP > 1 {
			link = " over " + e.Link
		}
		fmt.Fprintf(w, "\n%s on %d × %s%s: step time by term (ms)\n", e.Model, e.TP, e.GPU, link)
		if e.AttentionBF16 {
			e.Weights += " (attention projections bf16: the checkpoint leaves them unquantized)"
		}
		if e.MoE != nil {
			split := fmt.Sprintf("each split over the %d GPUs (tensor parallel)", e.TP)
			if e.ExpertParallel {
				split = fmt.Sprintf("%d whole experts per GPU (expert parallel)", e.MoE.Experts/e.TP)
			}
			fmt.Fprintf(w, "experts: %d routed, %d per token, %d intermediate; %s; weights %s\n", e.MoE.Experts, e.MoE.TopK, e.MoE.Intermediate, split, e.Weights)
		} else if e.Weights != "bf16" {
			fmt.Fprintf(w, "weights: %s\n", e.Weights)
		}
		var rows [][]string
		for _, c := range e.Cells {
			t := c.Terms
			row := []string{cellName(c), ms(t.GEMM), ms(t.Attention)}
			if e.MoE != nil {
				row = append(row, ms(t.MoE))
			}
			rows = append(rows, append(row, ms(t.AllReduce), ms(t.Elementwise), ms(t.Overhead), ms(c.TotalUs)))
		}
		head := []string{"cell", "gemm", "attention"}
		if e.MoE != nil {
			head = append(head, "moe")
		}
		run.WriteTable(w, append(head, "allreduce", "elementwise", "overhead", "total"), rows)
		fmt.Fprintf(w, "step times: %s\n", e.StepTimes)
		for _, n := range e.Terms {
			fmt.Fprintf(w, "  %s\n", n)
		}
		for _, c := range e.Cells {
			if len(c.Terms.Sources) == 0 {
				continue
			}
			fmt.Fprintf(w, "  %s:\n", cellName(c))
			for _, term := range []string{"gemm", "attention", "moe", "allreduce"} {
				var pts []string
				for _, s := range c.Terms.Sources {
					if p := s.Point.String(); s.Term == term && !slices.Contains(pts, p) {
						pts = append(pts, p)
					}
				}
				if len(pts) > 0 {
					fmt.Fprintf(w, "    %-9s ← %s\n", term, strings.Join(pts, "; "))
				}
			}
		}
		k := e.KV
		budget := fmt.Sprintf("KV cache per GPU (vLLM's start-up budget): %s × %.2f gpu_memory_utilization − %s weights − %s rotary table − %s activation peak (%d batched tokens, %d sequences) − %s workspaces − %s CUDA graphs = %s",
			gib(k.GPUBytes), k.Utilization, gib(k.WeightsPerGPU), gib(k.RopeTable), gib(k.ActivationPeak), k.BatchedTokens, k.MaxSeqs, gib(k.NonTorch), gib(k.CUDAGraphs), gib(k.KVBytes))
		g := k.Groups
		if g == nil {
			fmt.Fprintf(w, "%s; ÷ (%d-token blocks × %d B a token) = %d blocks = %d tokens\n", budget, k.BlockTokens, k.BytesPerTokenPerGPU, k.Blocks, k.Tokens)
			continue
		}
		layers := int64(g.LayersPerGroup * g.Groups())
		fmt.Fprintf(w, "%s; ÷ (%d-token blocks × %d B a token of one layer × %d layers a group) = %d pool blocks; over %d groups = %d tokens (what vLLM reports)\n",
			budget, k.BlockTokens, k.BytesPerTokenPerGPU/max(layers, 1), g.LayersPerGroup, k.Blocks, g.Groups(), k.Tokens)
		kinds := []string{fmt.Sprintf("%d full-attention", g.Full)}
		holds := []string{fmt.Sprintf("a block per %d tokens in a full group", k.BlockTokens)}
		if g.Sliding > 0 {
			kinds = append(kinds, fmt.Sprintf("%d sliding-window (%d tokens)", g.Sliding, g.SlidingWindow))
			holds = append(holds, "at most its last window's blocks in a sliding one")
		}
		if g.Chunked > 0 {
			kinds = append(kinds, fmt.Sprintf("%d chunked-local (%d-token chunks)", g.Chunked, g.AttentionChunk))
			holds = append(holds, "at most its current chunk's blocks in a chunked one")
		}
		fmt.Fprintf(w, "  hybrid KV layout (vLLM's hybrid KV cache manager): %s groups of %d layers; a sequence holds %s\n",
			strings.Join(kinds, ", "), g.LayersPerGroup, strings.Join(holds, ", "))
	}
}

func cellName(c llm.Cell) string {
	if c.Phase == "decode" {
		return fmt.Sprintf("decode b=%d ctx=%d", c.Batch, c.Context)
	}
	return fmt.Sprintf("prefill %d", c.Tokens)
}

// kvBudget is the KV budget under the profile's engine settings (zero: vLLM's defaults for
// the GPU).
func kvBudget(m llm.Model, g gpus.Spec, tp int, fp8 bool, batched, seqs int, util float64, block int, noHybrid bool, v formats.VLLMVersion) llm.KVMemory {
	b, s := formats.DefaultBatchedTokens(g.Name)
	if batched > 0 {
		b = batched
	}
	if seqs > 0 {
		s = seqs
	}
	return llm.KVBudgetWith(m, g, tp, fp8, llm.KVSettings{BatchedTokens: b, MaxSeqs: s, Utilization: util, BlockTokens: block, NoHybrid: noHybrid, Version: v})
}

// statedKV sets the one estimated profile's KV capacity to the server's own count
// (--kv-capacity-tokens: vLLM's GPU blocks × block size, as its start-up log says) over
// plan's estimate, and says so: the count is one engine's, so it names exactly one.
func statedKV(ls []formats.LLMProfile, kv int64, from string, io *run.IO) ([]formats.LLMProfile, error) {
	if len(ls) != 1 {
		var names []string
		for _, l := range ls {
			names = append(names, fmt.Sprintf("%s@%dx%s", l.Model, l.GPUCount, l.GPU))
		}
		return nil, run.UsageErrorf("%s: KV capacity %d: one engine's, but %d profiles are estimated (%s): name one model, one --gpu and one --tp", from, kv, len(ls), strings.Join(names, ", "))
	}
	fmt.Fprintf(io.Err, "note: %s on %d×%s: kv_capacity_tokens %d from %s (plan's estimate under the engine settings: %d)\n", ls[0].Model, ls[0].GPUCount, ls[0].GPU, kv, from, ls[0].KVCapacityTokens)
	ls[0].KVCapacityTokens = kv
	return ls, nil
}

// fp8Notes says, once per GPU type, what FP8 weights mean on a GPU without FP8 tensor cores
// (the A100): vLLM runs them weight-only (FP8 Marlin), dequantized to BF16 compute, so a
// linear or expert layer reads half the BF16 weight bytes at the BF16 FLOPs
// (kerneltab's weight-only path); the halved weights also grow the KV cache.
func fp8Notes(ls []formats.LLMProfile, io *run.IO) {
	said := map[string]bool{}
	for _, l := range ls {
		if l.WeightDType != "fp8" || said[l.GPU] {
			continue
		}
		if g, err := gpus.Lookup(l.GPU); err == nil && g.FP8TFLOPS == 0 {
			said[l.GPU] = true
			fmt.Fprintf(io.Err, "note: %s has no FP8 tensor cores: vLLM runs FP8 weights weight-only (FP8 Marlin, dequantized to BF16 compute): linear and expert layers are the BF16 measurements scaled by their weight-read floors (about half where decode reads the weights, the BF16 time where prefill is bound by the math); the halved weights leave more KV cache\n", l.GPU)
		}
	}
}
