package gateway

import (
	"cmp"
	"embed"
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
)

//go:embed schema/*.json
var schemaFS embed.FS

// SchemaFor is the schema of the target's own kinds (the Deployments go by the shared one).
func (target) SchemaFor(file string, doc map[string]any) (export.Schema, bool) {
	var name string
	switch {
	case doc["kind"] == PoolKind:
		name = "inferencepool.schema.json"
	case doc["kind"] == ObjectiveKind:
		name = "inferenceobjective.schema.json"
	case doc["kind"] == EPPKind && strings.HasPrefix(file, "epp/"):
		name = "endpointpickerconfig.schema.json"
	default:
		return export.Schema{}, false
	}
	b, err := schemaFS.ReadFile("schema/" + name)
	if err != nil {
		panic(err) // embedded
	}
	return export.Schema{Name: name, JSON: b}, true
}

// Exported is what ReadBack recovers from the files alone: the fleet's instances in file
// order of their Deployments (without KV capacities, which only the endpoint picker's index
// sizes reflect), each model's pool and served names, each class's pool and priority.
type Exported struct {
	System     string
	Instances  []vllm.Instance
	Pools      map[string]string   // model → pool
	Served     map[string][]string // pool → names
	Objectives map[string]Objective
	EPP        map[string]EPPConfig // pool → configuration
}

// Objective is a class's objective as read back.
type Objective struct {
	Name, Pool string
	Priority   int
}

// Summary is one line of what was read back.
func (e *Exported) Summary() string {
	roles := map[string]int{}
	for _, in := range e.Instances {
		roles[roleLabel[in.Role]]++
	}
	var rs []string
	for _, r := range slices.Sorted(maps.Keys(roles)) {
		rs = append(rs, fmt.Sprintf("%d %s", roles[r], r))
	}
	return fmt.Sprintf("%s: %s plan, %d vLLM instance(s) (%s) in %d pool(s), %d objective(s)",
		Name, e.System, len(e.Instances), strings.Join(rs, ", "), len(e.Served), len(e.Objectives))
}

// Rules are ReadBack's cross-file checks, run on every export with the target's files.
func (target) Rules(files export.Files, _ export.Deployable) []string {
	for name := range files {
		if !export.IsDeploy(name) && Target.Owns(name) {
			if _, err := ReadBack(files); err != nil {
				return []string{err.Error()}
			}
			return nil
		}
	}
	return nil
}

// ReadBackSummary reads files back (ReadBack) for `plan export --check`.
func (target) ReadBackSummary(files export.Files) (string, error) {
	e, err := ReadBack(files)
	if err != nil {
		return "", err
	}
	return e.Summary(), nil
}

