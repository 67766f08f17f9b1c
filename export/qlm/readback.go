package qlm

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/export/vllm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
)

// maxGPUs bounds the GPU indices, GPU counts and instance positions a file may name (a corrupt
// index must not make ReadBack allocate without bound).
const maxGPUs = 1 << 16

// Exported is what ReadBack recovers: the plan's qlm section, the policy and its parameters,
// the classes, and per instance (by name) its GPU indices and engine arguments.
type Exported struct {
	Plan    *qlmsec.QLMPlan
	Policy  string
	Params  map[string]float64
	Classes []llmspec.LLMClass
	GPUs    map[string][]int
	Engines map[string]Engine
}

// ReadBack recovers a QLM plan from its exported files alone: the instances in plan order
// (name, GPU type and count, the model loaded at start) with their virtual queues, the
// request groups, the replan interval, the policy and its parameters, the classes, and each
// instance's GPUs and engine. Each instance's record is cross-checked against the target's
// own fields (Triton instance groups and model.json, KServe GPU resources, node selector and
// container args, Ray num_gpus and resources), every copy of the plan record must agree, and
// the record's units must be the exported ones, so files whose native settings disagree with
// the record are an error.
func ReadBack(target string, files export.Files) (*Exported, error) {
	rb := &reader{insts: map[int]inst{}}
	if err := export.ReadFiles(target, files, export.Readers{export.Triton: func(name string, data []byte) error { return rb.triton(name, data, files) }, export.KServe: export.DataReader(rb.kserve), export.Ray: export.DataReader(rb.ray)}); err != nil {
		return nil, err
	}
	return rb.result()
}

type inst struct {
	in     qlmsec.QLMInstance
	unit   string
	gpus   []int
	engine Engine
}

type reader struct {
	rec   *Record
	insts map[int]inst
}

// record keeps the plan record; every copy must be the same.
func (rb *reader) record(s string) error {
	var rec Record
	if err := formats.StrictUnmarshal([]byte(s), &rec); err != nil {
		return fmt.Errorf("%s: %w", ParamPlan, err)
	}
	if rec.GPUs < 1 || rec.GPUs > maxGPUs {
		return fmt.Errorf("%s: gpus %d: must be in [1, %d]", ParamPlan, rec.GPUs, maxGPUs)
	}
	if rb.rec != nil && export.MustJSON(*rb.rec) != export.MustJSON(rec) {
		return fmt.Errorf("%s: differs from another file's", ParamPlan)
	}
	rb.rec = &rec
	return nil
}

