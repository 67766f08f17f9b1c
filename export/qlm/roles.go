package qlm

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/export/vllm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
)

// Disaggregated prefill/decode plans and the engine flags of roles and speculative decoding
// (llm-deploy-search §1, §5).
//
// A disaggregated plan's instances carry roles (qlm.instances[].role): prefill instances
// compute each request's prompt and first token and hand its KV to a decode instance, which
// generates the rest (dataplane/qlm disaggpol.go). KServe and Ray Serve get one service or
// deployment per role — per role, model, GPU type and count, and engine, if a role has more
// than one kind of instance — with one replica per instance; Triton, whose models are placed
// on GPUs one by one, keeps a model per instance. Each role's engine carries vLLM's
// kv_transfer_config: kv_role kv_producer on prefill instances and kv_consumer on decode
// ones (vllm.config.kv_transfer.KVTransferConfig, docs.vllm.ai/en/latest/api/vllm/config/
// kv_transfer/: "kv_role … Choices are 'kv_producer', 'kv_consumer', and 'kv_both'"), over
// the NixlConnector, the connector vLLM V1's disaggregated-prefill docs
// (docs.vllm.ai/en/latest/features/disagg_prefill/) and Ray Serve LLM's prefill/decode
// guide (docs.ray.io serve/llm/pd-dissagregation) run. A queue coordinator of the user's
// routes each request to a prefill replica and then its decode replica (KV transfer
// params), as plan's router does; the plan record lists the roles.

// ParamRole is an instance's role in a disaggregated plan (prefill or decode), recorded only
// for role instances.
const ParamRole = "qlm.role"

// KVConnector is the kv_connector of disaggregated instances' kv_transfer_config.
const KVConnector = "NixlConnector"

// kvRoles are vLLM's kv_role of each plan role.
var kvRoles = map[string]string{llmspec.RolePrefill: "kv_producer", llmspec.RoleDecode: "kv_consumer"}

// SpeculativeConfig, KVTransferConfig and OffloadConfig are vLLM's (export/vllm).
type (
	SpeculativeConfig = vllm.SpeculativeConfig
	KVTransferConfig  = vllm.KVTransferConfig
	OffloadConfig     = vllm.OffloadConfig
)

// OffloadConnector is vLLM's connector for a CPU KV tier behind the prefix cache
// (CPUOffloadingSpec: completed blocks copied to pinned host memory, loaded back on a hit).
const OffloadConnector = "OffloadingConnector"

// engineFlags sets the engine flags of speculative decoding and of an instance's role, as
// the resolved engine m runs them (f names the instance in errors, pf its profile): speculative decoding where the profile
// turns it on, but not on a prefill instance (it computes first tokens only, one step of the
// target each: nothing to speculate); kv_transfer_config on role instances; no prefix cache
// on decode instances, whose sequences arrive with their prompts computed (the simulator's
// decode instances run without one).
func engineFlags(e *Engine, m *llm.Model, pf, role, f string) error {
	if err := checkRole(f, role); err != nil {
		return err
	}
	if m.Spec != nil && role != llmspec.RolePrefill {
		sc, err := speculativeConfig(m.Spec, pf+".engine.speculative")
		if err != nil {
			return err
		}
		e.SpeculativeConfig = sc
	}
	offload := m.OffloadBytes
	if role == "" {
		if offload > 0 {
			e.KVTransferConfig = &KVTransferConfig{KVConnector: OffloadConnector, KVRole: "kv_both", Extra: &OffloadConfig{BlockSize: e.BlockSize, CPUBytesToUse: offload}}
		}
		return nil
	}
	if offload > 0 {
		return fmt.Errorf("%s.engine.kv_offload_bytes: %d: on a %s instance, not exported: vLLM would need a MultiConnector of %s and %s", pf, offload, role, KVConnector, OffloadConnector)
	}
	e.KVTransferConfig = &KVTransferConfig{KVConnector: KVConnector, KVRole: kvRoles[role]}
	if role == llmspec.RoleDecode {
		off := false
		e.EnablePrefixCaching = &off
	}
	return nil
}

// checkRole reports a role that is none (f names the instance).
func checkRole(f, role string) error {
	if _, ok := kvRoles[role]; !ok && role != "" {
		return fmt.Errorf("%s.role: %q: must be one of %s, %s (or omitted: an aggregated instance)", f, role, llmspec.RolePrefill, llmspec.RoleDecode)
	}
	return nil
}

// speculativeConfig is the engine's speculative_config for the profile's speculative
// decoding (sp is its path): a draft model when the profile names one (draft_model), else
// n-gram prompt lookup when drafting is free (neither draft_step_us nor draft_cost_ratio:
// the simulator's model of n-gram lookup); a drafting cost without a draft model is refused,
// since the engine would have nothing to draft with.
func speculativeConfig(s *formats.LLMSpeculative, sp string) (*SpeculativeConfig, error) {
	if s.DraftTokens < 1 {
		return nil, fmt.Errorf("%s.draft_tokens: %d: must be >= 1", sp, s.DraftTokens)
	}
	if id := strings.TrimSpace(s.DraftModel); id != "" {
		if placeholder(id) {
			return nil, fmt.Errorf("%s.draft_model: %q: a placeholder, not a model id or path", sp, s.DraftModel)
		}
		return &SpeculativeConfig{Method: "draft_model", Model: id, NumSpeculativeTokens: s.DraftTokens}, nil
	}
	if s.DraftStepUs > 0 || s.DraftCostRatio > 0 {
		return nil, fmt.Errorf("%s.draft_model: missing: drafting costs time (draft_step_us %g, draft_cost_ratio %g), so the engine runs a draft model: give its Hugging Face id or path",
			sp, s.DraftStepUs, s.DraftCostRatio)
	}
	return &SpeculativeConfig{Method: "ngram", NumSpeculativeTokens: s.DraftTokens}, nil
}

