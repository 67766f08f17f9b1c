package formats

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ProfileBackends are the backends a model profile may name.
var ProfileBackends = []string{"onnx", "roofline", "trt", "import"}

// LLMBackends are the backends an LLM profile may name.
var LLMBackends = []string{"roofline", "import"}

// PartitionMethods are the block pre-partitioning methods.
var PartitionMethods = []string{"greedy", "min-traffic"}

// ProfileUse is what a profile is read for: its LLM entries must hold what that use reads
// and no more.
type ProfileUse string

const (
	// UsePlan: `plan solve` and the plans that embed the profile. QLM's planner and its RCT
	// estimator (QLM §6) read every field of an LLM entry: the default.
	UsePlan ProfileUse = "plan"
	// UseReplay: `plan simulate --llm` replays a trace through one engine instance, which
	// reads only the engine's fields (LLM engine digest §2 and §4: the iteration curves, the
	// KV capacity, the engine block): the planner-only fields may be left out.
	UseReplay ProfileUse = "replay"
)

// ProfileUses lists the uses, the default first.
var ProfileUses = []ProfileUse{UsePlan, UseReplay}

// ParseProfileUse reads a use's name (`plan validate --for`).
func ParseProfileUse(s string) (ProfileUse, error) {
	for _, u := range ProfileUses {
		if string(u) == s {
			return u, nil
		}
	}
	return "", fmt.Errorf("%q: must be one of plan, replay", s)
}

// PlannerOnlyLLMFields are the fields of an LLM profile only a planner reads (QLM's
// placement and RCT estimator, QLM §6; model swaps, §5): one engine replaying a trace runs
// on the iteration curves, the KV capacity and the engine block alone. For UsePlan they are
// required; for UseReplay they may be left out (and are checked only when given).
var PlannerOnlyLLMFields = []string{
	"params_billion", "weight_bytes", "prefill_base_us", "prefill_us_per_token", "decode_us_per_token",
	"throughput_tokens_per_s", "kv_bytes_per_token", "avg_batch", "load_cold_us", "load_warm_us",
}

// Validate checks a profile for its default use, planning (UsePlan).
func (p *Profile) Validate() ErrorList { return p.ValidateFor(UsePlan) }

// ValidateFor checks a profile for use: UseReplay checks a planner-only field of an LLM
// entry only when it is given (not 0) and requires what one engine needs instead.
func (p *Profile) ValidateFor(use ProfileUse) ErrorList {
	v := &validator{}
	checkMeta(v, p.TypeMeta, KindProfile)
	if len(p.Models) == 0 && len(p.LLMs) == 0 {
		v.add("models", nil, "must list at least one model (models or llms)")
	}
	seen := names{}
	for i := range p.Models {
		p.Models[i].validate(v, idx("models", i), seen)
	}
	llms := map[raw]string{}
	for i := range p.LLMs {
		p.LLMs[i].validate(v, idx("llms", i), llms, use)
	}
	return v.errs
}

// ParseProfileFor decodes a profile strictly, without the semantic validation (Parse), for
// use: with UseReplay an LLM entry may leave out PlannerOnlyLLMFields (they decode as 0);
// every other structural problem is reported as Parse reports it.
func ParseProfileFor(name string, data []byte, use ProfileUse) (*Profile, error) {
	doc, err := parse(name, data, KindProfile, nil)
	if err == nil {
		return doc.(*Profile), nil
	}
	if use != UseReplay || !errors.Is(err, ErrDecode) {
		return nil, err
	}
	if rest := withoutPlannerFieldsLeftOut(Problems(err)); len(rest) > 0 {
		return nil, rest.tagged(ErrDecode) // the problems a replay has too
	}
	// Every problem is a planner-only field left out: decode the document with them 0.
	tree, _, terr := parseTree(data)
	if terr != nil {
		return nil, err
	}
	llms, _ := tree["llms"].([]any)
	for _, e := range llms {
		if m, ok := e.(map[string]any); ok {
			for _, f := range PlannerOnlyLLMFields {
				if _, set := m[f]; !set {
					m[f] = json.Number("0")
				}
			}
		}
	}
	js, merr := json.Marshal(tree)
	if merr != nil {
		return nil, err
	}
	if doc, err = parse(name, js, KindProfile, nil); err != nil {
		return nil, err
	}
	return doc.(*Profile), nil
}

