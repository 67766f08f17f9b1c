// Package qlm exports QLM plans to Triton, KServe and Ray Serve (following
// export/dyorc and export/cascade). A QLM plan (Patke et al., "QLM") is a set of LLM instances
// — an engine with one model loaded on a fixed GPU set (QLM §2.3) — plus the request groups
// (one model, similar SLO and lengths, QLM §4) and each instance's virtual queue of groups,
// head first: the order is the plan (QLM §4, §7). Every target can run the instances natively,
// as vLLM engines sized from the plan's LLM profiles (KV capacity, running-batch cap, KV
// blocks, CPU swap space); none can run the queues, so each export records the groups, the
// virtual-queue assignment and the SLOs for a coordinator of the user's:
//
//   - Triton: one model per instance on Triton's vLLM backend (backend "vllm"; 1/model.json
//     holds the engine arguments: the model, tensor_parallel_size = the instance's GPUs,
//     gpu_memory_utilization so that vLLM's KV cache holds the profiled KV capacity,
//     max_num_seqs = the profile's running-batch cap, max_model_len = the longest prompt plus
//     output of the classes served by the model), its instance group pinned to the instance's
//     GPU (KIND_GPU, gpus [g]; a tensor-parallel instance is one KIND_MODEL group whose GPUs
//     qlm.gpus lists); and a coordinator BLS model (backend "python") whose parameters carry
//     the request groups, every instance's virtual queue, the classes with their SLOs, the
//     policy and its parameters (qlm.plan). Its model.py forms groups, keeps the queues and
//     forwards a group's requests to the instance that pulls it (request pulling, QLM §5).
//   - KServe: one InferenceService per instance on the huggingface runtime with its vLLM
//     backend (OpenAI-compatible completions and chat; the engine arguments as container
//     args), one replica, nvidia.com/gpu = the instance's GPU count and the GPU type as the
//     nvidia.com/gpu.product node selector; the plan record is the annotation
//     plan.dev/qlm.plan on every service (KServe has no object for a queue coordinator).
//   - Ray Serve: one deployment per instance (a vLLM engine, num_gpus = its GPU count, the
//     engine arguments in user_config.engine) and a router deployment whose user_config.qlm
//     holds the groups, the virtual queues and the SLOs.
//
// QLM also offers its plan as a vllm.Fleet (fleet.go), so every target that renders fleets
// exports it too — the inference gateway (export/gateway): vLLM Deployments with the same
// engine flags, an InferencePool per model and an InferenceObjective per class.
//
// Every target's engine arguments carry the flags the simulator's engine runs with:
// tensor_parallel_size, max_num_batched_tokens, max_num_seqs, enable_prefix_caching where
// the profile enables it, and speculative_config where it turns speculative decoding on
// (roles.go). A disaggregated plan (instances with prefill and decode roles) exports to
// KServe and Ray Serve as one service or deployment per role with a replica per instance,
// each role's engine a KV producer or consumer (kv_transfer_config); see roles.go.
//
// What no target can express (Unsupported) is QLM's control loop: the virtual queues
// themselves, the plan generator's re-plans (RCT violation checks and the stochastic program,
// QLM §6–§7), and the serving operations beyond pulling — request eviction, GPU–CPU KV swap
// (by our rule for Insight #2, §2.4), model swap with warm start, load balancing by re-plan
// (QLM §5). Each file says so (a comment, an annotation, or the router's note) except
// model.json, whose keys the vLLM backend passes to the engine as they are.
//
// GPU indices follow the cluster's order (the plan's cluster, else the embedded one): an
// instance runs on the GPUs the plan lists for it (qlm.instances[].gpus: planner/qlm writes
// them for tensor-parallel plans, each instance's on one server), else on the next gpu_count
// GPUs of its type, as planner/qlm makes one instance per GPU in that order. The engine loads
// the model by the profile's hf_model (a Hugging Face id or a path), or for the models of
// `plan profile --llm`'s catalogue by their known id (KnownModels); any other profile without
// one, or with a placeholder, is refused naming the field, since a plan's short model names
// are not ids an engine can load.
//
// ReadBack recovers the instances (name, GPU type and count, the model loaded at start),
// their GPUs, the groups, the virtual queues, the replan interval, the
// policy and its parameters, and the classes; the round-trip tests compare them with the plan,
// cross-checking each target's own fields (instance groups, tensor_parallel_size, GPU
// resources, node selectors) against the record.
package qlm

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/dataplane/llm"
	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/export/targets"
	"github.com/plan-dev/plan/export/vllm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	pllm "github.com/plan-dev/plan/profiler/llm"
)

