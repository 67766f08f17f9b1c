package profile

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/profiler/llm"
)

// logSetting is one server argument a vLLM start-up log may state and the profile flag that
// states it too: the flag, when given, wins.
type logSetting struct {
	key, flag string
	// engine says the setting is the engine block's (a.Engine), not another flag's.
	engine bool
	apply  func(a *Args, e *formats.LLMEngine, v string) error
}

func logInt(max int, set func(e *formats.LLMEngine, n int)) func(*Args, *formats.LLMEngine, string) error {
	return func(_ *Args, e *formats.LLMEngine, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > max {
			return fmt.Errorf("must be a whole number in [1, %d]", max)
		}
		set(e, n)
		return nil
	}
}

func logBool(v string) (bool, error) {
	switch v {
	case "True", "true":
		return true, nil
	case "False", "false":
		return false, nil
	}
	return false, errors.New("must be True or False")
}

// logSettings are the arguments --vllm-log reads, in the order its note lists them.
var logSettings = []logSetting{
	{"tensor_parallel_size", "tensor-parallel-size", false, func(a *Args, _ *formats.LLMEngine, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 8 {
			return errors.New("must be a whole number in [1, 8]")
		}
		a.TP, a.TPSet = v, true
		return nil
	}},
	{"max_num_seqs", "max-num-seqs", true, logInt(maxFlagSeqs, func(e *formats.LLMEngine, n int) { e.MaxNumSeqs = n })},
	{"max_num_batched_tokens", "max-num-batched-tokens", true, logInt(maxFlagBatched, func(e *formats.LLMEngine, n int) { e.MaxNumBatchedTokens = n })},
	{"max_model_len", "max-model-len", true, logInt(maxFlagLen, func(e *formats.LLMEngine, n int) { e.MaxModelLen = n })},
	{"block_size", "block-size", true, func(_ *Args, e *formats.LLMEngine, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxFlagBlock || n&(n-1) != 0 {
			return fmt.Errorf("must be a power of two in [1, %d]", maxFlagBlock)
		}
		e.BlockSize = n
		return nil
	}},
	{"gpu_memory_utilization", "gpu-memory-utilization", true, func(_ *Args, e *formats.LLMEngine, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0 && f <= 1) {
			return errors.New("must be in (0, 1]")
		}
		e.GPUMemoryUtilization = f
		return nil
	}},
	{"enable_prefix_caching", "enable-prefix-caching", true, func(_ *Args, e *formats.LLMEngine, v string) error {
		b, err := logBool(v)
		if err != nil {
			return err
		}
		e.EnablePrefixCaching = &b
		return nil
	}},
	{"kv_cache_dtype", "kv-cache-dtype", false, func(a *Args, _ *formats.LLMEngine, v string) error {
		a.KVCacheDtype = v
		return nil
	}},
	{"quantization", "quantization", false, func(a *Args, _ *formats.LLMEngine, v string) error {
		if v == "None" {
			return nil
		}
		a.Quantization = v
		return nil
	}},
	{"enable_chunked_prefill", "enable-chunked-prefill", true, func(_ *Args, e *formats.LLMEngine, v string) error {
		b, err := logBool(v)
		e.EnableChunkedPrefill = &b
		return err
	}},
	{"max_num_partial_prefills", "max-num-partial-prefills", true, logInt(maxFlagSeqs, func(e *formats.LLMEngine, n int) { e.MaxNumPartialPrefills = n })},
	{"scheduling_policy", "scheduling-policy", true, func(_ *Args, e *formats.LLMEngine, v string) error {
		if !slices.Contains(formats.SchedulingPolicies, v) {
			return fmt.Errorf("must be one of %s", strings.Join(formats.SchedulingPolicies, ", "))
		}
		e.SchedulingPolicy = v
		return nil
	}},
	{"swap_space", "swap-space", true, func(_ *Args, e *formats.LLMEngine, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f >= 0 && f <= 1<<20) {
			return fmt.Errorf("must be a number of GiB in [0, %d]", 1<<20)
		}
		e.SwapSpace = f
		return nil
	}},
	{"disable_hybrid_kv_cache_manager", "disable-hybrid-kv-cache-manager", true, func(_ *Args, e *formats.LLMEngine, v string) error {
		b, err := logBool(v)
		e.DisableHybridKVCacheManager = b
		return err
	}},
	{"enable_expert_parallel", "expert-parallel", false, func(a *Args, _ *formats.LLMEngine, v string) error {
		b, err := logBool(v)
		a.ExpertParallel = a.ExpertParallel || b
		return err
	}},
}

