package formats

import (
	"fmt"
	"regexp"
	"strconv"
)

// The vLLM releases an LLM profile's step model and engine rules can represent, by minor
// version (LLM engine digest part 2, §1): the V0 engine before 0.8 (VLLM_USE_V1 became the
// default in 0.8.0), the V1 engine from 0.8, and from 0.14 V1 with async scheduling on by
// default (vLLM 0.14.0's release notes: the scheduler works one step ahead of the GPU, so
// its host work overlaps the step, and a finished request's blocks are free a step later).
// The kernel tables the step model reads were measured under vLLM 0.14 (A100) and 0.24
// (H100, L40S); the validation set (bench/vllmruns) ran 0.15.1.
const (
	// MinVLLMMinor and MaxVLLMMinor bound the modelled 0.x releases.
	MinVLLMMinor = 6
	MaxVLLMMinor = 15
	// VLLMV1Minor is the first release that runs V1 by default; VLLMAsyncMinor the first
	// with async scheduling on by default.
	VLLMV1Minor    = 8
	VLLMAsyncMinor = 14
	// VLLMChunkedHybridMinor is the first release whose hybrid KV cache manager is on by
	// default for chunked local attention (Llama-4): VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_
	// HYBRID_KV_CACHE defaults to false through 0.12 (vLLM PR #21761: the per-group
	// metadata builds cost ~2 ms a step) and to true from PR #29627 (merged December 2025,
	// which caches those builds; 0.16's documentation reads true). 0.13 was cut about then
	// and is taken as off.
	VLLMChunkedHybridMinor = 14
)

// DefaultVLLMVersion is the release a profile models when it names none: the current V1
// release, the one the validation set ran.
var DefaultVLLMVersion = fmt.Sprintf("0.%d", MaxVLLMMinor)

// vllmVersionRE reads a vLLM version: "0.6.3", "v0.10.1.post1", "0.11.0rc2", "0.15".
var vllmVersionRE = regexp.MustCompile(`^v?(\d+)\.(\d+)(?:\.\d+)?(?:[.+\-]?[0-9A-Za-z.]*)?$`)

// VLLMVersion is a modelled vLLM release: its minor version (0.x) and what it implies.
type VLLMVersion struct {
	Minor int
}

// String is the version as profiles write it: "0.15".
func (v VLLMVersion) String() string { return fmt.Sprintf("0.%d", v.Minor) }

// V1 reports whether the release runs the V1 engine by default.
func (v VLLMVersion) V1() bool { return v.Minor >= VLLMV1Minor }

// AsyncScheduling reports whether the release schedules one step ahead of the GPU by
// default: the scheduler's and the input preparation's host work overlap the step.
func (v VLLMVersion) AsyncScheduling() bool { return v.Minor >= VLLMAsyncMinor }

// ChunkedLocalHybrid reports whether the release's hybrid KV cache manager keeps only the
// current chunk of a chunked-local-attention layer by default (else vLLM turns the manager
// off for such a model, and every layer keeps every token).
func (v VLLMVersion) ChunkedLocalHybrid() bool { return v.Minor >= VLLMChunkedHybridMinor }

// ParseVLLMVersion reads a vLLM version ("0.15", "v0.15.1", "0.6.3.post1") and refuses,
// by name, one the step model cannot represent.
func ParseVLLMVersion(s string) (VLLMVersion, error) {
	m := vllmVersionRE.FindStringSubmatch(s)
	if m == nil {
		return VLLMVersion{}, fmt.Errorf("vLLM version %q: must be a version such as 0.15 or v0.15.1", s)
	}
	major, _ := strconv.Atoi(m[1])
	minor, err := strconv.Atoi(m[2])
	if err != nil || major != 0 || minor < MinVLLMMinor || minor > MaxVLLMMinor {
		return VLLMVersion{}, fmt.Errorf("vLLM version %s: not modelled: plan models vLLM 0.%d to 0.%d (V0 to 0.%d, V1 from 0.%d, async scheduling from 0.%d)",
			s, MinVLLMMinor, MaxVLLMMinor, VLLMV1Minor-1, VLLMV1Minor, VLLMAsyncMinor)
	}
	return VLLMVersion{Minor: minor}, nil
}

// Version is the engine's vLLM release: its vllm_version, or DefaultVLLMVersion (nil
// engine too); an unmodelled one (which validation refuses) reads as the default.
func (e *LLMEngine) Version() VLLMVersion {
	if e != nil && e.VLLMVersion != "" {
		if v, err := ParseVLLMVersion(e.VLLMVersion); err == nil {
			return v
		}
	}
	v, _ := ParseVLLMVersion(DefaultVLLMVersion)
	return v
}

