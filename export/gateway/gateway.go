// Package gateway is the inference-gateway export target (`plan export --to
// inference-gateway`): an LLM plan as the objects the Kubernetes Gateway API Inference
// Extension and the llm-d router route vLLM pods by. It renders a vllm.Fleet, the layout every
// LLM system can offer (export/qlm does), into
//
//   - vllm-<instance>.yaml: a Deployment per engine instance (one replica), running vLLM's
//     OpenAI server with the engine flags every other export gives the instance
//     (vllm.Args), the GPU type's node selector and GPU count, and the labels the pool and
//     the endpoint picker select it by (plan.dev/pool; llm-d.ai/role: prefill, decode or
//     prefill-decode). A decode instance of a disaggregated plan gets llm-d's routing sidecar
//     in front of its engine: it runs the remote prefill the endpoint picker chose;
//   - inferencepool-<model>.yaml: an InferencePool per model, selecting its instances'
//     pods, with the endpoint picker <pool>-epp (port 9002, FailClose);
//   - epp/<pool>.yaml: the endpoint picker's configuration (EndpointPickerConfig): queue
//     scoring always; prefix-cache-aware scoring (an approximate prefix index sized from the
//     engines' KV capacity, its scorer at weight 2) where the plan assumes prefix caching —
//     the pool's engines cache prefixes and a class of its model shares a prompt prefix;
//     and for a disaggregated pool the prefill and decode profiles with their filters, the
//     disaggregation profile handler and the prefix-based decider set to prefill remotely
//     whatever is not cached, as the plan's prefill instances take every request;
//   - inferenceobjective-<class>.yaml: an InferenceObjective per request class on its
//     model's pool, with the class's priority (Priority).
//
// Every object is checked against the published CRD schemas in the tests (testdata/schema)
// and against this package's schemas (schema/) on every export; the files alone read back
// into the fleet (ReadBack), which `plan export --check` does.
package gateway

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/export/vllm"
	"github.com/plan-dev/plan/formats/llmspec"
)

// Name is the target's --to value.
const Name = "inference-gateway"

// Target is the inference-gateway target.
var Target export.Target = target{}

// EPPPort is the endpoint picker's ext-proc port (the llm-d router chart's default).
const EPPPort = 9002

// SidecarImage is llm-d's routing sidecar, in front of a decode instance's engine; the
// engine then listens on EnginePortBehindSidecar.
const (
	SidecarImage            = "ghcr.io/llm-d/llm-d-routing-sidecar:v0.3.0"
	EnginePortBehindSidecar = 8200
)

// Labels and annotations.
const (
	LabelPool     = "plan.dev/pool"
	LabelInstance = "plan.dev/instance"
	LabelRole     = "llm-d.ai/role"
	AnnInstance   = "plan.dev/instance-name"
	AnnModel      = "plan.dev/model"
	AnnGPU        = "plan.dev/gpu"
	AnnGPUCount   = "plan.dev/gpu-count"
	AnnClass      = "plan.dev/class"
	AnnSystem     = "plan.dev/system"
)

// roleLabel is llm-d's role of a plan role ("" is an aggregated instance).
var roleLabel = map[string]string{"": "prefill-decode", llmspec.RolePrefill: "prefill", llmspec.RoleDecode: "decode"}

type target struct{}

func (target) Name() string { return Name }

// Owns: the vLLM Deployments, pools, objectives and endpoint picker configurations.
func (target) Owns(file string) bool {
	if strings.HasPrefix(file, "epp/") {
		return strings.HasSuffix(file, ".yaml")
	}
	b := path.Base(file)
	return file == b && strings.HasSuffix(b, ".yaml") &&
		(strings.HasPrefix(b, "vllm-") || strings.HasPrefix(b, "inferencepool-") || strings.HasPrefix(b, "inferenceobjective-"))
}

// pool is one model's instances.
type pool struct {
	name, model string
	insts       []vllm.Instance
	served      []string
	classes     []llmspec.LLMClass
}