// placeholder reports an id that stands for one to fill in.
func placeholder(id string) bool {
	low := strings.ToLower(id)
	return strings.ContainsAny(id, "<>{}") || low == "todo" || low == "tbd" || strings.Contains(low, "placeholder") || strings.Contains(low, "changeme")
}

// group is one KServe service or Ray deployment: an aggregated instance alone, or a
// disaggregated plan's instances of one role that run one engine, one replica each.
type group struct {
	unit    string
	role    string
	members []instance
}

// groupKey is what the instances of one group share.
type groupKey struct {
	role, model, gpu string
	count            int
	pinned           bool
	engine           string
}

// groupRoles lays out the units of KServe and Ray: each aggregated instance its own (as
// named for every target), the role instances one per role (per kind of instance within a
// role: <name>-<role>-<k>), and the plan record they carry (grec: the instances' units are
// their groups'). The record's roles name each role instance's. It reports a unit name taken
// twice (units holds the coordinator's and the router's).
func (l *layout) groupRoles(units map[string]string) error {
	for _, in := range l.insts {
		if in.in.Role != "" {
			if l.rec.Roles == nil {
				l.rec.Roles = map[string]string{}
			}
			l.rec.Roles[in.in.Name] = in.in.Role
		}
	}
	l.grec = l.rec
	idx := map[groupKey]int{}
	kinds := map[string]int{}
	for _, in := range l.insts {
		if in.in.Role == "" {
			l.groups = append(l.groups, group{unit: in.unit, members: []instance{in}})
			units[in.unit] = "instance " + in.in.Name
			continue
		}
		if strings.ContainsAny(in.in.Name, ",;") {
			return fmt.Errorf("qlm.instances[%d].name: %q: a role instance's name is listed in its service's record: no ',' or ';'", in.index, in.in.Name)
		}
		k := groupKey{role: in.in.Role, model: in.in.Model, gpu: in.in.GPU, count: in.in.GPUCount, pinned: len(in.in.GPUs) > 0,
			engine: export.MustJSON(in.engine)}
		if i, ok := idx[k]; ok {
			l.groups[i].members = append(l.groups[i].members, in)
			continue
		}
		idx[k] = len(l.groups)
		kinds[in.in.Role]++
		l.groups = append(l.groups, group{role: in.in.Role, members: []instance{in}})
	}
	if len(idx) == 0 {
		return nil
	}
	l.grec.Units = map[string]string{}
	seen := map[string]int{}
	for i := range l.groups {
		g := &l.groups[i]
		if g.role != "" {
			g.unit = export.DNSLabel(l.o.Name + "-" + g.role)
			if kinds[g.role] > 1 {
				g.unit = export.DNSLabel(l.o.Name + "-" + g.role + "-" + strconv.Itoa(seen[g.role]))
			}
			seen[g.role]++
			if other, dup := units[g.unit]; dup {
				return fmt.Errorf("qlm.instances[%d]: the %s instances are exported as %s, as is %s (rename the instance, or pass --name)", g.members[0].index, g.role, g.unit, other)
			}
			units[g.unit] = "the " + g.role + " instances"
		}
		for _, m := range g.members {
			l.grec.Units[m.in.Name] = g.unit
		}
	}
	return nil
}

// params are a group's recorded parameters: an aggregated instance's own, or its members'
// names, positions and GPUs as lists (names and positions comma-separated, each member's
// GPUs ';'-separated, in replica order), with what they share and their role.
func (g group) params() map[string]string {
	if g.role == "" {
		return g.members[0].params()
	}
	m := g.members[0].params()
	var names, idx, gpus []string
	for _, in := range g.members {
		names = append(names, in.in.Name)
		idx = append(idx, strconv.Itoa(in.index))
		gpus = append(gpus, export.JoinInts(in.gpus))
	}
	m[ParamInstance] = strings.Join(names, ",")
	m[ParamIndex] = strings.Join(idx, ",")
	m[ParamGPUs] = strings.Join(gpus, ";")
	return m
}

// describe summarizes a group for comments.
func (g group) describe() string {
	if g.role == "" {
		return g.members[0].describe()
	}
	in := g.members[0]
	var names []string
	for _, m := range g.members {
		names = append(names, m.in.Name)
	}
	kv := fmt.Sprintf("KV cache sized to the profiled capacity (gpu_memory_utilization %g)", in.engine.GPUMemoryUtilization)
	if in.engine.GPUMemoryUtilization == 0 {
		kv = "vLLM's default memory share (the cluster gives no GPU memory to size the KV cache from)"
	}
	return fmt.Sprintf("QLM %s instances %s (%d replica(s), kv_role %s): %s on %d×%s each, vLLM engine: %s, at most %d running sequences, contexts up to %d tokens.",
		g.role, strings.Join(names, ", "), len(g.members), kvRoles[g.role], in.in.Model, in.in.GPUCount, in.in.GPU, kv, in.engine.MaxNumSeqs, in.engine.MaxModelLen)
}