// applyServerLog reads --vllm-log, a vLLM server's start-up log, and fills what the flags
// leave unset: its version, the arguments of logSettings, and its KV capacity. Precedence
// is the flags, then the log, then the defaults; for the KV capacity an explicit
// --kv-capacity-tokens, then the log's, then the estimate. It is refused where the engine's
// settings are not the flags' to give (--calibrate --profile FILE states its own) and beside
// a --zoo of no LLM. With no model named (--llm, --llm-config, --import), the model is the
// one the server ran: the log's model argument, a Hugging Face id (--llm takes those). A note on stderr says what was taken and what a flag overrode.
func applyServerLog(a Args, io *run.IO) (Args, error) {
	if len(a.Calibrate) > 0 && a.Profile != "" {
		return a, run.UsageErrorf("--vllm-log: not with --calibrate --profile %s, whose engine block states the server's settings: calibrate the estimate (--llm MODEL --gpu GPU) with the log", a.Profile)
	}
	noModel := a.LLM == "" && a.Import == "" && len(a.LLMConfigs) == 0 && !llmZoo(a.Zoo)
	if noModel && a.Zoo != "" {
		return a, run.UsageErrorf("--vllm-log: a vLLM server's log: only with an LLM (--llm, --llm-config, --import or --calibrate --llm), not --zoo %s", a.Zoo)
	}
	data, err := formats.ReadText(a.VLLMLog, llm.MaxServerLogBytes)
	if err != nil {
		return a, run.UsageErrorf("--vllm-log: %v", err)
	}
	l, err := llm.ParseServerLog(a.VLLMLog, data)
	if err != nil {
		return a, run.UsageErrorf("--vllm-log: %v", err)
	}
	var took, kept []string
	if noModel {
		// No model named: the one the server ran (its model argument, a Hugging Face id).
		id := l.Args["model"]
		if id == "" {
			id = l.Args["model_tag"]
		}
		if id == "" {
			return a, run.UsageErrorf("--vllm-log %s: the log names no model (no model in its non-default args): give --llm, --llm-config or --import", a.VLLMLog)
		}
		if _, err := llm.LookupHF(id); err != nil {
			return a, run.UsageErrorf("--vllm-log %s: model: %q: %v: give its config.json with --llm-config", a.VLLMLog, id, err)
		}
		a.LLM = id
		took = append(took, "the model "+id)
	}
	e := &formats.LLMEngine{}
	if a.Engine != nil {
		c := *a.Engine
		e = &c
	}
	flagSet := func(flag string) bool {
		switch flag {
		case "tensor-parallel-size":
			return a.TPSet
		case "kv-cache-dtype":
			return a.KVCacheDtype != ""
		case "quantization":
			return a.Quantization != ""
		case "expert-parallel":
			return a.ExpertParallel
		case "enable-prefix-caching":
			return given(a, flag) || given(a, "no-enable-prefix-caching")
		}
		return given(a, flag)
	}
	engineSet := false
	a.EngineFlags = slices.Clone(a.EngineFlags)
	if l.Version != "" {
		if given(a, "vllm-version") {
			kept = append(kept, "--vllm-version "+a.Engine.VLLMVersion+" over the log's "+l.Version)
		} else {
			if _, err := formats.ParseVLLMVersion(l.Version); err != nil {
				return a, run.UsageErrorf("--vllm-log: %s: %v (give --vllm-version to profile it as another)", a.VLLMLog, err)
			}
			e.VLLMVersion, engineSet = l.Version, true
			a.EngineFlags = append(a.EngineFlags, "vllm-version")
			took = append(took, "vLLM "+l.Version)
		}
	}
	for _, s := range logSettings {
		v, ok := l.Args[s.key]
		if !ok || v == "None" {
			continue // vLLM's default: its own rule decides
		}
		if flagSet(s.flag) {
			kept = append(kept, fmt.Sprintf("--%s over the log's %s %s", s.flag, s.key, v))
			continue
		}
		if err := s.apply(&a, e, v); err != nil {
			return a, run.UsageErrorf("--vllm-log: %s: %s: %q: %v", a.VLLMLog, s.key, v, err)
		}
		took = append(took, s.key+" "+v)
		if s.engine {
			engineSet = true
			a.EngineFlags = append(a.EngineFlags, s.flag)
		}
	}
	if l.KVTokens > 0 {
		switch {
		case a.KVCapacityTokensSet:
			kept = append(kept, fmt.Sprintf("--kv-capacity-tokens %d over the log's %d", a.KVCapacityTokens, l.KVTokens))
		case l.KVTokens > maxStatedKV:
			return a, run.UsageErrorf("--vllm-log: %s: %s: more than %d tokens", a.VLLMLog, l.KVFrom, int64(maxStatedKV))
		default:
			a.KVCapacityTokens, a.KVCapacityTokensSet = l.KVTokens, true
			a.KVFrom = fmt.Sprintf("--vllm-log %s (%s)", a.VLLMLog, l.KVFrom)
			took = append(took, fmt.Sprintf("KV capacity %d tokens (%s)", l.KVTokens, l.KVFrom))
		}
	}
	if engineSet {
		a.Engine = e
	}
	if len(took) == 0 && len(kept) == 0 {
		fmt.Fprintf(io.Err, "profile: --vllm-log %s: no setting plan reads (version, %s, KV capacity)\n", a.VLLMLog, logKeys())
	}
	if len(took) > 0 {
		fmt.Fprintf(io.Err, "profile: --vllm-log %s: %s\n", a.VLLMLog, strings.Join(took, ", "))
	}
	if len(kept) > 0 {
		fmt.Fprintf(io.Err, "profile: --vllm-log %s: the flags win: %s\n", a.VLLMLog, strings.Join(kept, "; "))
	}
	if l.KVLines > 1 {
		fmt.Fprintf(io.Err, "profile: --vllm-log %s: %d KV capacity lines (one per engine core: data parallel?): the first is one engine's\n", a.VLLMLog, l.KVLines)
	}
	if u := unmodelledArgs(l.Args); len(u) > 0 {
		fmt.Fprintf(io.Err, "warning: --vllm-log %s: the server ran with %s, which plan does not model: its predictions of this server are for one without them\n", a.VLLMLog, strings.Join(u, ", "))
	}
	if m := l.Args["model"]; m != "" && a.LLM != "" && !strings.Contains(strings.ToLower(m), strings.ToLower(a.LLM)) {
		if lm, err := llm.Lookup(a.LLM); err != nil || !strings.EqualFold(lm.HF, m) {
			fmt.Fprintf(io.Err, "warning: --vllm-log %s: the server ran %s, not --llm %s: using its settings anyway\n", a.VLLMLog, m, a.LLM)
		}
	}
	return a, nil
}