// DecodeProfileFor is ParseProfileFor followed by ValidateFor(use): DecodeInto for a use.
func DecodeProfileFor(name string, data []byte, use ProfileUse) (*Profile, error) {
	p, err := ParseProfileFor(name, data, use)
	if err != nil {
		return nil, err
	}
	if errs := p.ValidateFor(use); len(errs) > 0 {
		return nil, errs.WithFile(name)
	}
	return p, nil
}

// ReadProfileFor reads a profile file for use (DecodeProfileFor).
func ReadProfileFor(path string, use ProfileUse) (*Profile, error) {
	data, err := ReadBytes(path)
	if err != nil {
		return nil, err
	}
	return DecodeProfileFor(path, data, use)
}

// withoutPlannerFieldsLeftOut are the problems of a failed parse but the planner-only
// fields missing from LLM entries (llms[i].FIELD: missing required field).
func withoutPlannerFieldsLeftOut(el ErrorList) ErrorList {
	var rest ErrorList
	for _, e := range el {
		at, ok := strings.CutPrefix(e.Path, "llms[")
		_, f, found := strings.Cut(at, "].")
		if !ok || !found || e.Rule != "missing required field" || !slices.Contains(PlannerOnlyLLMFields, f) {
			rest = append(rest, e)
		}
	}
	return rest
}

func oneOf(v *validator, path, s string, allowed []string) {
	for _, a := range allowed {
		if s == a {
			return
		}
	}
	v.add(path, s, "must be one of %s", strings.Join(allowed, ", "))
}

func (m *ModelProfile) validate(v *validator, p string, seen names) {
	seen.check(v, field(p, "name"), m.Name)
	oneOf(v, field(p, "backend"), m.Backend, ProfileBackends)
	for j, d := range m.InputShape {
		atLeast(v, idx(field(p, "input_shape"), j), d, 1)
	}
	atLeast(v, field(p, "memory_bytes"), m.MemoryBytes, 0)
	for j, b := range m.PartsMemoryBytes {
		atLeast(v, idx(field(p, "parts_memory_bytes"), j), b, 0)
	}
	if pi := m.Partition; pi != nil {
		pp := field(p, "partition")
		oneOf(v, field(pp, "method"), pi.Method, PartitionMethods)
		atLeast(v, field(pp, "blocks"), int64(pi.Blocks), 1)
		nonNegative(v, field(pp, "lower_bound"), pi.LowerBound)
		nonNegative(v, field(pp, "upper_bound"), pi.UpperBound)
		if finite(pi.LowerBound) && finite(pi.UpperBound) && pi.UpperBound > 0 && pi.UpperBound < pi.LowerBound {
			v.add(field(pp, "upper_bound"), pi.UpperBound, "must be >= lower_bound (%g)", pi.LowerBound)
		}
	}
	layerNames := names{}
	for j := range m.Layers {
		l := &m.Layers[j]
		lp := idx(field(p, "layers"), j)
		layerNames.check(v, field(lp, "name"), l.Name)
		notEmpty(v, field(lp, "op"), l.Op)
		nonNegative(v, field(lp, "flops"), l.FLOPs)
		nonNegative(v, field(lp, "bytes"), l.Bytes)
		atLeast(v, field(lp, "param_bytes"), l.ParamBytes, 0)
		atLeast(v, field(lp, "output_bytes"), l.OutputBytes, 0)
		for _, gpu := range sortedKeys(l.LatencyUs) {
			kp := keyPath(field(lp, "latency_us"), gpu)
			if gpu == "" {
				v.add(kp, gpu, "GPU type must not be empty")
			}
			microseconds(v, kp, l.LatencyUs[gpu])
		}
	}
	m.validateBlocks(v, p)
	nb := len(m.Blocks)
	if nb > 0 && len(m.CutBytes) != nb-1 {
		v.add(field(p, "cut_bytes"), len(m.CutBytes), "length must be len(blocks)-1 = %d", nb-1)
	}
	for j, c := range m.CutBytes {
		atLeast(v, idx(field(p, "cut_bytes"), j), c, 0)
	}
	if len(m.Latency) == 0 {
		v.add(field(p, "latency"), nil, "must have at least one entry")
	}
	type key struct {
		gpu         string
		vgpu, batch int
	}
	first := map[key]int{}
	for j := range m.Latency {
		e := &m.Latency[j]
		ep := idx(field(p, "latency"), j)
		notEmpty(v, field(ep, "gpu"), e.GPU)
		vgpuLevel(v, field(ep, "vgpu"), e.VGPU)
		atLeast(v, field(ep, "batch"), int64(e.Batch), 1)
		k := key{e.GPU, e.VGPU, e.Batch}
		if f, dup := first[k]; dup {
			v.add(ep, raw(fmt.Sprintf("(%s, vgpu %d, batch %d)", e.GPU, e.VGPU, e.Batch)), "duplicate (gpu, vgpu, batch) entry (first at %s)", idx(field(p, "latency"), f))
		} else {
			first[k] = j
		}
		perBlock := func(name string, xs []float64, optional bool, check func(*validator, string, float64)) {
			fp := field(ep, name)
			if nb > 0 && (len(xs) > 0 || !optional) && len(xs) != nb {
				v.add(fp, len(xs), "length must be len(blocks) = %d", nb)
			}
			for b, x := range xs {
				check(v, idx(fp, b), x)
			}
		}
		perBlock("block_us", e.BlockUs, false, microseconds)
		perBlock("p90_us", e.P90Us, true, microseconds)
		perBlock("cv", e.CV, true, nonNegative)
		microseconds(v, field(ep, "total_us"), e.TotalUs)
		perBlock("raw_block_us", e.RawBlockUs, true, microseconds)
		microseconds(v, field(ep, "raw_total_us"), e.RawTotalUs)
	}
	if m.Fit != "" {
		oneOf(v, field(p, "fit"), m.Fit, []string{FitNone, FitOutliers, FitMonotone})
	}
}

