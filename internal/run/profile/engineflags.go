package profile

import (
	"slices"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/profiler/llm"
)

// Engine-setting bounds a flag may state (formats' profile validation holds the engine
// block to the same ones).
const (
	maxFlagSeqs    = 1 << 16
	maxFlagBatched = 1 << 24
	maxFlagBlock   = 4096
	maxFlagLen     = 1 << 24
)

// checkEngineFlags checks the vLLM server flags' values, naming each flag, and refuses them
// where nothing LLM is profiled, and with --calibrate --profile FILE, whose file states its
// own engine (edit its engine block). Every other LLM path applies them: the estimates
// (--llm, --llm-config, --calibrate --llm) time and size the engine they describe, and an
// --import log's settings give way to them.
func checkEngineFlags(a Args) error {
	e := a.Engine
	if e == nil {
		return nil
	}
	flags := "--" + strings.Join(a.EngineFlags, ", --")
	if len(a.Calibrate) > 0 && a.Profile != "" {
		return run.UsageErrorf("%s: not with --calibrate --profile %s, whose engine block states the server's settings: edit it there, or calibrate the estimate (--llm MODEL --gpu GPU) with these flags", flags, a.Profile)
	}
	if a.LLM == "" && a.Import == "" && len(a.LLMConfigs) == 0 && !llmZoo(a.Zoo) {
		return run.UsageErrorf("%s: vLLM's server settings: only with an LLM (--llm, --llm-config, --import or --calibrate)", flags)
	}
	if e.VLLMVersion != "" {
		if _, err := formats.ParseVLLMVersion(e.VLLMVersion); err != nil {
			return run.UsageErrorf("--vllm-version: %v", err)
		}
	}
	ints := []struct {
		flag   string
		v, max int
	}{
		{"max-num-seqs", e.MaxNumSeqs, maxFlagSeqs}, {"max-num-batched-tokens", e.MaxNumBatchedTokens, maxFlagBatched},
		{"max-model-len", e.MaxModelLen, maxFlagLen}, {"block-size", e.BlockSize, maxFlagBlock},
	}
	for _, f := range ints {
		if given(a, f.flag) && (f.v < 1 || f.v > f.max) {
			return run.UsageErrorf("--%s: %d: must be in [1, %d]", f.flag, f.v, f.max)
		}
	}
	if given(a, "block-size") && e.BlockSize&(e.BlockSize-1) != 0 {
		return run.UsageErrorf("--block-size: %d: must be a power of two (vLLM's block sizes)", e.BlockSize)
	}
	if given(a, "gpu-memory-utilization") && !(e.GPUMemoryUtilization > 0 && e.GPUMemoryUtilization <= 1) {
		return run.UsageErrorf("--gpu-memory-utilization: %g: must be in (0, 1]", e.GPUMemoryUtilization)
	}
	if e.MaxNumBatchedTokens > 0 && e.BlockSize > 0 && e.MaxNumBatchedTokens < e.BlockSize {
		return run.UsageErrorf("--max-num-batched-tokens: %d: must be >= --block-size (%d): a step could not compute one block", e.MaxNumBatchedTokens, e.BlockSize)
	}
	return nil
}

// given reports whether flag (without dashes) was given.
func given(a Args, flag string) bool {
	for _, f := range a.EngineFlags {
		if f == flag {
			return true
		}
	}
	return false
}

// llmZoo reports whether --zoo names an LLM (which profiles as --llm).
func llmZoo(z string) bool {
	for _, n := range strings.Split(z, ",") {
		if n = strings.ToLower(strings.TrimSpace(n)); n != "" && slices.Contains(llm.Names(), n) {
			return true
		}
	}
	return false
}
