// Package vllm is what every export that runs vLLM engines shares: the engine's settings
// (Engine: AsyncEngineArgs field names, sized from the plan's LLM profiles), one rendering of
// them as the engine's command-line flags (Args) and its inverse (ParseArgs), and Fleet, the
// layout of an LLM plan — its engine instances and request classes — that targets running
// vLLM pods render (export/gateway). The KServe export's huggingface runtime and the
// inference gateway's vLLM Deployments both take Args, so one plan runs with the same flags
// on either.
package vllm

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
)

// ImageRepo is the vLLM OpenAI-compatible server image the gateway's Deployments run
// (`vllm serve` with Args); Image tags it with the release the plan's step model represents.
const ImageRepo = "vllm/vllm-openai"

// validatedPatch is the patch release of a minor the validation set ran (vLLM 0.15.1);
// other minors take their first release.
var validatedPatch = map[int]int{15: 1}

// Image is the server image of vLLM release v (the profile's engine.vllm_version, whose
// step times and scheduling the plan was sized with; the zero release: the default), so the
// exported engine is the one the prediction holds for.
func Image(v formats.VLLMVersion) string {
	if v.Minor == 0 {
		v = (*formats.LLMEngine)(nil).Version() // none stated: the default release
	}
	return fmt.Sprintf("%s:v0.%d.%d", ImageRepo, v.Minor, validatedPatch[v.Minor])
}

// ParseImage is Image's inverse: the release of an image of ImageRepo tagged v0.MINOR.PATCH
// that plan models (formats.ParseVLLMVersion), else an error naming the image.
func ParseImage(image string) (formats.VLLMVersion, error) {
	tag, ok := strings.CutPrefix(image, ImageRepo+":v")
	if !ok {
		return formats.VLLMVersion{}, fmt.Errorf("%q: not %s:vX.Y.Z", image, ImageRepo)
	}
	parts := strings.Split(tag, ".")
	if len(parts) != 3 {
		return formats.VLLMVersion{}, fmt.Errorf("%q: tag not vX.Y.Z", image)
	}
	if _, err := strconv.Atoi(parts[2]); err != nil {
		return formats.VLLMVersion{}, fmt.Errorf("%q: tag not vX.Y.Z", image)
	}
	v, err := formats.ParseVLLMVersion(parts[0] + "." + parts[1])
	if err != nil {
		return formats.VLLMVersion{}, fmt.Errorf("%q: %v", image, err)
	}
	return v, nil
}

// Port is the port the vLLM server listens on (vLLM's default).
const Port = 8000

// Engine is a vLLM engine's arguments (AsyncEngineArgs field names): Triton's model.json,
// KServe's container args, Ray's user_config.engine.
type Engine struct {
	Model              string `json:"model"`
	TensorParallelSize int    `json:"tensor_parallel_size"`
	// GPUMemoryUtilization is the share of each GPU vLLM takes: weights, the profiled KV
	// capacity and 2 GB per GPU of activations and CUDA graphs (the profiler's KV-capacity
	// formula solved for it), rounded up to 0.001. 0 (omitted: vLLM's default) when the
	// cluster does not give the GPU's memory.
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization,omitempty"`
	MaxNumSeqs           int     `json:"max_num_seqs"`
	MaxModelLen          int     `json:"max_model_len"`
	MaxNumBatchedTokens  int     `json:"max_num_batched_tokens"`
	BlockSize            int     `json:"block_size"`
	// SwapSpace is the CPU memory for swapped KV caches, GiB per GPU (0: the profile gives
	// none or says evict, so preemption recomputes).
	SwapSpace float64 `json:"swap_space,omitempty"`
	// EnableChunkedPrefill is written only when the profile turns chunked prefill off
	// (vLLM V1's default is on, as the simulator's); MaxNumPartialPrefills when set.
	EnableChunkedPrefill  *bool `json:"enable_chunked_prefill,omitempty"`
	MaxNumPartialPrefills int   `json:"max_num_partial_prefills,omitempty"`
	// SchedulingPolicy is written when the profile sets it (vLLM's default: fcfs).
	SchedulingPolicy string `json:"scheduling_policy,omitempty"`
	// KVCacheDtype is written when the profile sets it (vLLM's default: auto).
	KVCacheDtype string `json:"kv_cache_dtype,omitempty"`
	// Quantization (online FP8 of a BF16 checkpoint) and EnableExpertParallel are written
	// when the profile's engine sets them.
	Quantization         string `json:"quantization,omitempty"`
	EnableExpertParallel bool   `json:"enable_expert_parallel,omitempty"`
	// DisableHybridKVCacheManager is written when the profile's engine turns vLLM's hybrid
	// KV cache manager off: the KV layout the plan was sized with is then one group.
	DisableHybridKVCacheManager bool `json:"disable_hybrid_kv_cache_manager,omitempty"`
	// EnablePrefixCaching is written when the profile states it, and false on a decode
	// instance, whose sequences arrive with their prompts computed (the simulator turns it
	// off there); unset, vLLM V1's default holds: on, as in the simulator.
	EnablePrefixCaching *bool `json:"enable_prefix_caching,omitempty"`
	// SpeculativeConfig is vLLM's speculative_config when the profile turns speculative
	// decoding on (not on a prefill instance: it computes each request's first token only).
	SpeculativeConfig *SpeculativeConfig `json:"speculative_config,omitempty"`
	// KVTransferConfig is vLLM's kv_transfer_config of a disaggregated instance: its role
	// as KV producer (prefill) or consumer (decode).
	KVTransferConfig *KVTransferConfig `json:"kv_transfer_config,omitempty"`
}