// validateBlocks checks that blocks are non-empty layer ranges, contiguous from layer 0, and
// cover all layers when layers are listed.
func (m *ModelProfile) validateBlocks(v *validator, p string) {
	bp := field(p, "blocks")
	if len(m.Blocks) == 0 {
		v.add(bp, nil, "must list at least one block")
		return
	}
	for j, b := range m.Blocks {
		jp := idx(bp, j)
		if j == 0 && b.FirstLayer != 0 {
			v.add(field(jp, "first_layer"), b.FirstLayer, "must be 0: blocks must start at layer 0")
		}
		if j > 0 && b.FirstLayer != m.Blocks[j-1].EndLayer {
			v.add(field(jp, "first_layer"), b.FirstLayer, "must equal blocks[%d].end_layer (%d): blocks must be contiguous", j-1, m.Blocks[j-1].EndLayer)
		}
		if b.EndLayer <= b.FirstLayer {
			v.add(field(jp, "end_layer"), b.EndLayer, "must be > first_layer (%d)", b.FirstLayer)
		}
		atLeast(v, field(jp, "memory_bytes"), b.MemoryBytes, 0)
	}
	if n := len(m.Layers); n > 0 {
		last := len(m.Blocks) - 1
		if end := m.Blocks[last].EndLayer; end != n {
			v.add(field(idx(bp, last), "end_layer"), end, "must equal the number of layers (%d): blocks must cover every layer", n)
		}
	}
}

