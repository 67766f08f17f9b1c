package export

import (
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/plan-dev/plan/export/internal/tritonpb"
)

// Run-time rules: what the targets refuse or get wrong when the files are
// deployed although every file passes its schema (ecosystem.md §7). Each rule is reported
// as "file: field: value: rule".

// Deployable adds the rules a finished repository must meet before it is deployed, beyond
// what an export writes: a Python-backend model (a coordinator) needs its 1/model.py, which
// the user supplies (Validate on an export leaves it out; `plan export --check` applies it).
type Deployable bool

// runtimeRules checks the whole file set (cross-file references need every file): the
// shared rules of the Kubernetes objects every target's deploy/ holds, then each target's
// (RuleChecker), the errors in file order.
func (r *Registry) runtimeRules(files Files, deploy Deployable) []string {
	errs := yamlRules(files, sharedRules)
	for _, t := range r.list {
		if rc, ok := t.(RuleChecker); ok {
			errs = append(errs, rc.Rules(files, deploy)...)
		}
	}
	file := func(e string) string { f, _, _ := strings.Cut(e, ": "); return f }
	slices.SortStableFunc(errs, func(a, b string) int { return strings.Compare(file(a), file(b)) })
	return errs
}

// yamlRules applies rules to every document of the YAML manifests (Ray's config left out),
// each error as "file: [(document i) ]field: value: rule".
func yamlRules(files Files, rules func(doc []byte) []string) []string {
	var errs []string
	for _, name := range files.Names() {
		if !strings.HasSuffix(name, ".yaml") || path.Base(name) == RayConfigFile {
			continue
		}
		ds := Documents(files[name])
		for i, d := range ds {
			for _, e := range rules(d) {
				if len(ds) > 1 {
					e = fmt.Sprintf("(document %d) %s", i+1, e)
				}
				errs = append(errs, name+": "+e)
			}
		}
	}
	return errs
}

// Rules of the classic targets: Triton's model configs, KServe's services and graphs, Ray
// Serve's config.
func (tritonTarget) Rules(files Files, deploy Deployable) []string {
	models := map[string]bool{}
	for _, name := range files.Names() {
		if path.Base(name) == "config.pbtxt" {
			models[path.Dir(name)] = true
		}
	}
	var errs []string
	for _, name := range files.Names() {
		if path.Base(name) != "config.pbtxt" {
			continue
		}
		if c, err := ParseTriton(files[name]); err == nil {
			for _, e := range tritonRules(name, c, files, models, deploy) {
				errs = append(errs, name+": "+e)
			}
		}
	}
	return errs
}

func (kserveTarget) Rules(files Files, _ Deployable) []string {
	services := map[string]bool{}
	inGraph := map[string]bool{}
	yamlRules(files, func(d []byte) []string {
		var probe struct {
			Kind     string     `json:"kind"`
			Metadata ObjectMeta `json:"metadata"`
			Spec     struct {
				Nodes map[string]GraphNode `json:"nodes"`
			} `json:"spec"`
		}
		if yaml.Unmarshal(d, &probe) != nil {
			return nil
		}
		switch probe.Kind {
		case "InferenceService":
			services[probe.Metadata.Name] = true
		case "InferenceGraph":
			for _, n := range probe.Spec.Nodes {
				for _, st := range n.Steps {
					inGraph[st.ServiceName] = true
				}
			}
		}
		return nil
	})
	return yamlRules(files, func(d []byte) []string { return kserveRules(d, services, inGraph) })
}

func (rayTarget) Rules(files Files, _ Deployable) []string {
	var errs []string
	for _, name := range files.Names() {
		if path.Base(name) == RayConfigFile {
			for _, e := range rayRules(files[name]) {
				errs = append(errs, name+": "+e)
			}
		}
	}
	return errs
}