// SpeculativeConfig is vLLM's speculative_config (--speculative-config JSON;
// vllm.config.speculative.SpeculativeConfig: method among "ngram", "draft_model", …, the
// draft model, num_speculative_tokens k; docs.vllm.ai/en/latest/features/
// speculative_decoding/).
type SpeculativeConfig struct {
	Method               string `json:"method"`
	Model                string `json:"model,omitempty"`
	NumSpeculativeTokens int    `json:"num_speculative_tokens"`
}

// KVTransferConfig is vLLM's kv_transfer_config (--kv-transfer-config JSON).
type KVTransferConfig struct {
	KVConnector string `json:"kv_connector"`
	KVRole      string `json:"kv_role"`
	// Extra is the OffloadingConnector's settings on an aggregated instance with a CPU KV
	// tier (kv_offload_bytes).
	Extra *OffloadConfig `json:"kv_connector_extra_config,omitempty"`
}

// OffloadConfig is OffloadingConnector's kv_connector_extra_config: the offload block size
// in tokens and the host bytes it takes.
type OffloadConfig struct {
	BlockSize     int   `json:"block_size"`
	CPUBytesToUse int64 `json:"cpu_bytes_to_use"`
}

// Args are the engine's settings as vLLM's command-line flags, the model excepted (each
// deployment names it in its own form): tensor parallelism, memory share, sequence, context,
// token and block limits, swap space, chunked prefill, scheduling, KV cache dtype,
// quantization, expert parallelism, the hybrid KV cache manager, prefix caching, and the speculative and KV-transfer
// configs as JSON (vLLM's config flags take their dataclass as JSON).
func Args(e Engine) []string {
	a := []string{"--tensor-parallel-size=" + strconv.Itoa(e.TensorParallelSize)}
	if e.GPUMemoryUtilization != 0 {
		a = append(a, "--gpu-memory-utilization="+strconv.FormatFloat(e.GPUMemoryUtilization, 'g', -1, 64))
	}
	a = append(a, "--max-num-seqs="+strconv.Itoa(e.MaxNumSeqs), "--max-model-len="+strconv.Itoa(e.MaxModelLen),
		"--max-num-batched-tokens="+strconv.Itoa(e.MaxNumBatchedTokens), "--block-size="+strconv.Itoa(e.BlockSize))
	if e.SwapSpace != 0 {
		a = append(a, "--swap-space="+strconv.FormatFloat(e.SwapSpace, 'g', -1, 64))
	}
	if e.EnableChunkedPrefill != nil && !*e.EnableChunkedPrefill {
		a = append(a, "--no-enable-chunked-prefill")
	}
	if e.MaxNumPartialPrefills != 0 {
		a = append(a, "--max-num-partial-prefills="+strconv.Itoa(e.MaxNumPartialPrefills))
	}
	if e.SchedulingPolicy != "" {
		a = append(a, "--scheduling-policy="+e.SchedulingPolicy)
	}
	if e.KVCacheDtype != "" {
		a = append(a, "--kv-cache-dtype="+e.KVCacheDtype)
	}
	if e.Quantization != "" {
		a = append(a, "--quantization="+e.Quantization)
	}
	if e.EnableExpertParallel {
		a = append(a, "--enable-expert-parallel")
	}
	if e.DisableHybridKVCacheManager {
		a = append(a, "--disable-hybrid-kv-cache-manager")
	}
	if c := e.EnablePrefixCaching; c != nil && *c {
		a = append(a, "--enable-prefix-caching")
	} else if c != nil {
		a = append(a, "--no-enable-prefix-caching")
	}
	if e.SpeculativeConfig != nil {
		a = append(a, "--speculative-config="+export.MustJSON(e.SpeculativeConfig))
	}
	if e.KVTransferConfig != nil {
		a = append(a, "--kv-transfer-config="+export.MustJSON(e.KVTransferConfig))
	}
	return a
}