// VersionDefaults sets, on an engine block of release v, the scheduling rules the release
// uses by default where e states none (LLM engine digest part 2, §1–2): V0 reserves a
// whole prompt's KV blocks at admission, frees a finished request's blocks a step late
// (async output processing) and has prefix caching off; V1 before scheduler_reserve_full_isl
// (to 0.11) allocates per chunk and frees in the same step; later V1 takes the current
// allocation rule; with async scheduling (0.14 on) blocks are free a step late again. It
// returns what each rule implied, for the user.
func (e *LLMEngine) VersionDefaults(v VLLMVersion) []string {
	e.VLLMVersion = v.String()
	set := func(dst *string, val string) {
		if *dst == "" {
			*dst = val
		}
	}
	switch {
	case !v.V1():
		set(&e.KVAllocation, KVAllocAdmission)
		set(&e.Release, ReleaseNextStep)
		if e.EnablePrefixCaching == nil {
			e.EnablePrefixCaching = new(false)
		}
		return []string{fmt.Sprintf("vllm_version %s: the V0 engine: KV blocks for the whole prompt at admission, a finished request's blocks free a step later (async output processing), no prefix caching", v)}
	case v.Minor <= 11:
		set(&e.KVAllocation, KVAllocChunk)
		set(&e.Release, ReleaseSameStep)
		if e.EnablePrefixCaching == nil {
			e.EnablePrefixCaching = new(true)
		}
		return []string{fmt.Sprintf("vllm_version %s: the V1 engine before scheduler_reserve_full_isl: KV blocks per chunk, freed in the same step, prefix caching on", v)}
	case !v.AsyncScheduling():
		if e.EnablePrefixCaching == nil {
			e.EnablePrefixCaching = new(true)
		}
		return []string{fmt.Sprintf("vllm_version %s: V1 defaults (kv_allocation %s), prefix caching on, synchronous scheduling", v, KVAllocDefault)}
	}
	set(&e.Release, ReleaseNextStep)
	if e.EnablePrefixCaching == nil {
		e.EnablePrefixCaching = new(true)
	}
	return []string{fmt.Sprintf("vllm_version %s: V1 with async scheduling (kv_allocation %s, a finished request's blocks free a step later), prefix caching on", v, KVAllocDefault)}
}

// Overlay sets on e every setting o states (non-zero, non-nil): a server's own flags over
// defaults (profiler/llm's estimates, `plan profile`'s vLLM flags over a step log's).
func (e *LLMEngine) Overlay(o *LLMEngine) {
	if o == nil {
		return
	}
	ints := []struct{ dst, src *int }{
		{&e.MaxNumBatchedTokens, &o.MaxNumBatchedTokens}, {&e.MaxNumSeqs, &o.MaxNumSeqs}, {&e.BlockSize, &o.BlockSize},
		{&e.MaxModelLen, &o.MaxModelLen}, {&e.MaxNumPartialPrefills, &o.MaxNumPartialPrefills},
	}
	for _, f := range ints {
		if *f.src > 0 {
			*f.dst = *f.src
		}
	}
	strs := []struct{ dst, src *string }{
		{&e.VLLMVersion, &o.VLLMVersion}, {&e.KVAllocation, &o.KVAllocation}, {&e.Release, &o.Release},
		{&e.SchedulingPolicy, &o.SchedulingPolicy}, {&e.PreemptionMode, &o.PreemptionMode},
	}
	for _, f := range strs {
		if *f.src != "" {
			*f.dst = *f.src
		}
	}
	if o.GPUMemoryUtilization > 0 {
		e.GPUMemoryUtilization = o.GPUMemoryUtilization
	}
	if o.EnableChunkedPrefill != nil {
		e.EnableChunkedPrefill = new(*o.EnableChunkedPrefill)
	}
	if o.EnablePrefixCaching != nil {
		e.EnablePrefixCaching = new(*o.EnablePrefixCaching)
	}
	if o.Watermark != nil {
		e.Watermark = new(*o.Watermark)
	}
	if o.KVOffloadBytes > 0 {
		e.KVOffloadBytes = o.KVOffloadBytes
	}
	if o.SwapSpace > 0 {
		e.SwapSpace = o.SwapSpace
	}
	if o.DisableHybridKVCacheManager {
		e.DisableHybridKVCacheManager = true
	}
}

// HybridKVOff reports whether the engine runs without vLLM's hybrid KV cache manager, so
// every layer of a hybrid-attention model keeps every token (one KV group): the flag
// (--disable-hybrid-kv-cache-manager), or a KV connector (kv_offload_bytes: vLLM 0.15's
// OffloadingConnector does not support the manager, so vLLM turns it off).
func (e *LLMEngine) HybridKVOff() bool {
	return e != nil && (e.DisableHybridKVCacheManager || e.KVOffloadBytes > 0)
}