// instance records one instance from its parameters; unit is its exported name, gpuCount
// and gpuType the target's own GPU settings ("" when the target does not say the type), eng
// its engine arguments.
func (rb *reader) instance(params map[string]string, unit string, gpuCount int, gpuType string, eng Engine) error {
	name := params[ParamInstance]
	if name == "" {
		return fmt.Errorf("unit %s: no %s", unit, ParamInstance)
	}
	i, err1 := strconv.Atoi(params[ParamIndex])
	n, err2 := strconv.Atoi(params[ParamGPUCount])
	if err1 != nil || err2 != nil || i < 0 || i >= maxGPUs || n < 1 || n > maxGPUs {
		return fmt.Errorf("instance %s: %s / %s: %q / %q: not an index and a GPU count", name, ParamIndex, ParamGPUCount, params[ParamIndex], params[ParamGPUCount])
	}
	gpus, err := export.ParseIndexList(params[ParamGPUs], maxGPUs)
	if err != nil {
		return fmt.Errorf("instance %s: %s: %w", name, ParamGPUs, err)
	}
	gpu, model := params[ParamGPU], params[ParamModel]
	switch {
	case gpu == "" || model == "":
		return fmt.Errorf("instance %s: %s %q, %s %q: both must be set", name, ParamGPU, gpu, ParamModel, model)
	case n != len(gpus) || n != gpuCount || n != eng.TensorParallelSize:
		return fmt.Errorf("instance %s: %d GPU(s) recorded (%d listed), the target's settings say %d GPU(s), tensor_parallel_size %d", name, n, len(gpus), gpuCount, eng.TensorParallelSize)
	case gpuType != "" && gpuType != gpu:
		return fmt.Errorf("instance %s: GPU %q recorded, the target's settings say %q", name, gpu, gpuType)
	case eng.Model != cmp.Or(params[ParamHFModel], model):
		return fmt.Errorf("instance %s: model %q recorded, the engine loads %q", name, cmp.Or(params[ParamHFModel], model), eng.Model)
	}
	if _, dup := rb.insts[i]; dup {
		return fmt.Errorf("instance %s: index %d recorded twice", name, i)
	}
	role := params[ParamRole]
	want, ok := kvRoles[role]
	switch {
	case !ok && role != "":
		return fmt.Errorf("instance %s: %s %q: not a role (%s, %s)", name, ParamRole, role, llmspec.RolePrefill, llmspec.RoleDecode)
	case role == "" && eng.KVTransferConfig != nil && eng.KVTransferConfig.KVConnector != OffloadConnector:
		return fmt.Errorf("instance %s: an aggregated instance whose engine has a kv_transfer_config (kv_role %q)", name, eng.KVTransferConfig.KVRole)
	case role != "" && (eng.KVTransferConfig == nil || eng.KVTransferConfig.KVRole != want):
		return fmt.Errorf("instance %s: a %s instance whose engine is not a KV %s (kv_transfer_config %s)", name, role, strings.TrimPrefix(want, "kv_"), export.MustJSON(eng.KVTransferConfig))
	}
	in := qlmsec.QLMInstance{Name: name, GPU: gpu, GPUCount: n, Model: model, Role: role}
	if params[ParamPinned] == "true" {
		in.GPUs = gpus
	}
	rb.insts[i] = inst{in: in, unit: unit, gpus: gpus, engine: eng}
	return nil
}

// group records the instances of a KServe service or Ray deployment of replicas replicas:
// one instance, or a role's instances listed in its parameters (group.params), each a
// replica.
func (rb *reader) group(params map[string]string, unit string, replicas, gpuCount int, eng Engine) error {
	names := strings.Split(params[ParamInstance], ",")
	idx := strings.Split(params[ParamIndex], ",")
	gpus := strings.Split(params[ParamGPUs], ";")
	if params[ParamRole] == "" && len(names) > 1 {
		return fmt.Errorf("unit %s: %s %q: several instances without a role", unit, ParamInstance, params[ParamInstance])
	}
	if len(names) != replicas || len(idx) != replicas || len(gpus) != replicas {
		return fmt.Errorf("unit %s: %d replica(s), the record lists %d instance(s), %d position(s), %d GPU list(s): want one of each per replica",
			unit, replicas, len(names), len(idx), len(gpus))
	}
	for k := range names {
		m := maps.Clone(params)
		m[ParamInstance], m[ParamIndex], m[ParamGPUs] = names[k], idx[k], gpus[k]
		if err := rb.instance(m, unit, gpuCount, "", eng); err != nil {
			return err
		}
	}
	return nil
}