// pools groups a fleet's instances by model, in the order of each model's first instance.
func pools(f vllm.Fleet, o export.Options) ([]*pool, error) {
	var out []*pool
	by := map[string]*pool{}
	names := map[string]string{}
	for i, in := range f.Instances {
		p := by[in.Model]
		if p == nil {
			p = &pool{name: export.DNSLabel(o.Name + "-" + in.Model), model: in.Model}
			if other, dup := names[p.name]; dup {
				return nil, fmt.Errorf("instances[%d].model: %q: its pool is named %s, as is model %s's (rename a model, or pass --name)", i, in.Model, p.name, other)
			}
			names[p.name] = in.Model
			by[in.Model] = p
			out = append(out, p)
		}
		p.insts = append(p.insts, in)
	}
	for i, c := range f.Classes {
		p := by[c.Model]
		if p == nil {
			return nil, fmt.Errorf("llm_classes[%d].model: %q: no instance of the plan serves class %s's model: no pool to route it to", i, c.Model, c.Name)
		}
		p.classes = append(p.classes, c)
		if !slices.Contains(p.served, c.Name) {
			p.served = append(p.served, c.Name)
		}
	}
	for _, p := range out {
		if len(p.served) == 0 {
			p.served = []string{p.model}
		}
	}
	return out, nil
}

// Render writes the fleet's Deployments, pools, endpoint picker configurations and
// objectives.
func (target) Render(f vllm.Fleet, o export.Options) (export.Files, error) {
	ps, err := pools(f, o)
	if err != nil {
		return nil, err
	}
	files := export.Files{}
	put := func(name string, v any, head ...string) error {
		b, err := export.YAML(v)
		if err != nil {
			return err
		}
		return files.Put(name, append(export.Comment(head...), b...), "rename an instance, model or class, or pass --name")
	}
	for _, p := range ps {
		for _, in := range p.insts {
			d, err := deployment(f, p, in, o)
			if err != nil {
				return nil, err
			}
			if err := put("vllm-"+in.Unit+".yaml", d, describe(f, in)); err != nil {
				return nil, err
			}
		}
		pl := InferencePool{APIVersion: PoolAPIVersion, Kind: PoolKind,
			Metadata: export.ObjectMeta{Name: p.name, Annotations: map[string]string{AnnModel: p.model, AnnSystem: f.System}},
			Spec: PoolSpec{Selector: export.LabelSelector{MatchLabels: map[string]string{LabelPool: p.name}},
				TargetPorts:       []PortNumber{{Number: vllm.Port}},
				EndpointPickerRef: EndpointPickerRef{Name: p.name + "-epp", Port: PortNumber{Number: EPPPort}, FailureMode: "FailClose"}}}
		if err := put("inferencepool-"+p.name+".yaml", pl,
			fmt.Sprintf("%s plan: the pool of model %s (%d vLLM instance(s)); requests name it as %s.", f.System, p.model, len(p.insts), strings.Join(quote(p.served), ", ")),
			fmt.Sprintf("Its endpoint picker is the Service %s-epp (port %d), run with epp/%s.yaml as its configuration.", p.name, EPPPort, p.name)); err != nil {
			return nil, err
		}
		cfg, why := eppConfig(p)
		if err := put("epp/"+p.name+".yaml", cfg, why...); err != nil {
			return nil, err
		}
		for _, c := range p.classes {
			prio := Priority(c, p.classes)
			obj := InferenceObjective{APIVersion: ObjectiveAPIVersion, Kind: ObjectiveKind,
				Metadata: export.ObjectMeta{Name: export.DNSLabel(o.Name + "-" + c.Name), Annotations: map[string]string{AnnClass: c.Name}},
				Spec:     ObjectiveSpec{PoolRef: PoolRef{Name: p.name}, Priority: prio}}
			if err := put("inferenceobjective-"+obj.Metadata.Name+".yaml", obj,
				fmt.Sprintf("Class %s on pool %s: priority %d (interactive classes first, then tighter SLOs; requests select it by the header x-gateway-inference-objective: %s).", c.Name, p.name, prio, obj.Metadata.Name)); err != nil {
				return nil, err
			}
		}
	}
	return files, nil
}

