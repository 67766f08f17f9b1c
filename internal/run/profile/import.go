package profile

import (
	"fmt"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/profiler/llm"
)

// maxImportGPUs bounds --gpu-count: the most GPUs one engine instance spans (8 nodes of 8).
const maxImportGPUs = 64

// maxStatedKV bounds --kv-capacity-tokens as a profile's kv_capacity_tokens is bounded.
const maxStatedKV = 1<<31 - 1

// checkImportFlags refuses the step-log flags out of range or without --import.
func checkImportFlags(a Args) error {
	for _, c := range []struct {
		name string
		set  bool
	}{{"gpu-count", a.GPUCountSet}} {
		if c.set && a.Import == "" {
			return run.UsageErrorf("--%s: only with --import (the engine a step log was measured on)", c.name)
		}
	}
	// The KV capacity a server logged is its own count, on every LLM path.
	if a.KVCapacityTokensSet && a.Import == "" && a.LLM == "" && len(a.LLMConfigs) == 0 && !llmZoo(a.Zoo) {
		return run.UsageErrorf("--kv-capacity-tokens: an LLM engine's KV capacity: only with an LLM (--llm, --llm-config, --import or --calibrate --llm)")
	}
	if a.KVCapacityTokensSet && a.KVCapacityTokens > maxStatedKV {
		return run.UsageErrorf("--kv-capacity-tokens: %d: must be in [1, %d]", a.KVCapacityTokens, int64(maxStatedKV))
	}
	if a.GPUCount < 0 || a.GPUCount > maxImportGPUs {
		return run.UsageErrorf("--gpu-count: %d: must be in [1, %d]", a.GPUCount, maxImportGPUs)
	}
	if a.KVCapacityTokens < 0 || (a.KVCapacityTokensSet && a.KVCapacityTokens == 0) {
		return run.UsageErrorf("--kv-capacity-tokens: %d: must be >= 1", a.KVCapacityTokens)
	}
	return nil
}

// importLog builds the one LLM profile a measured step log (--import) describes: its model,
// GPU, GPU count and KV capacity from the log's engine columns or the flags (which must agree
// with the log), its iteration curves fitted from the steps (llm.WithSteps). A model and GPU
// the analytic model knows keep its planner fields (estimated on the log's GPU count); any
// other model or GPU gets an engine-only profile (llm.EngineProfile), written for one
// engine's replay (formats.UseReplay).
func (r *profileRun) importLog() ([]formats.LLMProfile, error) {
	name := r.opt.Import
	data, err := formats.ReadBytes(name)
	if err != nil {
		return nil, run.UsageErrorf("--import: %v", err)
	}
	log, err := llm.ReadStepLog(name, data)
	if err != nil {
		return nil, run.UsageError(err)
	}
	models, gpuCount := 1, max(len(r.gpus), 1)
	if r.opt.LLM == "all" {
		models = len(llm.Names())
	}
	if models*gpuCount > 1 {
		return nil, run.UsageErrorf("--import: --llm %s gives %d LLM profiles; the steps fit one (name one model and one --gpu)", r.opt.LLM, models*gpuCount)
	}
	// agree takes the flag's value or the log's; both given, they must be the same.
	agree := func(field, flag, fromFlag, fromLog string) (string, error) {
		if fromFlag != "" && fromLog != "" && !strings.EqualFold(fromFlag, fromLog) {
			return "", run.UsageErrorf("%s: line %d: %s: %q: %s says %q", name, log.Lines[field], field, fromLog, flag, fromFlag)
		}
		if fromFlag != "" {
			return fromFlag, nil
		}
		return fromLog, nil
	}
	model, err := agree("model", "--llm", r.opt.LLM, log.Model)
	if err != nil {
		return nil, err
	}
	if model == "" {
		return nil, run.UsageErrorf("--import: give --llm MODEL --gpu GPU (or --llm PROFILE.json), or a step log that names them (columns model and gpu): %s names no model", name)
	}
	var flagGPU string
	if r.gpusSet && len(r.gpus) == 1 {
		flagGPU = r.gpus[0]
	}
	gpu, err := agree("gpu", "--gpu", flagGPU, log.GPU)
	if err != nil {
		return nil, err
	}
	if gpu == "" {
		return nil, run.UsageErrorf("--import: %s names no GPU: give --gpu GPU (or a gpu column)", name)
	}
	tp, kv := r.opt.GPUCount, r.opt.KVCapacityTokens
	if tp > 0 && log.GPUCount > 0 && tp != log.GPUCount {
		return nil, run.UsageErrorf("%s: line %d: gpu_count: %d: --gpu-count says %d", name, log.Lines["gpu_count"], log.GPUCount, tp)
	}
	if kv > 0 && log.KVCapacityTokens > 0 && kv != log.KVCapacityTokens {
		return nil, run.UsageErrorf("%s: line %d: kv_capacity_tokens: %d: --kv-capacity-tokens says %d", name, log.Lines["kv_capacity_tokens"], log.KVCapacityTokens, kv)
	}
	tp, kv = max(tp, log.GPUCount), max(kv, log.KVCapacityTokens)
	var base formats.LLMProfile
	var known *llm.Model
	if llm.Known(model, gpu) {
		m, _ := llm.Lookup(model)
		known = &m
		p, err := llm.EstimateWith(m, gpu, tp, llm.Variant{Engine: r.opt.Engine})
		if err != nil {
			return nil, run.UsageErrorf("--import %s: %v", name, err)
		}
		base = *p
		if kv > 0 {
			base.KVCapacityTokens = kv // the engine's own count wins over the estimate
		}
	} else {
		if kv == 0 {
			return nil, run.UsageErrorf("--import %s: %s on %s is not in the analytic model (it knows %s on %s): give the engine's KV capacity (a kv_capacity_tokens column, or --kv-capacity-tokens: vLLM's GPU blocks × block size)",
				name, model, gpu, strings.Join(llm.Names(), ", "), strings.Join(llm.DefaultGPUs, ", "))
		}
		base = llm.EngineProfile(model, gpu, tp, kv)
		r.use = formats.UseReplay
		r.note = fmt.Sprintf("profile: %s on %d×%s is not in the analytic model: an engine-only profile (plan simulate --llm replays it; plan solve needs %s)",
			model, base.GPUCount, gpu, strings.Join(formats.PlannerOnlyLLMFields, ", "))
	}
	if eng, notes := log.Engine(); eng != nil {
		// The log's own engine settings win over the estimate's: a replay of the log's
		// engine then schedules (allocates KV, frees blocks, caches prefixes) as it did.
		_, version := log.Settings["vllm_version"]
		_, caching := log.Settings["enable_prefix_caching"]
		base.Engine = withEngineSettings(base.Engine, eng, version || caching)
		for _, n := range notes {
			r.note = strings.TrimPrefix(r.note+"\n", "\n") + "profile: " + name + ": " + n
		}
	}
	if r.opt.Engine != nil {
		// Precedence: the flags, then the log, then the defaults.
		e := &formats.LLMEngine{}
		if base.Engine != nil {
			*e = *base.Engine
		}
		e.Overlay(r.opt.Engine)
		base.Engine = e
	}
	if known != nil {
		// The estimate's KV layout was for the engine before the log's and the flags'
		// settings: a log of an older release, or of a server without the hybrid manager,
		// lays the cache out as one group.
		base.KVGroups = known.KVGroupsUnder(base.Engine)
	}
	p, err := llm.WithSteps(base, log.Steps)
	if err != nil {
		return nil, run.UsageErrorf("%s: %v", name, err)
	}
	return []formats.LLMProfile{p}, nil
}