// Parameter keys (Triton parameters, KServe annotations under plan.dev/, Ray user_config.plan).
const (
	// ParamInstance names the plan instance a unit runs; ParamIndex is its position in
	// qlm.instances.
	ParamInstance = "qlm.instance"
	ParamIndex    = "qlm.index"
	// ParamGPU, ParamGPUCount and ParamGPUs are the instance's GPU type, its GPU count and the
	// GPU indices (cluster order) it runs on: "0" or "2,3".
	ParamGPU      = "qlm.gpu"
	ParamGPUCount = "qlm.gpu_count"
	ParamGPUs     = "qlm.gpus"
	// ParamModel is the model the instance loads at start; ParamHFModel the id its engine
	// loads it by (the profile's hf_model).
	ParamModel   = "qlm.model"
	ParamHFModel = "qlm.hf_model"
	// ParamPinned says the plan itself lists the instance's GPUs (qlm.instances[].gpus, as
	// planner/qlm writes for tensor-parallel plans), so ReadBack restores them there.
	ParamPinned = "qlm.gpus_pinned"
	// ParamPlan is the plan-level record (JSON of Record) on the coordinator, the router and
	// every KServe service.
	ParamPlan = "qlm.plan"
)

// Unsupported is what no target can express, named in every exported file but model.json.
const Unsupported = "QLM's virtual queues and their re-plans (RCT violation checks and the plan generator's stochastic program, " +
	"QLM paper §4, §6–§7) and the serving operations beyond request pulling — request eviction, GPU–CPU KV swap, " +
	"model swap with warm start, load balancing by re-plan (QLM paper §5): the engines serve the model the plan loads, " +
	"and the queues are the coordinator's"

// Policy parameters the coordinator runs with: the request-group cap factor δ (QLM §4,
// Alg. 1; δ = 4 as chosen in §8.3) and the chance-constraint level Δ (QLM §7, Eq. 12; the
// paper gives no value, 0.95 is ours) at the values dataplane/qlm uses when a plan leaves
// them unset (Setup.Delta, Setup.Confidence).
const (
	DefaultDelta      = 4
	DefaultConfidence = 0.95
)

// Record is the plan-level part of an export: the policy and its parameters, the cluster's
// GPU count, the request groups, every instance's virtual queue (head first), the classes
// requests arrive in (their SLOs and token profiles: the coordinator forms groups from
// them), and the unit each instance is exported as (where the coordinator forwards).
type Record struct {
	Policy   string              `json:"policy"`
	Params   map[string]float64  `json:"params"`
	ReplanMs float64             `json:"replan_ms,omitempty"`
	GPUs     int                 `json:"gpus"`
	Groups   []qlmsec.QLMGroup   `json:"groups"`
	Queues   map[string][]string `json:"queues"`
	Classes  []llmspec.LLMClass  `json:"classes"`
	Units    map[string]string   `json:"units"`
	// Roles are the roles of a disaggregated plan's instances (by name; aggregated
	// instances are not listed): the coordinator sends a request to a prefill instance,
	// then to a decode instance of its model.
	Roles map[string]string `json:"roles,omitempty"`
}

// Engine is a vLLM engine's arguments (vllm.Engine).
type Engine = vllm.Engine

// Exporters returns QLM's exporters for every target.
func Exporters() []export.Exporter {
	return export.Layout[*layout]{Build: build, Own: map[string]func(*layout) (export.Files, error){
		export.Triton: tritonFiles, export.KServe: kserveFiles, export.Ray: rayFiles},
		Views: []export.View[*layout]{export.ViewAs(fleet)}}.Exporters(targets.Registry())
}