func (l *LLMProfile) validate(v *validator, p string, seen map[raw]string, use ProfileUse) {
	notEmpty(v, field(p, "model"), l.Model)
	notEmpty(v, field(p, "gpu"), l.GPU)
	atLeast(v, field(p, "gpu_count"), int64(l.GPUCount), 1)
	if l.Model != "" && l.GPU != "" {
		k := raw(fmt.Sprintf("(%s, %s x%d)", l.Model, l.GPU, l.GPUCount))
		if first, dup := seen[k]; dup {
			v.add(p, k, "duplicate (model, gpu, gpu_count) entry (first at %s)", first)
		} else {
			seen[k] = p
		}
	}
	oneOf(v, field(p, "backend"), l.Backend, LLMBackends)
	// A planner-only field (PlannerOnlyLLMFields) is required for UsePlan; for UseReplay it
	// is checked only when given.
	given := func(x float64) bool { return use != UseReplay || x != 0 }
	if given(l.ParamsB) {
		positive(v, field(p, "params_billion"), l.ParamsB)
	}
	switch {
	case given(float64(l.WeightBytes)) && l.WeightBytes <= 0:
		v.add(field(p, "weight_bytes"), l.WeightBytes, "must be > 0")
	case l.WeightBytes > MaxWeightBytes:
		v.add(field(p, "weight_bytes"), l.WeightBytes, "must be <= 2^50 (%d bytes, 1 PiB): no model's weights are larger", int64(MaxWeightBytes))
	}
	microseconds(v, field(p, "prefill_base_us"), l.PrefillBaseUs)
	if given(l.PrefillUsPerToken) {
		positiveMicroseconds(v, field(p, "prefill_us_per_token"), l.PrefillUsPerToken)
	}
	if given(l.DecodeUsPerToken) {
		positiveMicroseconds(v, field(p, "decode_us_per_token"), l.DecodeUsPerToken)
	}
	if given(l.ThroughputTokensPerS) {
		positiveRate(v, field(p, "throughput_tokens_per_s"), l.ThroughputTokensPerS)
	}
	if given(float64(l.KVBytesPerToken)) && l.KVBytesPerToken <= 0 {
		v.add(field(p, "kv_bytes_per_token"), l.KVBytesPerToken, "must be > 0")
	}
	switch {
	case l.KVCapacityTokens <= 0:
		v.add(field(p, "kv_capacity_tokens"), l.KVCapacityTokens, "must be > 0")
	case l.KVCapacityTokens > MaxKVCapacityTokens:
		v.add(field(p, "kv_capacity_tokens"), l.KVCapacityTokens, "must be <= %d (2^31-1): the engine numbers KV blocks in 32 bits; a one-layer model's cache on a B200 is 6×10^8 tokens", int64(MaxKVCapacityTokens))
	}
	if l.KVBytesPerToken > MaxKVBytesPerToken {
		v.add(field(p, "kv_bytes_per_token"), l.KVBytesPerToken, "must be <= %d (16 MiB): some 30 times the largest models' (Llama-3.1-405B: 504 KiB)", int64(MaxKVBytesPerToken))
	}
	if l.WeightDType != "" {
		oneOf(v, field(p, "weight_dtype"), l.WeightDType, WeightDTypes)
	}
	if l.RoutedExperts < 0 {
		v.add(field(p, "routed_experts"), l.RoutedExperts, "must be >= 0 (0: a dense model)")
	}
	if given(l.AvgBatch) {
		positive(v, field(p, "avg_batch"), l.AvgBatch)
	}
	optionalPositive(v, field(p, "epsilon"), l.Epsilon)
	microseconds(v, field(p, "load_cold_us"), l.LoadColdUs)
	microseconds(v, field(p, "load_warm_us"), l.LoadWarmUs)
	optionalPositive(v, field(p, "host_link_gbps"), l.HostLinkGBps)
	switch {
	case finite(l.HostLinkGBps) && l.HostLinkGBps > MaxNICGbps:
		v.add(field(p, "host_link_gbps"), l.HostLinkGBps, "must be <= %g GB/s", MaxNICGbps)
	case l.HostLinkGBps > 0 && l.HostLinkGBps < MinHostLinkGBps:
		// Swaps and offload loads wait on it: a link of 1e-9 GB/s made one load years of
		// simulated time, stepped through by the engine's timers.
		v.add(field(p, "host_link_gbps"), l.HostLinkGBps, "must be 0 (the default, 25 GB/s) or >= %g GB/s: PCIe 1.0 x1 moves 0.25 GB/s", MinHostLinkGBps)
	}
	if it := l.Iteration; it != nil {
		ip := field(p, "iteration")
		validPWL(v, field(ip, "prefill"), it.Prefill)
		validPWL(v, field(ip, "decode"), it.Decode)
		microseconds(v, field(ip, "decode_us_per_context_token"), it.DecodeUsPerContextToken)
		atLeast(v, field(ip, "max_batched_tokens"), int64(it.MaxBatchedTokens), 0)
		atLeast(v, field(ip, "max_seqs"), int64(it.MaxSeqs), 0)
		atLeast(v, field(ip, "block_tokens"), int64(it.BlockTokens), 0)
		atLeast(v, field(ip, "cpu_swap_bytes"), it.CPUSwapBytes, 0)
		if it.PreemptMode != "" {
			oneOf(v, field(ip, "preempt_mode"), it.PreemptMode, PreemptModes)
		}
	}
	if l.Engine != nil {
		l.Engine.validate(v, field(p, "engine"), l)
	}
	if g := l.KVGroups; g != nil {
		gp := field(p, "kv_groups")
		atLeast(v, field(gp, "full"), int64(g.Full), 0)
		atLeast(v, field(gp, "sliding"), int64(g.Sliding), 0)
		atLeast(v, field(gp, "chunked"), int64(g.Chunked), 0)
		if g.Full >= 0 && g.Sliding >= 0 && g.Chunked >= 0 && g.Groups() < 1 {
			v.add(field(gp, "sliding"), g.Sliding, "full + sliding + chunked must be >= 1: a KV cache has at least one group")
		}
		if g.Full <= MaxKVGroups && g.Sliding <= MaxKVGroups && g.Chunked <= MaxKVGroups && g.Groups() > MaxKVGroups {
			v.add(field(gp, "sliding"), g.Sliding, "full + sliding + chunked must be <= %d: a group holds at least one layer", MaxKVGroups)
		}
		for _, n := range []struct {
			name  string
			value int
		}{{"full", g.Full}, {"sliding", g.Sliding}, {"chunked", g.Chunked}} {
			if n.value > MaxKVGroups {
				v.add(field(gp, n.name), n.value, "must be <= %d: a group holds at least one layer", MaxKVGroups)
			}
		}
		if g.Sliding > 0 {
			atLeast(v, field(gp, "sliding_window"), int64(g.SlidingWindow), 1)
		}
		if int64(g.SlidingWindow) > MaxKVCapacityTokens {
			v.add(field(gp, "sliding_window"), g.SlidingWindow, "must be <= %d", int64(MaxKVCapacityTokens))
		}
		if g.Chunked > 0 {
			atLeast(v, field(gp, "attention_chunk"), int64(g.AttentionChunk), 1)
		}
		if int64(g.AttentionChunk) > MaxKVCapacityTokens {
			v.add(field(gp, "attention_chunk"), g.AttentionChunk, "must be <= %d", int64(MaxKVCapacityTokens))
		}
		atLeast(v, field(gp, "layers_per_group"), int64(g.LayersPerGroup), 1)
		if n := int64(g.Groups()); n > 1 && n <= MaxKVGroups && l.KVCapacityTokens > 0 && l.KVCapacityTokens <= MaxKVCapacityTokens && l.KVCapacityTokens*n > MaxKVCapacityTokens {
			v.add(field(p, "kv_capacity_tokens"), l.KVCapacityTokens, "must be <= %d over %d KV groups: the engine numbers the pool's blocks in 32 bits", int64(MaxKVCapacityTokens)/n, n)
		}
		if g.LayersPerGroup > MaxKVGroups {
			v.add(field(gp, "layers_per_group"), g.LayersPerGroup, "must be <= %d", MaxKVGroups)
		}
	}
	if l.Calibration != nil {
		l.Calibration.validate(v, field(p, "calibration"))
	}
	if use == UseReplay {
		l.validateReplay(v, p)
	}
}