// describe is a Deployment's head comment.
func describe(f vllm.Fleet, in vllm.Instance) string {
	role := "aggregated"
	if in.Role != "" {
		role = in.Role
	}
	return fmt.Sprintf("%s instance %s (%s): %s on %d×%s, vLLM at most %d running sequences, contexts up to %d tokens; the engine flags are those of every other export of the plan.",
		f.System, in.Name, role, in.Model, in.GPUCount, in.GPU, in.Engine.MaxNumSeqs, in.Engine.MaxModelLen)
}

// deployment is one instance's vLLM Deployment.
func deployment(f vllm.Fleet, p *pool, in vllm.Instance, o export.Options) (export.Deployment, error) {
	sel, err := o.NodeSelector(in.GPU)
	if err != nil {
		return export.Deployment{}, err
	}
	n := strconv.Itoa(in.GPUCount)
	port := vllm.Port
	if in.Role == llmspec.RoleDecode {
		port = EnginePortBehindSidecar
	}
	args := append([]string{"--model=" + in.Engine.Model, "--served-model-name"}, p.served...)
	args = append(append(args, "--port="+strconv.Itoa(port)), vllm.Args(in.Engine)...)
	engine := export.Container{Name: "vllm", Image: vllm.Image(in.Version), Args: args,
		Ports:          []export.Port{{Name: "http", ContainerPort: port}},
		Resources:      &export.Resources{Limits: map[string]string{"nvidia.com/gpu": n}, Requests: map[string]string{"nvidia.com/gpu": n}},
		ReadinessProbe: &export.Probe{HTTPGet: export.HTTPGet{Path: "/health", Port: "http"}, PeriodSeconds: 10}}
	var cs []export.Container
	if in.Role == llmspec.RoleDecode {
		// llm-d's decode sidecar takes the pool's port and runs the remote prefill the
		// endpoint picker chose (x-prefiller-host-port) over the engines' NIXL connector.
		cs = append(cs, export.Container{Name: "routing-sidecar", Image: SidecarImage,
			Args:  []string{"--port=" + strconv.Itoa(vllm.Port), "--vllm-port=" + strconv.Itoa(port), "--kv-connector=nixlv2"},
			Ports: []export.Port{{Name: "sidecar", ContainerPort: vllm.Port}}})
	}
	cs = append(cs, engine)
	labels := map[string]string{LabelPool: p.name, LabelInstance: in.Unit, LabelRole: roleLabel[in.Role]}
	return export.Deployment{APIVersion: "apps/v1", Kind: "Deployment",
		Metadata: export.ObjectMeta{Name: in.Unit, Labels: labels, Annotations: map[string]string{AnnInstance: in.Name, AnnModel: in.Model,
			AnnGPU: in.GPU, AnnGPUCount: n, AnnSystem: f.System}},
		Spec: export.DeploymentSpec{Replicas: 1, Selector: export.LabelSelector{MatchLabels: map[string]string{LabelInstance: in.Unit}},
			Template: export.PodTemplate{Metadata: export.ObjectMeta{Labels: labels},
				Spec: export.PodSpec{Containers: cs, NodeSelector: sel}}}}, nil
}

// Priority is a class's priority on its pool: the classes of the pool ranked by urgency —
// interactive before batch, then the tighter SLO first (the TTFT SLO where the class sets
// one, else the end-to-end SLO; none is loosest) — the least urgent at 0 and each more urgent
// rank one higher, classes of equal urgency equal. The endpoint picker's flow control serves
// a higher priority first (InferenceObjective's spec.priority), as the plan's queues take
// the tightest deadlines first.
func Priority(c llmspec.LLMClass, classes []llmspec.LLMClass) int {
	type key struct {
		batch bool
		slo   float64
	}
	k := func(c llmspec.LLMClass) key {
		slo := float64(c.TTFTSLO)
		if slo <= 0 {
			slo = float64(c.SLO)
		}
		if slo <= 0 {
			slo = 1e300
		}
		return key{!c.Interactive, slo}
	}
	less := func(a, b key) int { // less urgent first
		if a.batch != b.batch {
			if a.batch {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.slo, a.slo)
	}
	var keys []key
	for _, x := range classes {
		keys = append(keys, k(x))
	}
	slices.SortFunc(keys, less)
	keys = slices.Compact(keys)
	return slices.IndexFunc(keys, func(x key) bool { return x == k(c) })
}

func quote(ss []string) []string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return q
}