// layout is a QLM plan prepared for rendering.
type layout struct {
	o     export.Options
	rec   Record
	insts []instance // in plan order
	// coord is the coordinator's (Triton) or router's (Ray) unit name.
	coord string
	// groups are the units of KServe and Ray (roles.go), in plan order of their first
	// instance; grec the record they carry (its units are the groups').
	groups []group
	grec   Record
}

// instance is one LLM instance: its unit, GPUs and engine.
type instance struct {
	index  int
	in     qlmsec.QLMInstance
	unit   string
	gpus   []int
	engine Engine
	// served are the OpenAI model names the instance answers requests by (servedNames).
	served []string
	// kvTokens is the KV capacity of its profile, version its vLLM release.
	kvTokens int64
	version  formats.VLLMVersion
}

// params are an instance's recorded parameters.
func (in instance) params() map[string]string {
	m := map[string]string{ParamInstance: in.in.Name, ParamIndex: strconv.Itoa(in.index), ParamGPU: in.in.GPU,
		ParamGPUCount: strconv.Itoa(in.in.GPUCount), ParamGPUs: export.JoinInts(in.gpus), ParamModel: in.in.Model,
		ParamHFModel: in.engine.Model}
	if len(in.in.GPUs) > 0 {
		m[ParamPinned] = "true"
	}
	if in.in.Role != "" {
		m[ParamRole] = in.in.Role
	}
	return m
}

// build checks the plan and lays it out.
func build(p *formats.Plan, o export.Options) (*layout, error) {
	q := qlmsec.PlanOf(p)
	if q == nil {
		return nil, fmt.Errorf("the plan has no qlm section")
	}
	if o.Model != nil {
		return nil, fmt.Errorf("--model: a QLM plan serves whole LLMs on vLLM engines; there is no partition to cut")
	}
	e := p.Provenance.Embedded
	if e == nil || e.Workload == nil || len(llmspec.ClassesOf(e.Workload)) == 0 {
		return nil, fmt.Errorf("provenance.embedded.workload.llm_classes: missing: the classes of a qlm plan come from its embedded workload")
	}
	cl, types, err := export.PlanGPUTypes(p, "a qlm plan")
	if err != nil {
		return nil, err
	}
	mem := map[string]int64{}
	for _, g := range cl.GPUs {
		mem[g.Type] = g.MemoryBytes
	}
	if len(q.Instances) == 0 {
		return nil, fmt.Errorf("qlm.instances: none: nothing to export")
	}
	// The longest request (prompt + output) of each model's classes bounds its context.
	maxLen := map[string]int{}
	for _, c := range llmspec.ClassesOf(e.Workload) {
		maxLen[c.Model] = max(maxLen[c.Model], c.InputTokens.Max+c.OutputTokens.Max)
	}
	groups := map[string]bool{}
	for _, g := range q.Groups {
		groups[g.ID] = true
	}
	l := &layout{o: o, coord: export.DNSLabel(o.Name + "-coordinator"),
		rec: Record{Policy: dq.PolicyQLM, Params: map[string]float64{"delta": DefaultDelta, "confidence": DefaultConfidence},
			ReplanMs: q.ReplanMs, GPUs: len(types), Groups: q.Groups, Queues: map[string][]string{},
			Classes: llmspec.ClassesOf(e.Workload), Units: map[string]string{}}}
	if l.rec.Groups == nil {
		l.rec.Groups = []qlmsec.QLMGroup{}
	}
	used := make([]bool, len(types))
	// Unit names must differ from each other and from the coordinator's and router's (Ray
	// Serve would take two deployments of one name without complaint).
	units := map[string]string{l.coord: "the coordinator", export.DNSLabel(o.Name + "-router"): "the router"}
	for i, in := range q.Instances {
		f := fmt.Sprintf("qlm.instances[%d]", i)
		if in.Model == "" {
			return nil, fmt.Errorf("%s.model: empty: a vLLM engine serves the model it loads at start", f)
		}
		if in.GPUCount < 1 {
			return nil, fmt.Errorf("%s.gpu_count: %d: must be >= 1", f, in.GPUCount)
		}
		if err := checkRole(f, in.Role); err != nil {
			return nil, err
		}
		if _, dup := l.rec.Units[in.Name]; dup {
			return nil, fmt.Errorf("%s.name: %q: duplicate instance", f, in.Name)
		}
		gpus, err := instanceGPUs(f, in, types, used)
		if err != nil {
			return nil, err
		}
		prof, pf := profileFor(e.Profiles, in.Model, in.GPU, in.GPUCount)
		if prof == nil {
			return nil, fmt.Errorf("%s.model: %q: no LLM profile on %d×%s in provenance.embedded.profiles", f, in.Model, in.GPUCount, in.GPU)
		}
		id, err := modelID(prof, pf)
		if err != nil {
			return nil, err
		}
		m := llm.NewModel(prof)
		eng, err := engine(m, in, maxLen[in.Model], mem[in.GPU])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		eng.Model = id
		if err := engineFlags(&eng, m, pf, in.Role, f); err != nil {
			return nil, err
		}
		for j, id := range in.Queue {
			if !groups[id] {
				return nil, fmt.Errorf("%s.queue[%d]: %q: not in qlm.groups", f, j, id)
			}
		}
		it := instance{index: i, in: in, unit: export.DNSLabel(o.Name + "-" + in.Name), gpus: gpus, engine: eng,
			served: servedNames(in, q.Groups, l.rec.Classes), kvTokens: prof.KVCapacityTokens, version: prof.Engine.Version()}
		if other, dup := units[it.unit]; dup {
			return nil, fmt.Errorf("%s.name: %q: exported as %s, as is %s (rename the instance, or pass --name)", f, in.Name, it.unit, other)
		}
		units[it.unit] = "instance " + in.Name
		l.rec.Units[in.Name] = it.unit
		l.rec.Queues[in.Name] = slices.Clone(in.Queue)
		if l.rec.Queues[in.Name] == nil {
			l.rec.Queues[in.Name] = []string{}
		}
		l.insts = append(l.insts, it)
	}
	if err := l.groupRoles(map[string]string{l.coord: "the coordinator", export.DNSLabel(o.Name + "-router"): "the router"}); err != nil {
		return nil, err
	}
	return l, nil
}