// validateReplay requires what one engine reads in place of the planner-only fields it
// may leave out (UseReplay): the iteration curves, or without them the scalar prefill and
// decode times the engine derives its curves from; and the KV bytes per token when
// engine.swap_space makes preemption copy KV to CPU memory (its time is bytes over the host
// link, LLM engine digest §2.3).
func (l *LLMProfile) validateReplay(v *validator, p string) {
	if l.Iteration == nil {
		for _, f := range []struct {
			name string
			x    float64
		}{{"prefill_us_per_token", l.PrefillUsPerToken}, {"decode_us_per_token", l.DecodeUsPerToken}} {
			if f.x == 0 {
				v.add(field(p, f.name), nil, "missing: without iteration curves (iteration) the engine derives its step times from prefill_base_us, prefill_us_per_token and decode_us_per_token")
			}
		}
	}
	if l.Engine != nil && l.Engine.KVOffloadBytes > 0 && l.KVBytesPerToken <= 0 {
		// Without it the tier has no blocks: the offload would silently be off.
		v.add(field(p, "kv_bytes_per_token"), l.KVBytesPerToken, "missing: engine.kv_offload_bytes %d holds KV blocks of kv_bytes_per_token bytes a token", l.Engine.KVOffloadBytes)
	}
	if l.Engine != nil && l.Engine.SwapSpace > 0 && l.KVBytesPerToken == 0 {
		v.add(field(p, "kv_bytes_per_token"), nil, "missing: engine.swap_space %g swaps preempted KV to CPU memory, whose time is its bytes", l.Engine.SwapSpace)
	}
}

