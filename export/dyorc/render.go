package dyorc

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
)

// tritonFiles renders the model repository: <unit>/config.pbtxt per service deployment (an
// instance_group per GPU holding it, named g<gpu>, pinned to it) and <app unit>/config.pbtxt
// per application (a BLS model whose parameters carry the workflow).
func tritonFiles(l *layout) (export.Files, error) {
	f := export.Files{}
	for _, s := range l.svcs {
		c := export.TritonConfig{Name: s.unit, Platform: "onnxruntime_onnx", MaxBatchSize: s.dep.MaxBatch,
			Batching:   &export.TritonBatching{TimeoutUs: s.timeoutUs},
			Parameters: l.params(s)}
		var b strings.Builder
		b.Write(export.Comment(fmt.Sprintf("DyOrc service %s: %d replica(s) on %s, warm on GPU(s) %s at start (instance groups g<gpu>).", s.dep.Service, s.dep.Replicas, s.dep.GPU, export.JoinInts(s.gpus)),
			"It batches the ready tasks of every workflow that calls it without waiting for more (component-level batching,",
			"DyOrc paper §5.1: queue delay 0); a task older than the longest SLO of those workflows is rejected. It",
			fmt.Sprintf("answers the workflow node a request goes to next as the output %q (the branch its output decides).", NextOutput),
			"Triton cannot express "+Unsupported+"."))
		b.Write(c.PBTxt())
		// GPU ids within the service's pod (export.PodGPUs); g<gpu> keeps the plan's GPU.
		plan := make([][]int, len(s.gpus))
		for k, g := range s.gpus {
			plan[k] = []int{g}
		}
		if err := export.PodFits(s.unit, s.dep.GPU, plan, l.o.PerServer); err != nil {
			return nil, err
		}
		for k, ids := range export.PodGPUs(plan) {
			fmt.Fprintf(&b, "instance_group {\n  name: \"g%d\"\n  kind: KIND_GPU\n  count: 1\n  gpus: [ %d ]\n}\n", s.gpus[k], ids[0])
		}
		if err := put(f, s.unit+"/config.pbtxt", []byte(b.String())); err != nil {
			return nil, err
		}
	}
	var coords []export.Coordinator
	for _, a := range l.apps {
		var b strings.Builder
		b.Write(export.Comment(fmt.Sprintf("DyOrc workflow %s (BLS, Python backend): supply 1/model.py.", a.name),
			"It walks the workflow in dyorc.workflow: calls each step's service (dyorc.services maps services to models),",
			fmt.Sprintf("follows the node each answer names in its %q output (guards, choices, the loop's stop), and", NextOutput),
			"calls a fan-out step's copies together. "+describe(a.wf),
			"Triton cannot express "+Unsupported+"."))
		fmt.Fprintf(&b, "name: %s\nbackend: \"python\"\nmax_batch_size: 0\n", strconv.Quote(a.unit))
		b.WriteString("input {\n  name: \"INPUT0\"\n  data_type: TYPE_FP32\n  dims: [ -1 ]\n}\n")
		b.WriteString("output {\n  name: \"OUTPUT0\"\n  data_type: TYPE_FP32\n  dims: [ -1 ]\n}\n")
		b.WriteString("output {\n  name: \"PATH\"\n  data_type: TYPE_STRING\n  dims: [ -1 ]\n}\n")
		b.WriteString("instance_group {\n  kind: KIND_CPU\n  count: 1\n}\n")
		params := l.appParams(a)
		keys := slices.Sorted(maps.Keys(params))
		for _, k := range keys {
			fmt.Fprintf(&b, "parameters {\n  key: %s\n  value { string_value: %s }\n}\n", strconv.Quote(k), strconv.Quote(params[k]))
		}
		if err := put(f, a.unit+"/config.pbtxt", []byte(b.String())); err != nil {
			return nil, err
		}
		if err := put(f, a.unit+"/1/.keep", nil); err != nil {
			return nil, err
		}
		coords = append(coords, export.Coordinator{Model: a.unit, Params: keys, Does: []string{
			"walk the workflow in " + ParamWorkflow + " from its first step with the request's INPUT0: call each step's service (" + ParamServices + " maps services to models here);",
			fmt.Sprintf("go on to the node each answer names in its %q output (guards, choices, the loop's stop); call a fan-out step's copies together;", NextOutput),
			"answer OUTPUT0 with the last step's output and PATH with the nodes visited.",
		}})
	}
	if len(coords) > 0 {
		if err := put(f, export.ReadmeFile, export.CoordinatorReadme("DyOrc", Unsupported, coords)); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// kserveFiles renders one InferenceService per service deployment and one InferenceGraph
// per application.
func kserveFiles(l *layout) (export.Files, error) {
	f := export.Files{}
	for _, s := range l.svcs {
		sel, err := l.o.NodeSelector(s.dep.GPU)
		if err != nil {
			return nil, err
		}
		isvc := export.NewInferenceService(s.unit, l.o.StorageURI, l.placement(s), sel, export.Scaling{}, 0, s.timeoutUs)
		for k, v := range l.params(s) {
			if rest, ok := strings.CutPrefix(k, "dyorc."); ok {
				isvc.Metadata.Annotations[annotation(rest)] = v
			}
		}
		b, err := export.YAML(isvc)
		if err != nil {
			return nil, err
		}
		head := export.Comment(fmt.Sprintf("DyOrc service %s: one pod per GPU that holds it at start (%s lists the GPU indices; pods are not pinned to them).", s.dep.Service, annotation("gpus")),
			fmt.Sprintf("It answers the workflow node a request goes to next as the v2 output tensor %q.", NextOutput))
		if err := put(f, "inferenceservice-"+s.unit+".yaml", append(head, b...)); err != nil {
			return nil, err
		}
	}
	for _, a := range l.apps {
		ig := export.InferenceGraph{APIVersion: "serving.kserve.io/v1alpha1", Kind: "InferenceGraph",
			Metadata: export.ObjectMeta{Name: a.unit, Annotations: map[string]string{}}}
		for k, v := range l.appParams(a) {
			ig.Metadata.Annotations[annotation(strings.TrimPrefix(k, "dyorc."))] = v
		}
		ig.Spec.Nodes = l.graph(a)
		b, err := export.YAML(ig)
		if err != nil {
			return nil, err
		}
		head := export.Comment(fmt.Sprintf("DyOrc workflow %s: %s", a.name, describe(a.wf)),
			"root is a Sequence with a step per workflow step (a loop unrolled into its rounds). A step that may not run",
			fmt.Sprintf("(a guard, a choice, a later loop round) is a Switch node whose steps match the previous %q output;", NextOutput),
			"a Switch that matches nothing passes its input on. A fan-out step is an Ensemble of its copies.",
			"The guards' and choices' probabilities are the simulator's (annotation dyorc.workflow); the services' outputs decide here.",
			"KServe cannot express "+Unsupported+", nor a step that joins several earlier outputs (only the previous response flows).")
		if err := put(f, "inferencegraph-"+a.unit+".yaml", append(head, b...)); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// rounds is how many times the app's steps run at most (a loop's max_iter).
func rounds(a dyorcsec.App) int {
	if a.Loop != nil {
		return max(a.Loop.MaxIter, 1)
	}
	return 1
}

// nodeCondition is the GJSON condition on the previous response that selects node.
func nodeCondition(node string) string {
	return fmt.Sprintf(`outputs.#(name=="%s").data.#(=="%s")`, NextOutput, node)
}

// graph builds an application's InferenceGraph nodes.
func (l *layout) graph(a app) map[string]export.GraphNode {
	nodes := map[string]export.GraphNode{}
	root := export.GraphNode{RouterType: "Sequence"}
	R := rounds(a.wf)
	for r := 1; r <= R; r++ {
		for _, st := range steps(a.wf) {
			name := st.ID
			if a.wf.Loop != nil {
				name = fmt.Sprintf("%s-%d-%s", a.wf.Loop.ID, r, st.ID)
			}
			name = export.DNSLabel(name)
			svcs := []string{st.Service}
			if len(st.Choice) > 0 {
				svcs = slices.Sorted(maps.Keys(st.Choice))
			}
			call := func(svc string) export.GraphStep {
				if st.Fanout > 1 {
					ens := export.GraphNode{RouterType: "Ensemble"}
					for k := 0; k < st.Fanout; k++ {
						ens.Steps = append(ens.Steps, export.GraphStep{Name: "copy-" + strconv.Itoa(k), ServiceName: l.unit[svc], Data: "$request"})
					}
					en := export.DNSLabel(name + "-" + svc + "-fanout")
					nodes[en] = ens
					return export.GraphStep{NodeName: en}
				}
				return export.GraphStep{ServiceName: l.unit[svc]}
			}
			data := "$response"
			if len(root.Steps) == 0 {
				data = "$request"
			}
			if st.When == "" && len(st.Choice) == 0 && r == 1 {
				s := call(st.Service)
				s.Name, s.Data = name, data
				root.Steps = append(root.Steps, s)
				continue
			}
			sw := export.GraphNode{RouterType: "Switch"}
			for _, svc := range svcs {
				node := st.ID
				if len(st.Choice) > 0 {
					node += ":" + svc
				}
				s := call(svc)
				s.Name, s.Data, s.Condition = export.DNSLabel(svc), "$request", nodeCondition(node)
				sw.Steps = append(sw.Steps, s)
			}
			nodes[name] = sw
			root.Steps = append(root.Steps, export.GraphStep{Name: name, NodeName: name, Data: data})
		}
	}
	nodes["root"] = root
	return nodes
}

func annotation(key string) string { return "plan.dev/dyorc." + key }

// rayDeployment is one of DyOrc's deployments (its user_config is not export.RayUserConfig).
type rayDeployment = export.RayDeploymentOf[rayUserConfig]

// rayUserConfig is a service deployment's (Placement, batching) or the driver's (Plan,
// Workflows) configuration.
type rayUserConfig struct {
	Placement         map[string]string `json:"plan,omitempty"`
	MaxBatchSize      int               `json:"max_batch_size,omitempty"`
	BatchWaitTimeoutS float64           `json:"batch_wait_timeout_s"`
	TimeoutS          float64           `json:"timeout_s,omitempty"`
	Record            *Record           `json:"dyorc,omitempty"`
	Workflows         []rayWorkflow     `json:"workflows,omitempty"`
	Note              string            `json:"note,omitempty"`
}

// rayWorkflow is one application as the driver runs it.
type rayWorkflow struct {
	App      string            `json:"app"`
	TimeoutS float64           `json:"timeout_s,omitempty"`
	Services map[string]string `json:"services"`
	Workflow dyorcsec.App      `json:"workflow"`
}

// rayFiles renders serve-config.yaml: one application, a deployment per service deployment
// and the workflow driver.
func rayFiles(l *layout) (export.Files, error) {
	var deps []rayDeployment
	for _, s := range l.svcs {
		accel, err := l.o.RayAcceleratorType(s.dep.GPU)
		if err != nil {
			return nil, err
		}
		deps = append(deps, rayDeployment{Name: s.unit, NumReplicas: s.dep.Replicas, MaxOngoingRequests: 2 * s.dep.MaxBatch,
			RayActorOptions: export.RayActorOptions{NumGPUs: 1, NumCPUs: 1, AcceleratorType: accel},
			UserConfig:      rayUserConfig{Placement: l.params(s), MaxBatchSize: s.dep.MaxBatch, TimeoutS: float64(s.timeoutUs) / 1e6}})
	}
	rec := l.rec
	drv := rayUserConfig{Record: &rec, Note: "Ray Serve cannot express " + Unsupported + ": this driver walks each workflow, following the node each service answers as \"" + NextOutput + "\""}
	for _, ap := range l.apps {
		svcs := map[string]string{}
		for _, kv := range strings.Split(l.appParams(ap)[ParamServices], ";") {
			k, v, _ := strings.Cut(kv, "=")
			svcs[k] = v
		}
		drv.Workflows = append(drv.Workflows, rayWorkflow{App: ap.name, TimeoutS: float64(ap.sloUs) / 1e6, Services: svcs, Workflow: ap.wf})
	}
	deps = append(deps, rayDeployment{Name: export.DNSLabel(l.o.Name + "-driver"), NumReplicas: 1, MaxOngoingRequests: 100,
		RayActorOptions: export.RayActorOptions{NumCPUs: 1}, UserConfig: drv})
	head := export.Comment(fmt.Sprintf("DyOrc plan: a deployment per service (num_replicas = GPUs holding it at start) and a workflow driver for %d application(s)", len(l.apps)),
		"whose user_config.workflows the application's code walks (guards, choices and the loop's stop decided by each",
		"service's \""+NextOutput+"\" answer; fan-out copies called together). Ray Serve cannot express "+Unsupported+".")
	return export.RaySystemFile(l.o, deps, head)
}

func put(f export.Files, name string, b []byte) error {
	return f.Put(name, b, "rename a service or an app, or pass --name")
}