// ReadBack recovers the fleet from an export's files, cross-checking every file against the
// others: each Deployment's engine flags parse (vllm.ParseArgs) and agree with its GPU count
// and role; each pool selects Deployments of its model only and has its endpoint picker's
// configuration, whose plugin references resolve and whose profiles fit the pool's roles;
// each objective names a pool. The first problem is an error naming the file and field.
func ReadBack(files export.Files) (*Exported, error) {
	e := &Exported{Pools: map[string]string{}, Served: map[string][]string{}, Objectives: map[string]Objective{}, EPP: map[string]EPPConfig{}}
	podPool := map[string]string{} // unit → pool label
	var pools []InferencePool
	for _, name := range files.Names() {
		if export.IsDeploy(name) || !Target.Owns(name) {
			continue
		}
		data := files[name]
		var err error
		switch {
		case strings.HasPrefix(name, "epp/"):
			var c EPPConfig
			if err = yaml.UnmarshalStrict(data, &c); err == nil {
				err = checkEPP(c)
				e.EPP[strings.TrimSuffix(path.Base(name), ".yaml")] = c
			}
		case strings.HasPrefix(name, "vllm-"):
			var in vllm.Instance
			var pool, system string
			var served []string
			if in, pool, served, system, err = readDeployment(data); err == nil {
				if e.System != "" && system != e.System {
					err = fmt.Errorf("metadata.annotations.%s: %q: another Deployment says %q", AnnSystem, system, e.System)
				}
				e.System = system
				e.Instances = append(e.Instances, in)
				podPool[in.Unit] = pool
				if prev, ok := e.Served[pool]; ok && !slices.Equal(prev, served) {
					err = fmt.Errorf("--served-model-name: %v: pool %s's other instances serve %v", served, pool, prev)
				}
				e.Served[pool] = served
			}
		case strings.HasPrefix(name, "inferencepool-"):
			var p InferencePool
			if err = yaml.UnmarshalStrict(data, &p); err == nil {
				pools = append(pools, p)
			}
		case strings.HasPrefix(name, "inferenceobjective-"):
			var o InferenceObjective
			if err = yaml.UnmarshalStrict(data, &o); err == nil {
				e.Objectives[o.Metadata.Annotations[AnnClass]] = Objective{Name: o.Metadata.Name, Pool: o.Spec.PoolRef.Name, Priority: o.Spec.Priority}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	if err := e.join(files, pools, podPool); err != nil {
		return nil, err
	}
	return e, nil
}

// join checks the pools against the Deployments, their configurations and the objectives.
func (e *Exported) join(files export.Files, pools []InferencePool, podPool map[string]string) error {
	byPool := map[string][]vllm.Instance{}
	for _, in := range e.Instances {
		byPool[podPool[in.Unit]] = append(byPool[podPool[in.Unit]], in)
	}
	seen := map[string]bool{}
	for _, p := range pools {
		at := "inferencepool-" + p.Metadata.Name + ".yaml"
		sel := p.Spec.Selector.MatchLabels
		if len(sel) != 1 || sel[LabelPool] != p.Metadata.Name {
			return fmt.Errorf("%s: spec.selector.matchLabels: %v: want {%s: %s}", at, sel, LabelPool, p.Metadata.Name)
		}
		insts := byPool[p.Metadata.Name]
		if len(insts) == 0 {
			return fmt.Errorf("%s: spec.selector: selects no vLLM Deployment of the directory", at)
		}
		model := p.Metadata.Annotations[AnnModel]
		for _, in := range insts {
			if in.Model != model {
				return fmt.Errorf("%s: metadata.annotations.%s: %q: selects instance %s of model %s", at, AnnModel, model, in.Name, in.Model)
			}
		}
		if _, dup := e.Pools[model]; dup {
			return fmt.Errorf("%s: model %s has another pool, %s", at, model, e.Pools[model])
		}
		e.Pools[model] = p.Metadata.Name
		if want := p.Metadata.Name + "-epp"; p.Spec.EndpointPickerRef.Name != want {
			return fmt.Errorf("%s: spec.endpointPickerRef.name: %q: want %q", at, p.Spec.EndpointPickerRef.Name, want)
		}
		if len(p.Spec.TargetPorts) != 1 || p.Spec.TargetPorts[0].Number != vllm.Port {
			return fmt.Errorf("%s: spec.targetPorts: %v: the pods serve on port %d", at, p.Spec.TargetPorts, vllm.Port)
		}
		cfg, ok := e.EPP[p.Metadata.Name]
		if !ok {
			return fmt.Errorf("%s: no epp/%s.yaml: the pool's endpoint picker has no configuration", at, p.Metadata.Name)
		}
		disagg := slices.ContainsFunc(insts, func(in vllm.Instance) bool { return in.Role != "" })
		if hasPlugin(cfg, DisaggProfileHandler) != disagg {
			return fmt.Errorf("epp/%s.yaml: plugins: %s %v, but the pool's instances are disaggregated: %v", p.Metadata.Name, DisaggProfileHandler, hasPlugin(cfg, DisaggProfileHandler), disagg)
		}
		seen[p.Metadata.Name] = true
	}
	for pool := range byPool {
		if !seen[pool] {
			return fmt.Errorf("vLLM Deployments labelled %s: %s: no InferencePool of that name", LabelPool, pool)
		}
	}
	for pool := range e.EPP {
		if !seen[pool] {
			return fmt.Errorf("epp/%s.yaml: no InferencePool of that name", pool)
		}
	}
	for _, class := range slices.Sorted(maps.Keys(e.Objectives)) {
		o := e.Objectives[class]
		if !seen[o.Pool] {
			return fmt.Errorf("inferenceobjective-%s.yaml: spec.poolRef.name: %q: no InferencePool of that name", o.Name, o.Pool)
		}
		if class == "" {
			return fmt.Errorf("inferenceobjective-%s.yaml: metadata.annotations.%s: missing", o.Name, AnnClass)
		}
	}
	return nil
}

// readDeployment reads one instance from its Deployment: its pool, its served names.
func readDeployment(data []byte) (vllm.Instance, string, []string, string, error) {
	in, pool, served, err := readDeploymentOf(data)
	var d struct {
		Metadata export.ObjectMeta `json:"metadata"`
	}
	_ = yaml.Unmarshal(data, &d)
	return in, pool, served, d.Metadata.Annotations[AnnSystem], err
}

func readDeploymentOf(data []byte) (vllm.Instance, string, []string, error) {
	var d export.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		return vllm.Instance{}, "", nil, err
	}
	ann, labels := d.Metadata.Annotations, d.Spec.Template.Metadata.Labels
	in := vllm.Instance{Name: ann[AnnInstance], Unit: d.Metadata.Name, Model: ann[AnnModel], GPU: ann[AnnGPU]}
	for _, k := range []string{AnnInstance, AnnModel, AnnGPU} {
		if ann[k] == "" {
			return in, "", nil, fmt.Errorf("metadata.annotations.%s: missing", k)
		}
	}
	n, err := strconv.Atoi(ann[AnnGPUCount])
	if err != nil || n < 1 || n > 1<<16 {
		return in, "", nil, fmt.Errorf("metadata.annotations.%s: %q: must be an integer in [1, 65536]", AnnGPUCount, ann[AnnGPUCount])
	}
	in.GPUCount = n
	role, ok := roleOf(labels[LabelRole])
	if !ok {
		return in, "", nil, fmt.Errorf("spec.template.metadata.labels.%s: %q: must be prefill, decode or prefill-decode", LabelRole, labels[LabelRole])
	}
	in.Role = role
	if !maps.Equal(d.Metadata.Labels, labels) {
		return in, "", nil, fmt.Errorf("metadata.labels: %v: differ from the pod template's %v", d.Metadata.Labels, labels)
	}
	if labels[LabelInstance] != d.Metadata.Name || d.Spec.Selector.MatchLabels[LabelInstance] != d.Metadata.Name || d.Spec.Replicas != 1 {
		return in, "", nil, fmt.Errorf("spec: one replica selected by %s: %s, the Deployment's name", LabelInstance, d.Metadata.Name)
	}
	cs := d.Spec.Template.Spec.Containers
	var engine *export.Container
	for i := range cs {
		if cs[i].Name == "vllm" {
			engine = &cs[i]
		}
	}
	if engine == nil {
		return in, "", nil, fmt.Errorf("spec.template.spec.containers: no container named vllm")
	}
	if sidecar := len(cs) == 2 && cs[0].Name == "routing-sidecar"; sidecar != (role == llmspec.RoleDecode) || len(cs) > 2 {
		return in, "", nil, fmt.Errorf("spec.template.spec.containers: %d container(s): a decode instance runs the routing sidecar before vllm, others vllm alone", len(cs))
	}
	v, err := vllm.ParseImage(engine.Image)
	if err != nil {
		return in, "", nil, fmt.Errorf("containers[vllm].image: %v", err)
	}
	in.Version = v
	served, rest := servedNames(engine.Args)
	if len(served) == 0 {
		return in, "", nil, fmt.Errorf("containers[vllm].args: no --served-model-name")
	}
	if in.Engine, err = vllm.ParseArgs(rest, func(k, _ string) bool { return k == "port" }); err != nil {
		return in, "", nil, fmt.Errorf("containers[vllm].args: %w", err)
	}
	if in.Engine.TensorParallelSize != n || engine.Resources == nil || engine.Resources.Limits["nvidia.com/gpu"] != strconv.Itoa(n) {
		return in, "", nil, fmt.Errorf("containers[vllm]: tensor-parallel-size %d, nvidia.com/gpu limit %v: the instance has %d GPU(s)", in.Engine.TensorParallelSize, engine.Resources, n)
	}
	kv := ""
	if c := in.Engine.KVTransferConfig; c != nil {
		kv = c.KVRole
	}
	if want := map[string]string{llmspec.RolePrefill: "kv_producer", llmspec.RoleDecode: "kv_consumer"}[role]; want != "" && kv != want {
		return in, "", nil, fmt.Errorf("containers[vllm].args: --kv-transfer-config kv_role %q: a %s instance's engine is the KV %s", kv, role, strings.TrimPrefix(want, "kv_"))
	}
	if labels[LabelPool] == "" {
		return in, "", nil, fmt.Errorf("spec.template.metadata.labels.%s: missing", LabelPool)
	}
	return in, labels[LabelPool], served, nil
}

// servedNames takes "--served-model-name NAME..." out of args.
func servedNames(args []string) (served, rest []string) {
	for i := 0; i < len(args); i++ {
		if args[i] != "--served-model-name" {
			rest = append(rest, args[i])
			continue
		}
		for i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			i++
			served = append(served, args[i])
		}
	}
	return served, rest
}

// roleOf is the plan role of an llm-d role label.
func roleOf(label string) (string, bool) {
	for r, l := range roleLabel {
		if l == label {
			return r, true
		}
	}
	return "", false
}

func hasPlugin(c EPPConfig, typ string) bool {
	return slices.ContainsFunc(c.Plugins, func(p PluginSpec) bool { return p.Type == typ })
}

// checkEPP: every plugin reference resolves, the typed parameters decode strictly, and one
// profile handler is configured whose profiles exist.
func checkEPP(c EPPConfig) error {
	names := map[string]PluginSpec{}
	handlers := 0
	for i, p := range c.Plugins {
		n := cmp.Or(p.Name, p.Type)
		if _, dup := names[n]; dup {
			return fmt.Errorf("plugins[%d]: %q: two plugins of that name", i, n)
		}
		names[n] = p
		var args any
		switch p.Type {
		case PrefixProducer:
			args = &PrefixProducerArgs{}
		case DisaggProfileHandler:
			args = &DisaggHandlerArgs{}
		case PDDecider:
			args = &PDDeciderArgs{}
		}
		if p.Type == DisaggProfileHandler || p.Type == SingleProfileHandler {
			handlers++
		}
		if args != nil {
			if err := formats.StrictUnmarshal([]byte(export.MustJSON(p.Parameters)), args); err != nil {
				return fmt.Errorf("plugins[%d] (%s).parameters: %w", i, p.Type, err)
			}
		}
		if h, ok := args.(*DisaggHandlerArgs); ok {
			for stage, d := range h.Deciders {
				if _, ok := pluginNamed(c, d); !ok {
					return fmt.Errorf("plugins[%d] (%s).parameters.deciders.%s: %q: no such plugin", i, p.Type, stage, d)
				}
			}
		}
	}
	if handlers != 1 {
		return fmt.Errorf("plugins: %d profile handlers: want one", handlers)
	}
	profiles := map[string]bool{}
	for i, sp := range c.SchedulingProfiles {
		profiles[sp.Name] = true
		for j, ref := range sp.Plugins {
			if _, ok := names[ref.PluginRef]; !ok {
				return fmt.Errorf("schedulingProfiles[%d].plugins[%d].pluginRef: %q: no such plugin", i, j, ref.PluginRef)
			}
		}
	}
	if hasPlugin(c, DisaggProfileHandler) && (!profiles["prefill"] || !profiles["decode"]) {
		return fmt.Errorf("schedulingProfiles: %s needs the profiles prefill and decode", DisaggProfileHandler)
	}
	return nil
}

func pluginNamed(c EPPConfig, name string) (PluginSpec, bool) {
	for _, p := range c.Plugins {
		if cmp.Or(p.Name, p.Type) == name {
			return p, true
		}
	}
	return PluginSpec{}, false
}