// unmodelledArgs are the log's non-default args that change a server's step times or KV
// and that the step model and the engine do not represent, as "key value": eager execution
// (no CUDA graphs or compiled kernels: every kernel launched from the host), pipeline and
// data parallelism, weights offloaded to CPU memory, and a KV connector the engine block
// cannot state (kv_offload_bytes is the OffloadingConnector's).
func unmodelledArgs(args map[string]string) []string {
	var out []string
	for _, k := range []string{"enforce_eager", "pipeline_parallel_size", "data_parallel_size", "cpu_offload_gb", "kv_transfer_config"} {
		v, ok := args[k]
		if !ok || v == "None" {
			continue
		}
		switch k {
		case "enforce_eager":
			if v != "True" {
				continue
			}
		case "pipeline_parallel_size", "data_parallel_size":
			if v == "1" {
				continue
			}
		case "cpu_offload_gb":
			if f, err := strconv.ParseFloat(v, 64); err == nil && f == 0 {
				continue
			}
		case "kv_transfer_config":
			out = append(out, k+" (a KV connector: state vLLM's OffloadingConnector as the engine block's kv_offload_bytes)")
			continue
		}
		out = append(out, k+" "+v)
	}
	return out
}

func logKeys() string {
	keys := make([]string, len(logSettings))
	for i, s := range logSettings {
		keys[i] = s.key
	}
	return strings.Join(keys, ", ")
}

// kvFrom says where a stated KV capacity came from: --kv-capacity-tokens, or the log's line.
func (a Args) kvFrom() string {
	if a.KVFrom != "" {
		return a.KVFrom
	}
	return "--kv-capacity-tokens"
}