// MaxOutputDelaySteps bounds engine.output_delay_steps.
const MaxOutputDelaySteps = 16

// Bounds of the LLM profile fields that scale a simulated engine's memory or time.
const (
	// MaxKVGroups bounds a KV layout's group count and layers per group: no published
	// decoder has more layers.
	MaxKVGroups = 1024
	// MaxKVCapacityTokens bounds kv_capacity_tokens: KV blocks are numbered in 32 bits.
	MaxKVCapacityTokens = 1<<31 - 1
	// MaxKVBytesPerToken bounds kv_bytes_per_token (16 MiB).
	MaxKVBytesPerToken = 1 << 24
	// MinHostLinkGBps is the slowest host link (GB/s) a profile may give.
	MinHostLinkGBps = 0.1
	// MaxEngineSeqs bounds max_num_seqs and max_num_partial_prefills (vLLM's defaults: 256
	// and 1024 sequences).
	MaxEngineSeqs = 1 << 16
	// MaxEngineBatchedTokens bounds max_num_batched_tokens (vLLM's defaults: 2048 and 8192).
	MaxEngineBatchedTokens = 1 << 24
	// MaxEngineBlockSize bounds block_size (vLLM's: 1 to 256 tokens).
	MaxEngineBlockSize = 1 << 12
)

// intIn requires an integer in [lo, hi].
func intIn(v *validator, path string, x, lo, hi int64) {
	if x < lo || x > hi {
		v.add(path, x, "must be in [%d, %d]", lo, hi)
	}
}