// ParseArgs reads an engine back from its flags: Args's, plus --model=ID or --model_id=ID
// for the model. other takes a flag ParseArgs does not know (a deployment's own, such as the
// served model name or the port; key without "--"): true when it is one, else the flag is an
// error. Every flag is strict: a value that is not the engine field's type, a flag given twice
// or an unknown config key is an error naming the argument.
func ParseArgs(args []string, other func(key, value string) bool) (Engine, error) {
	m := map[string]json.RawMessage{}
	for _, a := range args {
		switch a {
		case "--no-enable-chunked-prefill":
			m["enable_chunked_prefill"] = json.RawMessage("false")
			continue
		case "--enable-prefix-caching":
			m["enable_prefix_caching"] = json.RawMessage("true")
			continue
		case "--no-enable-prefix-caching":
			m["enable_prefix_caching"] = json.RawMessage("false")
			continue
		case "--enable-expert-parallel":
			m["enable_expert_parallel"] = json.RawMessage("true")
			continue
		case "--disable-hybrid-kv-cache-manager":
			m["disable_hybrid_kv_cache_manager"] = json.RawMessage("true")
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok || !strings.HasPrefix(a, "--") {
			return Engine{}, fmt.Errorf("argument %q: not --name=value", a)
		}
		switch k {
		case "model_id", "model":
			m["model"] = json.RawMessage(strconv.Quote(v))
			continue
		case "scheduling-policy", "kv-cache-dtype", "quantization":
			m[strings.ReplaceAll(k, "-", "_")] = json.RawMessage(strconv.Quote(v))
			continue
		case "speculative-config", "kv-transfer-config":
			// vLLM's config flags: a JSON object (the engine's strict decoding checks its keys).
			if !json.Valid([]byte(v)) || !strings.HasPrefix(strings.TrimSpace(v), "{") {
				return Engine{}, fmt.Errorf("argument %q: not a JSON object", a)
			}
			k = strings.ReplaceAll(k, "-", "_")
			if _, dup := m[k]; dup {
				return Engine{}, fmt.Errorf("argument %q: given twice", a)
			}
			m[k] = json.RawMessage(v)
			continue
		}
		if other != nil && other(k, v) {
			continue
		}
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return Engine{}, fmt.Errorf("argument %q: not a number", a)
		}
		k = strings.ReplaceAll(k, "-", "_")
		if _, dup := m[k]; dup {
			return Engine{}, fmt.Errorf("argument %q: given twice", a)
		}
		m[k] = json.RawMessage(v)
	}
	var e Engine
	if err := formats.StrictUnmarshal([]byte(export.MustJSON(m)), &e); err != nil {
		return Engine{}, fmt.Errorf("args: %w", err)
	}
	return e, nil
}

// Fleet is an LLM plan as the targets that run vLLM pods render it: its engine instances, in
// plan order, and the request classes they serve.
type Fleet struct {
	// System names the plan's system in comments ("QLM").
	System    string
	Instances []Instance
	Classes   []llmspec.LLMClass
}

// Instance is one vLLM engine of the plan.
type Instance struct {
	// Name is the plan's name of the instance; Unit its exported object name (a DNS label).
	Name, Unit string
	// Model is the plan's model name (the engine loads Engine.Model, its id).
	Model    string
	GPU      string
	GPUCount int
	// Role is the instance's role in a disaggregated plan (llmspec.RolePrefill,
	// RoleDecode; "": aggregated).
	Role string
	// Served are the OpenAI model names its requests arrive by, the first registered.
	Served []string
	// KVCapacityTokens is the KV cache the engine holds (the profile's), in tokens.
	KVCapacityTokens int64
	Engine           Engine
	// Version is the vLLM release the profile's step model represents (its
	// engine.vllm_version): the image a target runs (Image).
	Version formats.VLLMVersion
}