// withEngineSettings is engine block e with the settings a step log states (set) laid over
// it, prefix caching only when the log states it (caching): a copy, e unchanged. The log's
// vLLM version is the profile's: its steps are that release's, and the exports name its
// image.
func withEngineSettings(e, set *formats.LLMEngine, caching bool) *formats.LLMEngine {
	out := &formats.LLMEngine{}
	if e != nil {
		*out = *e
	}
	if set.VLLMVersion != "" {
		out.VLLMVersion = set.VLLMVersion
	}
	if set.KVAllocation != "" {
		out.KVAllocation = set.KVAllocation
	}
	if set.Release != "" {
		out.Release = set.Release
	}
	if set.BlockSize > 0 {
		out.BlockSize = set.BlockSize
	}
	if set.MaxNumBatchedTokens > 0 {
		out.MaxNumBatchedTokens = set.MaxNumBatchedTokens
	}
	if set.MaxNumSeqs > 0 {
		out.MaxNumSeqs = set.MaxNumSeqs
	}
	if caching {
		out.EnablePrefixCaching = set.EnablePrefixCaching
	}
	return out
}

// withSteps fits the --import step table into the one LLM profile (llm.WithSteps).
func (r *profileRun) withSteps(ls []formats.LLMProfile) ([]formats.LLMProfile, error) {
	if r.opt.Import == "" {
		return ls, nil
	}
	if len(ls) != 1 {
		return nil, run.UsageErrorf("--import: --llm %s gives %d LLM profiles; the steps fit one (name one model and one --gpu)", r.opt.LLM, len(ls))
	}
	data, err := formats.ReadBytes(r.opt.Import)
	if err != nil {
		return nil, run.UsageErrorf("--import: %v", err)
	}
	steps, err := llm.ReadSteps(r.opt.Import, data)
	if err != nil {
		return nil, run.UsageError(err)
	}
	p, err := llm.WithSteps(ls[0], steps)
	if err != nil {
		return nil, run.UsageErrorf("%s: %v", r.opt.Import, err)
	}
	return []formats.LLMProfile{p}, nil
}

// writeProfile validates the profile for its use and writes it atomically (formats.WriteFile
// for a use).
func writeProfile(path string, doc *formats.Profile, use formats.ProfileUse) error {
	if errs := doc.ValidateFor(use); len(errs) > 0 {
		return errs.WithFile(path)
	}
	data, err := formats.Marshal(doc)
	if err != nil {
		return err
	}
	return formats.WriteAtomic(path, data)
}