// triton reads a model: the coordinator (backend python) or an instance (backend vllm,
// with its 1/model.json).
func (rb *reader) triton(name string, data []byte, files export.Files) error {
	c, params, err := export.ReadTriton(data)
	if err != nil {
		return err
	}
	switch c.Backend {
	case "python":
		return rb.record(params[ParamPlan])
	case "vllm":
	default:
		return fmt.Errorf("model %s: backend %q: a QLM export has vllm instances and a python coordinator", c.Name, c.Backend)
	}
	mj := path.Join(path.Dir(name), "1", export.VLLMModelFile)
	raw, ok := files[mj]
	if !ok {
		return fmt.Errorf("model %s: no %s beside it", c.Name, mj)
	}
	var eng Engine
	if err := formats.StrictUnmarshal(raw, &eng); err != nil {
		return fmt.Errorf("model %s: %s: %w", c.Name, mj, err)
	}
	gpus, err := export.ParseIndexList(params[ParamGPUs], maxGPUs)
	if err != nil {
		return fmt.Errorf("model %s: %s: %w", c.Name, ParamGPUs, err)
	}
	if len(c.InstanceGroup) != 1 || c.InstanceGroup[0].Count != 1 {
		return fmt.Errorf("model %s: want one instance group of count 1 (one vLLM engine)", c.Name)
	}
	// One GPU: the group g<gpu> is pinned to it; more: one KIND_MODEL group (tensor parallel).
	g := c.InstanceGroup[0]
	got := make([]int, len(g.Gpus))
	for i, x := range g.Gpus {
		got[i] = int(x)
	}
	if len(gpus) == 1 {
		if g.Kind.String() != "KIND_GPU" || g.Name != "g"+strconv.Itoa(gpus[0]) || !slices.Equal(got, []int{0}) {
			return fmt.Errorf("model %s: instance group %s (%s) on GPUs %v, the record places the instance on GPU %d: want group g%d on GPU 0, the pod's one GPU", c.Name, g.Name, g.Kind, got, gpus[0], gpus[0])
		}
	} else if g.Kind.String() != "KIND_MODEL" || len(got) > 0 {
		return fmt.Errorf("model %s: instance group %s on GPUs %v: a tensor-parallel instance is one KIND_MODEL group", c.Name, g.Kind, got)
	}
	return rb.instance(params, c.Name, len(gpus), "", eng)
}

// engineFromArgs parses the huggingface runtime's arguments back into the engine: the
// runtime's own (model name, backend) besides the engine's flags (vllm.ParseArgs).
func engineFromArgs(args []string) (Engine, error) {
	return vllm.ParseArgs(args, func(k, _ string) bool {
		return k == "model_name" || k == "served-model-name" || k == "backend"
	})
}

func (rb *reader) kserve(data []byte) error {
	var s export.InferenceService
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return err
	}
	if s.Kind != "InferenceService" {
		return fmt.Errorf("kind %q: a QLM export has InferenceServices only", s.Kind)
	}
	params := export.AnnotationParams(s.Metadata.Annotations, "qlm")
	if err := rb.record(params[ParamPlan]); err != nil {
		return fmt.Errorf("service %s: %w", s.Metadata.Name, err)
	}
	p := s.Spec.Predictor
	if p.MinReplicas < 1 || p.MaxReplicas != p.MinReplicas || p.MinReplicas > maxGPUs {
		return fmt.Errorf("service %s: replicas %d..%d: an instance is one replica, a fixed number of them", s.Metadata.Name, p.MinReplicas, p.MaxReplicas)
	}
	n, err := strconv.Atoi(p.Model.Resources.Limits["nvidia.com/gpu"])
	if err != nil || p.Model.Resources.Requests["nvidia.com/gpu"] != p.Model.Resources.Limits["nvidia.com/gpu"] {
		return fmt.Errorf("service %s: nvidia.com/gpu limit %q, request %q: want the same GPU count", s.Metadata.Name,
			p.Model.Resources.Limits["nvidia.com/gpu"], p.Model.Resources.Requests["nvidia.com/gpu"])
	}
	eng, err := engineFromArgs(p.Model.Args)
	if err != nil {
		return fmt.Errorf("service %s: %w", s.Metadata.Name, err)
	}
	if len(p.NodeSelector) == 0 {
		return fmt.Errorf("service %s: no node selector", s.Metadata.Name)
	}
	// The selector is the GPU type's node label (export.Options.NodeSelector), not its name.
	if err := rb.group(params, s.Metadata.Name, p.MinReplicas, n, eng); err != nil {
		return fmt.Errorf("service %s: %w", s.Metadata.Name, err)
	}
	return nil
}