// validate checks engine settings that an engine could not run: budgets that cannot hold one
// request (max_num_batched_tokens below the block size; a KV cache smaller than one
// max_model_len; chunked prefill off with max_model_len over the token budget, which vLLM
// refuses too) and out-of-range values.
func (e *LLMEngine) validate(v *validator, p string, l *LLMProfile) {
	// Every setting that scales an engine's memory or time is bounded (MaxEngineSeqs,
	// MaxEngineBatchedTokens, MaxEngineBlockSize; the KV capacity and offload bytes in their
	// fields): far above any deployment, within what one simulated engine holds.
	intIn(v, field(p, "max_num_seqs"), int64(e.MaxNumSeqs), 0, MaxEngineSeqs)
	intIn(v, field(p, "max_num_batched_tokens"), int64(e.MaxNumBatchedTokens), 0, MaxEngineBatchedTokens)
	intIn(v, field(p, "block_size"), int64(e.BlockSize), 0, MaxEngineBlockSize)
	intIn(v, field(p, "max_num_partial_prefills"), int64(e.MaxNumPartialPrefills), 0, MaxEngineSeqs)
	atLeast(v, field(p, "max_model_len"), int64(e.MaxModelLen), 0)
	block := e.BlockSize
	if block <= 0 {
		block = 16
		if l.Iteration != nil && l.Iteration.BlockTokens > 0 {
			block = l.Iteration.BlockTokens
		}
	}
	if e.MaxNumBatchedTokens != 0 && e.MaxNumBatchedTokens < block {
		v.add(field(p, "max_num_batched_tokens"), e.MaxNumBatchedTokens, "must be >= block_size (%d): a step could not compute one block", block)
	}
	if e.MaxModelLen > 0 && l.KVCapacityTokens > 0 && int64(e.MaxModelLen) > l.KVCapacityTokens {
		v.add(field(p, "max_model_len"), e.MaxModelLen, "must be <= kv_capacity_tokens (%d): the KV cache cannot hold one request of this length", l.KVCapacityTokens)
	}
	if !e.Chunked() && e.MaxModelLen > 0 && e.MaxNumBatchedTokens > 0 && e.MaxModelLen > e.MaxNumBatchedTokens {
		v.add(field(p, "max_model_len"), e.MaxModelLen, "must be <= max_num_batched_tokens (%d) with enable_chunked_prefill false", e.MaxNumBatchedTokens)
	}
	if e.GPUMemoryUtilization != 0 && !(finite(e.GPUMemoryUtilization) && e.GPUMemoryUtilization > 0 && e.GPUMemoryUtilization <= 1) {
		v.add(field(p, "gpu_memory_utilization"), e.GPUMemoryUtilization, "must be in (0, 1]")
	}
	if !finite(e.SwapSpace) || e.SwapSpace < 0 || e.SwapSpace > 1<<20 {
		v.add(field(p, "swap_space"), e.SwapSpace, "must be in [0, %d] GiB", 1<<20)
	}
	if e.SchedulingPolicy != "" {
		oneOf(v, field(p, "scheduling_policy"), e.SchedulingPolicy, SchedulingPolicies)
	}
	if e.KVCacheDtype != "" {
		oneOf(v, field(p, "kv_cache_dtype"), e.KVCacheDtype, KVCacheDtypes)
	}
	if e.KVOffloadBytes < 0 || e.KVOffloadBytes > 1<<50 {
		v.add(field(p, "kv_offload_bytes"), e.KVOffloadBytes, "must be in [0, 2^50] bytes")
	} else if e.KVOffloadBytes > 0 && !e.PrefixCaching() {
		v.add(field(p, "kv_offload_bytes"), e.KVOffloadBytes, "needs enable_prefix_caching: the offload tier extends the prefix cache")
	}
	if e.Quantization != "" {
		oneOf(v, field(p, "quantization"), e.Quantization, Quantizations)
	}
	if d := e.OutputDelaySteps; d != nil && (*d < 0 || *d > MaxOutputDelaySteps) {
		v.add(field(p, "output_delay_steps"), *d, "must be in [0, %d]", MaxOutputDelaySteps)
	}
	if e.BlockSize > 0 && e.BlockSize&(e.BlockSize-1) != 0 {
		v.add(field(p, "block_size"), e.BlockSize, "must be a power of two (vLLM's block sizes)")
	}
	if e.KVAllocation != "" {
		oneOf(v, field(p, "kv_allocation"), e.KVAllocation, KVAllocations)
	}
	if e.VLLMVersion != "" {
		if _, err := ParseVLLMVersion(e.VLLMVersion); err != nil {
			v.add(field(p, "vllm_version"), e.VLLMVersion, "%s", err.Error())
		}
	}
	if w := e.Watermark; w != nil && !(finite(*w) && *w >= 0 && *w < 1) {
		v.add(field(p, "watermark"), *w, "must be in [0, 1): a fraction of the KV blocks")
	}
	if e.Release != "" {
		oneOf(v, field(p, "release"), e.Release, Releases)
	}
	if e.PreemptionMode != "" {
		oneOf(v, field(p, "preemption_mode"), e.PreemptionMode, PreemptionModes)
	}
	if sp := e.Speculative; sp != nil {
		sp.validate(v, field(p, "speculative"))
	}
	if e.PreemptionMode == PreemptionSwap && e.SwapSpace <= 0 && (l.Iteration == nil || l.Iteration.CPUSwapBytes <= 0) {
		v.add(field(p, "preemption_mode"), e.PreemptionMode, "needs swap_space > 0: swapped KV needs CPU memory")
	}
}

