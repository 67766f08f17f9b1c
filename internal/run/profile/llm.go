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
	llmFlags := a.TPSet || a.LinkSet || a.Explain || a.KVCacheDtype != ""
	for _, p := range a.LLMConfigs {
		if a.Import != "" || isFile(a.LLM) {
			return run.UsageErrorf("--llm-config %s: profiles a model from its shapes: not with --import or an imported --llm profile", p)
		}
		ms, err := llm.ReadConfigs(p)
		if err != nil {
			return run.UsageErrorf("--llm-config: %v", err)
		}
		for _, m := range ms {
			if _, err := llm.Lookup(m.Name); err == nil || slices.ContainsFunc(r.llmModels, func(x llm.Model) bool { return x.Name == m.Name }) {
				return run.UsageErrorf("--llm-config %s: model name %q is taken (a catalogue model or another config): put the config in a directory of another name", p, m.Name)
			}
			r.llmModels = append(r.llmModels, m)
		}
	}
	switch {
	case a.LLM == "" && len(r.llmModels) > 0:
	case a.LLM == "":
		if llmFlags {
			return run.UsageErrorf("--tp, --link, --kv-cache-dtype and --explain: only with --llm MODEL[,MODEL...]")
		}
		return nil
	case a.Import != "":
		// With --import any model may be named: the step log's engine (import.go).
		if llmFlags {
			return run.UsageErrorf("--tp, --link, --kv-cache-dtype and --explain: only for analytic estimates (--llm MODEL[,MODEL...]), not with --import")
		}
		return nil
	case isFile(a.LLM):
		if llmFlags {
			return run.UsageErrorf("--tp, --link, --kv-cache-dtype and --explain: only for analytic estimates (--llm MODEL[,MODEL...]), not an imported profile %s", a.LLM)
		}
		return nil
	}
	if d := a.KVCacheDtype; d != "" && !slices.Contains(formats.KVCacheDtypes, d) {
		return run.UsageErrorf("--kv-cache-dtype: %q: must be one of %s", d, strings.Join(formats.KVCacheDtypes, ", "))
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
	ls, skipped, err := llm.EstimateAll(r.llmNames, gs, llm.Options{TP: r.tps, Link: r.link, KVCacheDtype: r.opt.KVCacheDtype, Models: r.llmModels})
	if err != nil {
		return nil, run.UsageErrorf("--llm: %v", err)
	}
	for _, s := range skipped {
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
	resolved := "-"
	if p.GPUCount > 1 {
		_, l := roofline.NewKernels(g).LinkGBps(link)
		resolved = string(l)
	}
	return llmExplain{Model: m.Name, GPU: g.Name, TP: p.GPUCount, Link: resolved, Cells: d.ExplainCells(),
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
		var rows [][]string
		for _, c := range e.Cells {
			t := c.Terms
			rows = append(rows, []string{cellName(c), ms(t.GEMM), ms(t.Attention), ms(t.AllReduce), ms(t.Elementwise), ms(t.Overhead), ms(c.TotalUs)})
		}
		run.WriteTable(w, []string{"cell", "gemm", "attention", "allreduce", "elementwise", "overhead", "total"}, rows)
		fmt.Fprintf(w, "step times: %s\n", e.StepTimes)
		for _, c := range e.Cells {
			if len(c.Terms.Sources) == 0 {
				continue
			}
			fmt.Fprintf(w, "  %s:\n", cellName(c))
			for _, term := range []string{"gemm", "attention", "allreduce"} {
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