func (rb *reader) ray(data []byte) error {
	return export.EachRayDeployment(data, func(d rayDeployment) error {
		u := d.UserConfig
		if u.Record != nil {
			return rb.record(export.MustJSON(*u.Record))
		}
		if u.Engine == nil {
			return fmt.Errorf("user_config has neither qlm nor engine")
		}
		r := export.RayReplicas(d)
		if r < 1 || r > maxGPUs {
			return fmt.Errorf("num_replicas %d: an instance is one replica", r)
		}
		o := d.RayActorOptions
		n := int(o.NumGPUs)
		if float64(n) != o.NumGPUs || o.AcceleratorType == "" {
			return fmt.Errorf("num_gpus %g, accelerator_type %q: want whole GPUs of one type", o.NumGPUs, o.AcceleratorType)
		}
		return rb.group(u.Placement, d.Name, r, n, *u.Engine)
	})
}

// result assembles the qlm section: instance indices must be 0..n-1, the record's units the
// exported ones, its queues the instances' and naming its groups, GPUs within the recorded
// cluster and held by one instance each.
func (rb *reader) result() (*Exported, error) {
	if rb.rec == nil {
		return nil, fmt.Errorf("no plan record (%s) in the files", ParamPlan)
	}
	rec := rb.rec
	q := &qlmsec.QLMPlan{Instances: make([]qlmsec.QLMInstance, len(rb.insts)), Groups: rec.Groups, ReplanMs: rec.ReplanMs}
	if len(q.Groups) == 0 {
		q.Groups = nil
	}
	out := &Exported{Plan: q, Policy: rec.Policy, Params: rec.Params, Classes: rec.Classes, GPUs: map[string][]int{}, Engines: map[string]Engine{}}
	groups := map[string]bool{}
	for _, g := range rec.Groups {
		groups[g.ID] = true
	}
	held := map[int]string{}
	for i, in := range rb.insts {
		if i >= len(q.Instances) {
			return nil, fmt.Errorf("instance index %d of %d: the indices are not 0..%d", i, len(rb.insts), len(rb.insts)-1)
		}
		name := in.in.Name
		if u, ok := rec.Units[name]; !ok || u != in.unit {
			return nil, fmt.Errorf("instance %s: exported as %s, the plan record says %q", name, in.unit, u)
		}
		queue, ok := rec.Queues[name]
		if !ok {
			return nil, fmt.Errorf("instance %s: no virtual queue in the plan record", name)
		}
		for _, id := range queue {
			if !groups[id] {
				return nil, fmt.Errorf("instance %s: queued group %q is not in the plan record's groups", name, id)
			}
		}
		if len(queue) > 0 {
			in.in.Queue = slices.Clone(queue)
		}
		for _, g := range in.gpus {
			if g >= rec.GPUs {
				return nil, fmt.Errorf("instance %s: GPU %d: the plan's cluster has %d GPUs", name, g, rec.GPUs)
			}
			if other, dup := held[g]; dup {
				return nil, fmt.Errorf("instance %s: GPU %d is also instance %s's", name, g, other)
			}
			held[g] = name
		}
		if _, dup := out.GPUs[name]; dup {
			return nil, fmt.Errorf("instance %s recorded twice", name)
		}
		if r := rec.Roles[name]; r != in.in.Role {
			return nil, fmt.Errorf("instance %s: role %q, the plan record says %q", name, in.in.Role, r)
		}
		q.Instances[i] = in.in
		out.GPUs[name] = in.gpus
		out.Engines[name] = in.engine
	}
	for name := range rec.Roles {
		if _, ok := out.GPUs[name]; !ok {
			return nil, fmt.Errorf("the plan record gives instance %s a role; the files export no such instance", name)
		}
	}
	if len(rec.Units) != len(rb.insts) || len(rec.Queues) != len(rb.insts) {
		return nil, fmt.Errorf("the plan record names %d unit(s) and %d queue(s), the files export %d instance(s)", len(rec.Units), len(rec.Queues), len(rb.insts))
	}
	return out, nil
}