// validPWL checks a piecewise-linear time: at least one point, token counts >= 1 and strictly
// increasing, times finite and > 0. Measured curves are noisy and need not be monotone (LLM
// engine digest §2.4): a falling point is used as measured (PWLWarnings names the ones that
// fall by more than PWLFallTolerance).
func validPWL(v *validator, p string, pts []PWLPoint) {
	if len(pts) == 0 {
		v.add(p, nil, "must list at least one point")
		return
	}
	for i, pt := range pts {
		pp := idx(p, i)
		atLeast(v, field(pp, "tokens"), int64(pt.Tokens), 1)
		positiveMicroseconds(v, field(pp, "us"), pt.Us)
		if i > 0 {
			if pt.Tokens <= pts[i-1].Tokens {
				v.add(field(pp, "tokens"), pt.Tokens, "must be > the previous point's tokens (%d)", pts[i-1].Tokens)
			}
		}
	}
}

// PWLFallTolerance is the relative fall between neighbouring points of an iteration curve
// above which PWLWarnings names the point (10%).
const PWLFallTolerance = 0.10

// PWLWarnings lists, as "path: message" lines, the points of the profile's LLM iteration
// curves whose time falls below the previous point's by more than PWLFallTolerance: accepted
// and used as measured, but worth a look (noise, or a mislabelled row).
func PWLWarnings(p *Profile) []string {
	var out []string
	for i := range p.LLMs {
		it := p.LLMs[i].Iteration
		if it == nil {
			continue
		}
		for _, c := range []struct {
			name string
			pts  []PWLPoint
		}{{"prefill", it.Prefill}, {"decode", it.Decode}} {
			for k := 1; k < len(c.pts); k++ {
				a, b := c.pts[k-1].Us, c.pts[k].Us
				if a > 0 && b < a*(1-PWLFallTolerance) {
					out = append(out, fmt.Sprintf("%s.us: %g µs at %d tokens is %.0f%% below the previous point (%g µs at %d tokens); used as measured",
						idx(field(field(idx("llms", i), "iteration"), c.name), k), b, c.pts[k].Tokens, 100*(1-b/a), a, c.pts[k-1].Tokens))
				}
			}
		}
	}
	return out
}

// validate checks speculative decoding's settings: k >= 1, α in [0, 1) (α = 1 would accept
// every draft forever: the expected tokens per step diverge), a draft cost >= 0, given once.
func (s *LLMSpeculative) validate(v *validator, p string) {
	if s.DraftTokens < 1 || s.DraftTokens > 64 {
		v.add(field(p, "draft_tokens"), s.DraftTokens, "must be in [1, 64]")
	}
	if !(finite(s.AcceptanceRate) && s.AcceptanceRate >= 0 && s.AcceptanceRate < 1) {
		v.add(field(p, "acceptance_rate"), s.AcceptanceRate, "must be in [0, 1)")
	}
	if !(finite(s.DraftStepUs) && s.DraftStepUs >= 0) {
		v.add(field(p, "draft_step_us"), s.DraftStepUs, "must be >= 0")
	}
	if !(finite(s.DraftCostRatio) && s.DraftCostRatio >= 0) {
		v.add(field(p, "draft_cost_ratio"), s.DraftCostRatio, "must be >= 0")
	}
	if s.DraftStepUs > 0 && s.DraftCostRatio > 0 {
		v.add(field(p, "draft_cost_ratio"), s.DraftCostRatio, "must be omitted with draft_step_us (one draft cost)")
	}
}
