package profile

import (
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
		ms, err := llm.ReadConfigs(p)
		if err != nil {
			return run.UsageErrorf("--llm-config: %v", err)
		}
		for _, m := range ms {
			if cat, err := llm.Lookup(m.Name); err == nil {
				if !cat.SameShapes(m) {
					return run.UsageErrorf("--llm-config %s: model name %q is the catalogue's, whose shapes differ (profiler/llm/catalogue/%s.json): put the config in a directory of another name", p, m.Name, cat.Name)
				}
				// The catalogue's own model (a user's copy of its config): profiled as --llm.
				if !slices.Contains(r.llmNames, cat.Name) {
					r.llmNames = append(r.llmNames, cat.Name)
				}
				continue
			}
			if slices.ContainsFunc(r.llmModels, func(x llm.Model) bool { return x.Name == m.Name }) {
				return run.UsageErrorf("--llm-config %s: model name %q is taken by another config: put the config in a directory of another name", p, m.Name)
			}
			r.llmModels = append(r.llmModels, m)
		}
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
	for _, name := range strings.Split(a.LLM, ",") {
		if a.LLM == "" {
			break
		}
		name = strings.ToLower(strings.TrimSpace(name))
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
		if err != nil {
			return run.UsageErrorf("--llm: %v (or \"all\", or a profile file to import)", err)
		}
		if !slices.Contains(r.llmNames, m.Name) {
			r.llmNames = append(r.llmNames, m.Name)
		}
	}
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
	ls, skipped, err := llm.EstimateAll(r.llmNames, gs, llm.Options{TP: r.tps, Link: r.link, KVCacheDtype: r.opt.KVCacheDtype, Quantization: r.opt.Quantization, ExpertParallel: r.opt.ExpertParallel, Models: r.llmModels})
	if err != nil {
		return nil, run.UsageErrorf("--llm: %v", err)
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

// llmExplain is one profile's step model by term (--explain).
type llmExplain struct {
	Model string     `json:"model"`
	GPU   string     `json:"gpu"`
	TP    int        `json:"tp"`
	Link  string     `json:"link"`
	Cells []llm.Cell `json:"cells"`
	// StepTimes says whether the kernel terms are measured or estimated (and how well).
	StepTimes string `json:"step_times"`
	// KV is the KV cache's memory budget, term by term, as vLLM sizes it.
	KV llm.KVMemory `json:"kv_memory"`
	// Weights is the linear layers' dtype; MoE a mixture-of-experts model's experts, and
	// ExpertParallel whether they sit whole on the GPUs.
	Weights        string   `json:"weights"`
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
	d = d.WithKVCache(fp8)
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
	return llmExplain{Model: m.Name, GPU: g.Name, TP: p.GPUCount, Link: resolved, Cells: d.ExplainCells(), Weights: m.Weights.String(), ExpertParallel: ep, MoE: m.MoE,
		StepTimes: d.StepTimes(), KV: llm.KVBudget(m, g, p.GPUCount, fp8)}, nil
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
		fmt.Fprintf(w, "KV cache per GPU (vLLM's start-up budget): %s × %.2f gpu_memory_utilization − %s weights − %s activation peak (%d batched tokens, %d sequences) − %s workspaces − %s CUDA graphs = %s; ÷ (%d-token blocks × %d B a token) = %d blocks = %d tokens\n",
			gib(k.GPUBytes), k.Utilization, gib(k.WeightsPerGPU), gib(k.ActivationPeak), k.BatchedTokens, k.MaxSeqs, gib(k.NonTorch), gib(k.CUDAGraphs), gib(k.KVBytes), k.BlockTokens, k.BytesPerTokenPerGPU, k.Blocks, k.Tokens)
	}
}

func cellName(c llm.Cell) string {
	if c.Phase == "decode" {
		return fmt.Sprintf("decode b=%d ctx=%d", c.Batch, c.Context)
	}
	return fmt.Sprintf("prefill %d", c.Tokens)
}
