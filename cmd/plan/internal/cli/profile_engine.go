package cli

import (
	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/formats"
)

// engineFlags are `plan profile`'s vLLM server settings, under vLLM's own flag names, so
// a user passes the flags they served with (run/profile applies them to every LLM path or
// refuses them by name).
type engineFlags struct {
	version       string
	maxNumSeqs    int
	maxBatched    int
	maxModelLen   int
	gpuMemUtil    float64
	blockSize     int
	prefixCaching bool
	noPrefixCache bool
	noHybridKV    bool
}

// engineFlagNames are the flags engineFlags registers, in help order.
var engineFlagNames = []string{"vllm-version", "max-num-seqs", "max-num-batched-tokens", "max-model-len",
	"gpu-memory-utilization", "block-size", "enable-prefix-caching", "no-enable-prefix-caching", "disable-hybrid-kv-cache-manager"}

func addEngineProfileFlags(f *pflag.FlagSet, e *engineFlags) {
	f.StringVar(&e.version, "vllm-version", "", "with --llm/--llm-config/--calibrate --llm/--import: the vLLM release the step model represents (0.6 to "+formats.DefaultVLLMVersion+"; default "+formats.DefaultVLLMVersion+": V1 with async scheduling); others are refused by name")
	f.IntVar(&e.maxNumSeqs, "max-num-seqs", 0, "vLLM's --max-num-seqs the server runs with (default: vLLM's for the GPU)")
	f.IntVar(&e.maxBatched, "max-num-batched-tokens", 0, "vLLM's --max-num-batched-tokens (default: vLLM's for the GPU); also sizes the KV budget's activation peak")
	f.IntVar(&e.maxModelLen, "max-model-len", 0, "vLLM's --max-model-len (default: the model's context)")
	f.Float64Var(&e.gpuMemUtil, "gpu-memory-utilization", 0, "vLLM's --gpu-memory-utilization (default 0.9): the KV budget's share of GPU memory")
	f.IntVar(&e.blockSize, "block-size", 0, "vLLM's --block-size, KV tokens per block (default 16)")
	f.BoolVar(&e.prefixCaching, "enable-prefix-caching", false, "vLLM's --enable-prefix-caching (V1's default)")
	f.BoolVar(&e.noPrefixCache, "no-enable-prefix-caching", false, "vLLM's --no-enable-prefix-caching")
	f.BoolVar(&e.noHybridKV, "disable-hybrid-kv-cache-manager", false, "vLLM's --disable-hybrid-kv-cache-manager: a sliding-window or chunked-local model keeps every token in every layer (one KV group)")
}

// engine is the settings given, and the names of the flags that gave them.
func (e *engineFlags) engine(changed func(string) bool) (*formats.LLMEngine, []string) {
	var set []string
	for _, n := range engineFlagNames {
		if changed(n) {
			set = append(set, n)
		}
	}
	if len(set) == 0 {
		return nil, nil
	}
	out := &formats.LLMEngine{VLLMVersion: e.version, MaxNumSeqs: e.maxNumSeqs, MaxNumBatchedTokens: e.maxBatched,
		MaxModelLen: e.maxModelLen, GPUMemoryUtilization: e.gpuMemUtil, BlockSize: e.blockSize}
	if changed("enable-prefix-caching") {
		out.EnablePrefixCaching = new(e.prefixCaching)
	}
	if changed("no-enable-prefix-caching") && e.noPrefixCache {
		out.EnablePrefixCaching = new(false)
	}
	out.DisableHybridKVCacheManager = changed("disable-hybrid-kv-cache-manager") && e.noHybridKV
	return out, set
}