// tritonRules: an instance group on GPUs lists them (without gpus Triton starts count
// instances on every GPU it sees), with count >= 1; an ensemble's steps name models of the
// repository; a Python-backend model has its model.py when the repository is deployable.
func tritonRules(name string, c *tritonpb.ModelConfig, files Files, models map[string]bool, deploy Deployable) []string {
	var errs []string
	if c.MaxBatchSize < 0 {
		errs = append(errs, fmt.Sprintf("max_batch_size: %d: must be >= 0 (0: the model does not batch)", c.MaxBatchSize))
	}
	for i, g := range c.InstanceGroup {
		at := fmt.Sprintf("instance_group[%d]", i)
		kind := g.GetKind()
		if (kind == tritonpb.ModelInstanceGroup_KIND_GPU || kind == tritonpb.ModelInstanceGroup_KIND_AUTO) && len(g.Gpus) == 0 {
			errs = append(errs, fmt.Sprintf("%s.gpus: []: %s with count %d and no gpus starts %d instance(s) on every GPU the server sees: list the GPUs", at, kind, g.Count, g.Count))
		}
		if g.Count < 1 {
			errs = append(errs, fmt.Sprintf("%s.count: %d: must be >= 1", at, g.Count))
		}
	}
	for i, s := range c.GetEnsembleScheduling().GetStep() {
		if !models[s.ModelName] {
			errs = append(errs, fmt.Sprintf("ensemble_scheduling.step[%d].model_name: %q: no such model in the repository (no %s/config.pbtxt)", i, s.ModelName, s.ModelName))
		}
	}
	if deploy && c.Backend == "python" {
		py := path.Join(path.Dir(name), "1", "model.py")
		if _, ok := files[py]; !ok {
			errs = append(errs, fmt.Sprintf("backend: \"python\": %s is missing: Triton cannot load the model without it (write it as the export's README.md says)", py))
		}
	}
	return errs
}

// kserveRules: a batcher only with maxLatency >= 1 ms (KServe's agent exits otherwise: the
// pod never becomes Ready; the schema already requires maxBatchSize >= 1); a GPU node selector by the label GPU
// feature discovery writes, not plan's short name (which no node carries); replicas and
// autoscaling consistent; an InferenceGraph's steps call services of the directory.
// (A Deployment's, a ScaledObject's and an HPA's rules are sharedRules.)
func kserveRules(data []byte, services, inGraph map[string]bool) []string {
	kind, err := KindOf(data)
	if err != nil {
		return nil
	}
	switch kind {
	case "InferenceService":
		var s InferenceService
		if yaml.Unmarshal(data, &s) != nil {
			return nil
		}
		errs := predictorRules(s.Spec.Predictor)
		if next := s.Metadata.Annotations[labelPrefix+"next"]; next != "" && !inGraph[s.Metadata.Name] {
			errs = append(errs, fmt.Sprintf("metadata.annotations.%snext: %q: the service feeds others of application %q but no InferenceGraph of the directory calls it: export the application's graph", labelPrefix, next, appOf(s.Metadata.Annotations[labelPrefix+"key"])))
		}
		return errs
	case "InferenceGraph":
		var g InferenceGraph
		if yaml.Unmarshal(data, &g) != nil {
			return nil
		}
		return graphRules(g, services)
	}
	return nil
}

// sharedRules: the Kubernetes objects of every target's deploy/ — container resources that
// parse as quantities, ordered replica ranges, KEDA's Prometheus trigger metadata.
func sharedRules(data []byte) []string {
	kind, err := KindOf(data)
	if err != nil {
		return nil
	}
	switch kind {
	case "Deployment":
		var d Deployment
		if yaml.Unmarshal(data, &d) != nil {
			return nil
		}
		var errs []string
		for i, c := range d.Spec.Template.Spec.Containers {
			if c.Resources != nil {
				errs = append(errs, quantityRules(fmt.Sprintf("spec.template.spec.containers[%d].resources", i), *c.Resources)...)
			}
		}
		return errs
	case "ScaledObject":
		var so ScaledObject
		if yaml.Unmarshal(data, &so) != nil {
			return nil
		}
		return scaledObjectRules(so)
	case "HorizontalPodAutoscaler":
		var h HPA
		if yaml.Unmarshal(data, &h) != nil {
			return nil
		}
		if h.Spec.MinReplicas > h.Spec.MaxReplicas {
			return []string{fmt.Sprintf("spec.minReplicas/maxReplicas: %d/%d: minReplicas must be <= maxReplicas", h.Spec.MinReplicas, h.Spec.MaxReplicas)}
		}
	}
	return nil
}

// scaledObjectRules: the range is ordered and a Prometheus trigger has the metadata KEDA
// requires (serverAddress, query, a threshold that parses as a float > 0).
func scaledObjectRules(so ScaledObject) []string {
	var errs []string
	if so.Spec.MinReplicaCount > so.Spec.MaxReplicaCount {
		errs = append(errs, fmt.Sprintf("spec.minReplicaCount/maxReplicaCount: %d/%d: minReplicaCount must be <= maxReplicaCount", so.Spec.MinReplicaCount, so.Spec.MaxReplicaCount))
	}
	for i, t := range so.Spec.Triggers {
		if t.Type != "prometheus" {
			continue
		}
		at := fmt.Sprintf("spec.triggers[%d].metadata", i)
		for _, k := range []string{"serverAddress", "query", "threshold"} {
			if t.Metadata[k] == "" {
				errs = append(errs, fmt.Sprintf("%s.%s: \"\": KEDA's Prometheus scaler requires it", at, k))
			}
		}
		if v := t.Metadata["threshold"]; v != "" {
			if x, err := strconv.ParseFloat(v, 64); err != nil || !(x > 0) || math.IsInf(x, 0) {
				errs = append(errs, fmt.Sprintf("%s.threshold: %q: must be a number > 0 (KEDA parses it as a float)", at, v))
			}
		}
	}
	return errs
}

