package cascade

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/export"
)

// tritonFiles renders the model repository: <unit>/config.pbtxt per model (an instance_group
// per replica, named r<placement index>, pinned to its GPUs) and the coordinator
// <name>/config.pbtxt (a BLS model whose parameters carry the gear table).
func tritonFiles(l *layout) (export.Files, error) {
	f := export.Files{}
	for _, s := range l.models {
		c := export.TritonConfig{Name: s.unit, Platform: "onnxruntime_onnx", MaxBatchSize: l.maxBatch(),
			Batching:   &export.TritonBatching{Preferred: s.triggers, MaxQueueDelayUs: s.queueUs, TimeoutUs: l.sloUs},
			Parameters: l.params(s)}
		var b strings.Builder
		b.Write(export.Comment(fmt.Sprintf("cascade %s, model %s: %d replica(s) on %s (plan.gpu); instance groups r<i> are cascade.placement[i].", l.cp.Task, s.model, len(s.replicas), l.gpu),
			"Preferred batch sizes are the gears' minimum-queue triggers; Triton picks among a model's instances itself,",
			"so the gears' replica shares (in the coordinator's cascade.gears) are not enforced here."))
		if s.gpus > 1 {
			b.Write(export.Comment(fmt.Sprintf("A replica spans %d GPUs: Triton starts one instance per listed GPU; serve it with a backend that shards across them.", s.gpus)))
		}
		b.Write(c.PBTxt())
		// GPU ids within the model's pod (export.PodGPUs); r<i> keeps the plan's replica.
		plan := make([][]int, len(s.replicas))
		for k, i := range s.replicas {
			plan[k] = l.cp.Placement[i].GPUs
		}
		if err := export.PodFits(s.unit, l.gpu, plan, l.o.PerServer); err != nil {
			return nil, err
		}
		for k, ids := range export.PodGPUs(plan) {
			gpus := make([]string, len(ids))
			for j, g := range ids {
				gpus[j] = strconv.Itoa(g)
			}
			fmt.Fprintf(&b, "instance_group {\n  name: \"r%d\"\n  kind: KIND_GPU\n  count: 1\n  gpus: [ %s ]\n}\n", s.replicas[k], strings.Join(gpus, ", "))
		}
		if err := put(f, s.unit+"/config.pbtxt", []byte(b.String())); err != nil {
			return nil, err
		}
	}
	var b strings.Builder
	b.Write(export.Comment(fmt.Sprintf("CascadeServe coordinator for cascade %s (BLS, Python backend): supply 1/model.py.", l.cp.Task),
		"It measures the QPS every poll_ms, switches gear by cascade.gears (q_lo <= QPS < q_hi; the alpha backlog rule),",
		"calls the gear's models in order and answers at the first whose "+CertaintyOutput+" output is >= the gear's threshold.",
		"Triton cannot express "+Unsupported+": this coordinator applies the recorded gear table."))
	for i, g := range l.cp.Gears {
		b.Write(export.Comment(fmt.Sprintf("gear %d: %s", i, describe(g))))
	}
	fmt.Fprintf(&b, "name: %s\nbackend: \"python\"\nmax_batch_size: 0\n", strconv.Quote(l.o.Name))
	b.WriteString("input {\n  name: \"INPUT0\"\n  data_type: TYPE_FP32\n  dims: [ -1 ]\n}\n")
	b.WriteString("output {\n  name: \"OUTPUT0\"\n  data_type: TYPE_FP32\n  dims: [ -1 ]\n}\n")
	b.WriteString("output {\n  name: \"STAGE\"\n  data_type: TYPE_INT32\n  dims: [ 1 ]\n}\n")
	b.WriteString("instance_group {\n  kind: KIND_CPU\n  count: 1\n}\n")
	stages := make([]string, len(l.models))
	for k, s := range l.models {
		stages[k] = s.model + "=" + s.unit
	}
	params := map[string]string{ParamTable: export.MustJSON(l.table()), "cascade.models": strings.Join(stages, ";"),
		ParamCertainty: CertaintyOutput, "cascade.gpu": l.gpu}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		fmt.Fprintf(&b, "parameters {\n  key: %s\n  value { string_value: %s }\n}\n", strconv.Quote(k), strconv.Quote(params[k]))
	}
	if err := put(f, l.o.Name+"/config.pbtxt", []byte(b.String())); err != nil {
		return nil, err
	}
	if err := put(f, l.o.Name+"/1/.keep", nil); err != nil {
		return nil, err
	}
	readme := export.CoordinatorReadme("CascadeServe", Unsupported, []export.Coordinator{{Model: l.o.Name, Params: slices.Sorted(maps.Keys(params)), Does: []string{
		"every poll_ms of cascade.gears, measure the request rate (QPS) and pick the gear whose [q_lo, q_hi) holds it (the alpha backlog rule moves up a gear early);",
		"call the gear's models in order (cascade.models maps each model to its model here) with the request's INPUT0;",
		"answer with the first model whose " + CertaintyOutput + " output is >= the gear's threshold for it (the last model always answers): OUTPUT0 its output, STAGE its index in the gear.",
	}}})
	if err := put(f, export.ReadmeFile, readme); err != nil {
		return nil, err
	}
	return f, nil
}