// servedNames are the OpenAI model names an instance's requests arrive by, as `plan serve`
// answers them: its QLM front end serves each of the workload's classes as a model of the
// class's name (dataplane/qlm: an application per class), so the classes of the instance's
// model — those of its virtual queue first, in queue order (the one it serves at start),
// then the model's others in workload order (a re-plan may move their groups to it). A
// model no class names is served by its own name.
func servedNames(in qlmsec.QLMInstance, groups []qlmsec.QLMGroup, classes []llmspec.LLMClass) []string {
	var names []string
	add := func(n string) {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, id := range in.Queue {
		for _, g := range groups {
			if g.ID == id && g.Model == in.Model {
				add(g.Class)
			}
		}
	}
	for _, c := range classes {
		if c.Model == in.Model {
			add(c.Name)
		}
	}
	if len(names) == 0 {
		return []string{in.Model}
	}
	return names
}

// profileFor is model's LLM profile on count GPUs of type gpu, and its path in the plan.
func profileFor(profs []formats.Profile, model, gpu string, count int) (*formats.LLMProfile, string) {
	for i := range profs {
		for j := range profs[i].LLMs {
			if p := &profs[i].LLMs[j]; p.Model == model && p.GPU == gpu && max(p.GPUCount, 1) == count {
				return p, fmt.Sprintf("provenance.embedded.profiles[%d].llms[%d]", i, j)
			}
		}
	}
	return nil, ""
}

// instanceGPUs are the GPUs an instance runs on (f names it in errors): the plan's gpus when
// it records them (planner/qlm does for tensor-parallel plans: one server's GPUs), each of
// the instance's type and free; else the next gpu_count free GPUs of its type in cluster
// order. It marks them used.
func instanceGPUs(f string, in qlmsec.QLMInstance, types []string, used []bool) ([]int, error) {
	var gpus []int
	if len(in.GPUs) > 0 {
		if len(in.GPUs) != in.GPUCount {
			return nil, fmt.Errorf("%s.gpus: %v: %d GPUs for gpu_count %d", f, in.GPUs, len(in.GPUs), in.GPUCount)
		}
		for j, g := range in.GPUs {
			switch {
			case g < 0 || g >= len(types):
				return nil, fmt.Errorf("%s.gpus[%d]: %d: the cluster has GPUs 0..%d", f, j, g, len(types)-1)
			case types[g] != in.GPU:
				return nil, fmt.Errorf("%s.gpus[%d]: %d: a %s GPU, not %s", f, j, g, types[g], in.GPU)
			case used[g] || slices.Contains(in.GPUs[:j], g):
				return nil, fmt.Errorf("%s.gpus[%d]: %d: taken by another instance", f, j, g)
			}
		}
		gpus = slices.Clone(in.GPUs)
	} else {
		// The next gpu_count free GPUs of the instance's type, in cluster order.
		for g := 0; g < len(types) && len(gpus) < in.GPUCount; g++ {
			if !used[g] && types[g] == in.GPU {
				gpus = append(gpus, g)
			}
		}
		if len(gpus) < in.GPUCount {
			return nil, fmt.Errorf("%s.gpu_count: %d %s GPU(s): only %d of the cluster's %s GPUs are left for it", f, in.GPUCount, in.GPU, len(gpus), in.GPU)
		}
	}
	for _, g := range gpus {
		used[g] = true
	}
	return gpus, nil
}

// KnownModels are the Hugging Face ids exports write for the catalogue models whose served
// checkpoint is not the one their shapes are read from (the chat-tuned Llama-2 models); every
// other catalogue model exports as its config's id (knownID).
var KnownModels = map[string]string{
	"mistral-7b":  "mistralai/Mistral-7B-Instruct-v0.2",
	"vicuna-13b":  "lmsys/vicuna-13b-v1.5",
	"llama-2-70b": "meta-llama/Llama-2-70b-chat-hf",
	"llama-2-7b":  "meta-llama/Llama-2-7b-chat-hf",
}

// knownID is the id of a catalogue model (profiler/llm's embedded configs), "" for others.
func knownID(model string) string {
	if id, ok := KnownModels[model]; ok {
		return id
	}
	if m, err := pllm.Lookup(model); err == nil {
		return m.HF
	}
	return ""
}

// modelID is the engine's model argument: the profile's hf_model (a Hugging Face id or a
// path), else the known id of a catalogue model (knownID). Plans name models by short
// names that no engine can load, so without an id an export would write a placeholder: it
// is refused, naming the field (pf is the profile's path in the plan).
func modelID(p *formats.LLMProfile, pf string) (string, error) {
	id := strings.TrimSpace(p.HFModel)
	if known := knownID(p.Model); known != "" && id == "" {
		return known, nil
	}
	switch {
	case id == "":
		return "", fmt.Errorf("%s.hf_model: missing: the engine needs model %s's Hugging Face id or path (e.g. mistralai/Mistral-7B-Instruct-v0.2); add hf_model to the profile and solve again", pf, p.Model)
	case placeholder(id):
		return "", fmt.Errorf("%s.hf_model: %q: a placeholder, not a model id or path", pf, p.HFModel)
	}
	return id, nil
}

// gib is vLLM's unit of swap_space.
const gib = 1 << 30

// engine sizes an instance's vLLM engine with the values the simulator runs: every engine
// setting is read from m, dataplane/llm's resolved engine of the instance's profile
// (llm.NewModel: the profile's engine settings, else the older iteration fields, else vLLM
// V1's defaults: formats.DefaultBatchedTokens, 16-token blocks), so the flags written are
// the engine the simulator ran, whichever block of the profile stated them.
func engine(m *llm.Model, in qlmsec.QLMInstance, maxLen int, memBytes int64) (Engine, error) {
	p := m.Prof
	e := Engine{Model: in.Model, TensorParallelSize: in.GPUCount, MaxNumSeqs: m.MaxSeqs, MaxNumBatchedTokens: m.MaxBatched, BlockSize: m.Block}
	// The CPU memory the engine swaps preempted KV caches to (the engine block's swap_space,
	// else the iteration block's cpu_swap_bytes); none when its preemption recomputes.
	swap := int64(0)
	if m.Preempt != "evict" {
		swap = m.CPUSwap
	}
	engineSettings(&e, m, p.Engine)
	if p.KVCapacityTokens < 1 {
		return e, fmt.Errorf("model %s on %s: the profile's kv_capacity_tokens is %d", in.Model, in.GPU, p.KVCapacityTokens)
	}
	e.MaxModelLen = maxLen
	if m.MaxModelLen > 0 {
		e.MaxModelLen = m.MaxModelLen
	}
	if e.MaxModelLen < 1 || int64(e.MaxModelLen) > p.KVCapacityTokens {
		// No class bounds the context, or one request would not fit the KV cache: the engine
		// takes at most what the cache holds.
		e.MaxModelLen = int(min(p.KVCapacityTokens, math.MaxInt32))
	}
	if e.EnableChunkedPrefill != nil {
		// vLLM without chunked prefill rejects max_model_len over the token budget; the
		// simulator refuses a longer prompt at arrival, so the engine's limit is the budget.
		e.MaxModelLen = min(e.MaxModelLen, e.MaxNumBatchedTokens)
	}
	if swap > 0 {
		e.SwapSpace = math.Floor(float64(swap)/float64(in.GPUCount)/gib*100) / 100
	}
	if memBytes > 0 {
		tp := float64(in.GPUCount)
		need := float64(p.WeightBytes) + float64(p.KVCapacityTokens)*float64(p.KVBytesPerToken) + 2e9*tp
		u := math.Ceil(need/(tp*float64(memBytes))*1000) / 1000
		if u > 1 {
			return e, fmt.Errorf("model %s: weights, %d KV tokens and activations need %.0f bytes, more than %d×%s hold (%d bytes each)",
				in.Model, p.KVCapacityTokens, need, in.GPUCount, in.GPU, memBytes)
		}
		e.GPUMemoryUtilization = u
	}
	return e, nil
}

// engineSettings applies the resolved engine m's other settings that the profile's engine
// block g states (chunked prefill, partial prefills, scheduling, prefix caching: each
// written only when stated, vLLM's default otherwise, as the simulator's), and the block's
// flags the engine model does not read (KV cache dtype, quantization, expert parallelism,
// the hybrid KV cache manager's switch).
func engineSettings(e *Engine, m *llm.Model, g *formats.LLMEngine) {
	if g == nil {
		return
	}
	if !m.Chunked {
		off := false
		e.EnableChunkedPrefill = &off
	}
	stated := func(name string) bool { return m.SourceOf(name) == llm.SourceEngine }
	if stated(llm.SetMaxPartial) {
		e.MaxNumPartialPrefills = m.MaxPartial
	}
	if stated(llm.SetPolicy) {
		e.SchedulingPolicy = "fcfs"
		if m.Priority {
			e.SchedulingPolicy = "priority"
		}
	}
	if stated(llm.SetPrefixCaching) {
		on := m.PrefixCaching
		e.EnablePrefixCaching = &on
	}
	e.KVCacheDtype = g.KVCacheDtype
	e.Quantization = g.Quantization
	e.EnableExpertParallel = g.EnableExpertParallel
	e.DisableHybridKVCacheManager = g.DisableHybridKVCacheManager
}

// describeQueues summarizes the virtual queues for comments: "llm-0: rg-a → rg-b; llm-1: …".
func (l *layout) describeQueues() string {
	var parts []string
	for _, in := range l.insts {
		q := strings.Join(in.in.Queue, " → ")
		if q == "" {
			q = "(empty)"
		}
		parts = append(parts, in.in.Name+": "+q)
	}
	return strings.Join(parts, "; ")
}

// describe summarizes an instance for comments.
func (in instance) describe() string {
	kv := fmt.Sprintf("KV cache sized to the profiled capacity (gpu_memory_utilization %g)", in.engine.GPUMemoryUtilization)
	if in.engine.GPUMemoryUtilization == 0 {
		kv = "vLLM's default memory share (the cluster gives no GPU memory to size the KV cache from)"
	}
	return fmt.Sprintf("QLM instance %s: %s on %d×%s (GPU(s) %s), vLLM engine: %s, at most %d running sequences, contexts up to %d tokens.",
		in.in.Name, in.in.Model, in.in.GPUCount, in.in.GPU, export.JoinInts(in.gpus), kv, in.engine.MaxNumSeqs, in.engine.MaxModelLen)
}