func predictorRules(p Predictor) []string {
	var errs []string
	const at = "spec.predictor"
	errs = append(errs, quantityRules(at+".model.resources", p.Model.Resources)...)
	if b := p.Batcher; b != nil {
		if b.MaxLatency < 1 {
			errs = append(errs, fmt.Sprintf("%s.batcher.maxLatency: %d: KServe's agent exits when it is <= 0; the pod never becomes Ready (at least 1 ms, or no batcher)", at, b.MaxLatency))
		}
	}
	if v, ok := p.NodeSelector[ProductLabel]; ok {
		if full, known := GPUProduct(v); known {
			errs = append(errs, fmt.Sprintf("%s.nodeSelector.%s: %q: no node carries plan's GPU name; GPU feature discovery labels these nodes %q", at, ProductLabel, v, full))
		}
	}
	if p.MaxReplicas < 1 || p.MinReplicas > p.MaxReplicas {
		errs = append(errs, fmt.Sprintf("%s.minReplicas/maxReplicas: %d/%d: want 1 <= maxReplicas and minReplicas <= maxReplicas", at, p.MinReplicas, p.MaxReplicas))
	}
	if (p.ScaleMetric == "") != (p.ScaleTarget == 0) {
		errs = append(errs, fmt.Sprintf("%s.scaleMetric/scaleTarget: %q/%d: set both or neither", at, p.ScaleMetric, p.ScaleTarget))
	}
	return errs
}

func graphRules(g InferenceGraph, services map[string]bool) []string {
	var errs []string
	nodes := slices.Sorted(maps.Keys(g.Spec.Nodes))
	for _, n := range nodes {
		for i, st := range g.Spec.Nodes[n].Steps {
			at := fmt.Sprintf("spec.nodes.%s.steps[%d]", n, i)
			switch {
			case st.ServiceName != "" && !services[st.ServiceName]:
				errs = append(errs, fmt.Sprintf("%s.serviceName: %q: no InferenceService of that name in the directory", at, st.ServiceName))
			case st.NodeName != "":
				if _, ok := g.Spec.Nodes[st.NodeName]; !ok {
					errs = append(errs, fmt.Sprintf("%s.nodeName: %q: no such node in the graph", at, st.NodeName))
				}
			}
		}
	}
	return errs
}

// rayRules: a GPU deployment names its GPU type by accelerator_type (a custom resource
// exists only on nodes started with --resources, which plan cannot see to); num_gpus above
// 1 is whole (Ray refuses fractions of more than one GPU).
func rayRules(data []byte) []string {
	var c RayConfigOf[map[string]any]
	if yaml.Unmarshal(data, &c) != nil {
		return nil
	}
	var errs []string
	for ai, a := range c.Applications {
		for di, d := range a.Deployments {
			at := fmt.Sprintf("applications[%d].deployments[%d] (%s).ray_actor_options", ai, di, d.Name)
			o := d.RayActorOptions
			keys := slices.Sorted(maps.Keys(o.Resources))
			for _, k := range keys {
				if _, gpu := GPUProduct(k); gpu {
					errs = append(errs, fmt.Sprintf("%s.resources.%s: %g: a custom resource exists only on nodes started with --resources; select the GPU type with accelerator_type: %q", at, k, o.Resources[k], rayAcceleratorOrSelf(k)))
				}
			}
			if o.NumGPUs > 0 && o.AcceleratorType == "" {
				errs = append(errs, fmt.Sprintf("%s.accelerator_type: \"\": num_gpus %g on any GPU type: name the plan's GPU type", at, o.NumGPUs))
			}
			if o.NumGPUs > 1 && o.NumGPUs != math.Trunc(o.NumGPUs) {
				errs = append(errs, fmt.Sprintf("%s.num_gpus: %g: Ray takes fractions of one GPU only; above 1 it must be whole", at, o.NumGPUs))
			}
		}
	}
	return errs
}

func rayAcceleratorOrSelf(gpu string) string {
	if a, ok := RayAccelerator(gpu); ok {
		return a
	}
	return gpu
}