// kserveFiles renders one InferenceService per model and one InferenceGraph per gear.
func kserveFiles(l *layout) (export.Files, error) {
	f := export.Files{}
	unit := map[string]string{}
	for _, s := range l.models {
		unit[s.model] = s.unit
		sel, err := l.o.NodeSelector(l.gpu)
		if err != nil {
			return nil, err
		}
		isvc := export.NewInferenceService(s.unit, l.o.StorageURI, l.placement(s), sel, export.Scaling{}, s.queueUs, l.sloUs)
		for k, v := range l.params(s) {
			if rest, ok := strings.CutPrefix(k, "cascade."); ok {
				isvc.Metadata.Annotations[annotation(rest)] = v
			}
		}
		n := strconv.Itoa(s.gpus)
		isvc.Spec.Predictor.Model.Resources = export.Resources{Limits: map[string]string{"nvidia.com/gpu": n}, Requests: map[string]string{"nvidia.com/gpu": n}}
		b, err := export.YAML(isvc)
		if err != nil {
			return nil, err
		}
		head := export.Comment(fmt.Sprintf("cascade %s, model %s: one pod per replica; %s lists cascade.placement index:GPUs (pods are not pinned to GPU indices).", l.cp.Task, s.model, annotation("replicas")),
			"KServe balances a service's pods evenly: the gears' replica shares are recorded on the gear graphs, not enforced.")
		if err := put(f, "inferenceservice-"+s.unit+".yaml", append(head, b...)); err != nil {
			return nil, err
		}
	}
	sw := l.table()
	sw.Gears = nil
	for i, g := range l.cp.Gears {
		name := export.DNSLabel(fmt.Sprintf("%s-gear-%d", l.o.Name, i))
		ig := export.InferenceGraph{APIVersion: "serving.kserve.io/v1alpha1", Kind: "InferenceGraph",
			Metadata: export.ObjectMeta{Name: name, Annotations: map[string]string{
				annotation("gear"): export.MustJSON(g), annotation("gear_index"): strconv.Itoa(i), annotation("switching"): export.MustJSON(sw),
				annotation("qps_range"): fmt.Sprintf("[%g, %g)", g.QLo, g.QHi)}}}
		node := export.GraphNode{RouterType: "Sequence"}
		for j, m := range g.Models {
			st := export.GraphStep{Name: "stage-" + strconv.Itoa(j), ServiceName: unit[m], Data: "$request"}
			if j > 0 {
				// GJSON on the previous step's v2 response: matches only when its certainty
				// is below the threshold, so the request moves on (paper §2.1: a sample leaves
				// at the first model confident enough).
				st.Condition = fmt.Sprintf(`outputs.#(name=="%s").data.#(<%s)`, CertaintyOutput, strconv.FormatFloat(g.Thr[j-1], 'g', -1, 64))
			}
			node.Steps = append(node.Steps, st)
		}
		ig.Spec.Nodes = map[string]export.GraphNode{"root": node}
		b, err := export.YAML(ig)
		if err != nil {
			return nil, err
		}
		head := export.Comment(fmt.Sprintf("gear %d of cascade %s: %s", i, l.cp.Task, describe(g)),
			"A Sequence step with a condition runs only when the previous response matches it (certainty below the threshold);",
			"otherwise the previous step's response is the answer. Each model answers its certainty (max softmax probability)",
			"as the v2 output tensor \""+CertaintyOutput+"\" (cascade.certainty_output).",
			"KServe cannot express "+Unsupported+": route traffic to the graph of the current QPS range with a controller of your own.")
		if err := put(f, "inferencegraph-"+name+".yaml", append(head, b...)); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func annotation(key string) string { return "plan.dev/cascade." + key }

// rayDeployment is one of the cascade's deployments (its user_config is not export.RayUserConfig).
type rayDeployment = export.RayDeploymentOf[rayUserConfig]

// rayUserConfig is a model deployment's (Placement, batching, replicas) or the router's
// (Table, Stages) configuration.
type rayUserConfig struct {
	Placement         map[string]string `json:"plan,omitempty"`
	MaxBatchSize      int               `json:"max_batch_size,omitempty"`
	Triggers          []int             `json:"triggers,omitempty"`
	BatchWaitTimeoutS float64           `json:"batch_wait_timeout_s,omitempty"`
	TimeoutS          float64           `json:"timeout_s,omitempty"`
	Table             *Table            `json:"gear_table,omitempty"`
	Stages            map[string]string `json:"stages,omitempty"`
	Note              string            `json:"note,omitempty"`
}

// rayFiles renders serve-config.yaml: one application, a deployment per model and the
// router deployment.
func rayFiles(l *layout) (export.Files, error) {
	var deps []rayDeployment
	stages := map[string]string{}
	accel, err := l.o.RayAcceleratorType(l.gpu)
	if err != nil {
		return nil, err
	}
	for _, s := range l.models {
		stages[s.model] = s.unit
		n := float64(s.gpus)
		deps = append(deps, rayDeployment{Name: s.unit, NumReplicas: len(s.replicas), MaxOngoingRequests: 2 * l.maxBatch(),
			RayActorOptions: export.RayActorOptions{NumGPUs: n, NumCPUs: 1, AcceleratorType: accel},
			UserConfig: rayUserConfig{Placement: l.params(s), MaxBatchSize: l.maxBatch(), Triggers: s.triggers,
				BatchWaitTimeoutS: float64(s.queueUs) / 1e6, TimeoutS: float64(l.sloUs) / 1e6}})
	}
	t := l.table()
	deps = append(deps, rayDeployment{Name: export.DNSLabel(l.o.Name + "-router"), NumReplicas: 1, MaxOngoingRequests: 2 * l.maxBatch(),
		RayActorOptions: export.RayActorOptions{NumCPUs: 1},
		UserConfig:      rayUserConfig{Table: &t, Stages: stages, Note: "Ray Serve cannot express " + Unsupported + ": this router applies gear_table"}})
	head := export.Comment(fmt.Sprintf("CascadeServe gear plan for cascade %s on %s GPUs: a deployment per model, and a router whose", l.cp.Task, l.gpu),
		"user_config.gear_table the application's code applies (measure QPS every poll_ms, pick the gear, forward while",
		"the certainty is below the gear's threshold): Ray Serve cannot express "+Unsupported+" natively.")
	return export.RaySystemFile(l.o, deps, head)
}

func put(f export.Files, name string, b []byte) error {
	return f.Put(name, b, "rename a model, or pass --name")
}
