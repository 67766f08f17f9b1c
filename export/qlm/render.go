package qlm

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/export/vllm"
)

// pbParams renders string parameters in key order.
func pbParams(b *strings.Builder, params map[string]string) {
	keys := slices.Sorted(maps.Keys(params))
	for _, k := range keys {
		fmt.Fprintf(b, "parameters {\n  key: %s\n  value { string_value: %s }\n}\n", strconv.Quote(k), strconv.Quote(params[k]))
	}
}

// engineJSON is model.json: the engine arguments, indented, in Engine's field order.
func engineJSON(e Engine) []byte {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		panic(err) // numbers and a string always marshal
	}
	return append(b, '\n')
}

// tritonFiles renders the model repository: <unit>/config.pbtxt and <unit>/1/model.json per
// instance (the vLLM backend), and the coordinator's <name>-coordinator/config.pbtxt (a BLS
// model whose parameters carry the plan record).
func tritonFiles(l *layout) (export.Files, error) {
	f := export.Files{}
	for _, in := range l.insts {
		var b strings.Builder
		b.Write(export.Comment(in.describe(),
			"1/model.json holds the vLLM engine arguments: set \"model\" to the weights (a Hugging Face id or a path).",
			"The instance serves requests the coordinator forwards from the head of its virtual queue (request pulling);",
			"add model_transaction_policy { decoupled: true } to stream tokens.",
			"Triton cannot express "+Unsupported+"."))
		fmt.Fprintf(&b, "name: %s\nbackend: \"vllm\"\nmax_batch_size: 0\n", strconv.Quote(in.unit))
		if err := export.PodFits(in.unit, in.in.GPU, [][]int{in.gpus}, l.o.PerServer); err != nil {
			return nil, err
		}
		if len(in.gpus) == 1 {
			// One GPU: Triton pins the engine's instance to it, the pod's only GPU (id 0
			// within the pod: export.PodGPUs); the group's name keeps the plan's GPU.
			fmt.Fprintf(&b, "instance_group {\n  name: \"g%d\"\n  kind: KIND_GPU\n  count: 1\n  gpus: [ 0 ]\n}\n", in.gpus[0])
		} else {
			// Tensor parallel: vLLM spreads the model over the GPUs it sees (KIND_MODEL); start
			// Triton with CUDA_VISIBLE_DEVICES covering qlm.gpus.
			b.WriteString("instance_group {\n  kind: KIND_MODEL\n  count: 1\n}\n")
		}
		pbParams(&b, in.params())
		if err := put(f, in.unit+"/config.pbtxt", []byte(b.String())); err != nil {
			return nil, err
		}
		if err := put(f, in.unit+"/1/"+export.VLLMModelFile, engineJSON(in.engine)); err != nil {
			return nil, err
		}
	}
	var b strings.Builder
	b.Write(export.Comment("QLM coordinator (BLS, Python backend): supply 1/model.py.",
		"It keeps QLM's global queue: classifies each request (input \"class\", an llm_classes name) into a request group",
		"(qlm.plan: groups, classes with their SLOs, δ), keeps every instance's virtual queue in qlm.plan's order and forwards",
		"the head group's requests to that instance's model (qlm.plan units) while its engine has room.",
		"Virtual queues at start: "+l.describeQueues()+".",
		"Triton cannot express "+Unsupported+"."))
	fmt.Fprintf(&b, "name: %s\nbackend: \"python\"\nmax_batch_size: 0\n", strconv.Quote(l.coord))
	b.WriteString("input {\n  name: \"text_input\"\n  data_type: TYPE_STRING\n  dims: [ 1 ]\n}\n")
	b.WriteString("input {\n  name: \"class\"\n  data_type: TYPE_STRING\n  dims: [ 1 ]\n}\n")
	b.WriteString("input {\n  name: \"sampling_parameters\"\n  data_type: TYPE_STRING\n  dims: [ 1 ]\n}\n")
	b.WriteString("output {\n  name: \"text_output\"\n  data_type: TYPE_STRING\n  dims: [ -1 ]\n}\n")
	b.WriteString("instance_group {\n  kind: KIND_CPU\n  count: 1\n}\n")
	pbParams(&b, map[string]string{ParamPlan: export.MustJSON(l.rec)})
	if err := put(f, l.coord+"/config.pbtxt", []byte(b.String())); err != nil {
		return nil, err
	}
	if err := put(f, l.coord+"/1/.keep", nil); err != nil {
		return nil, err
	}
	readme := export.CoordinatorReadme("QLM", Unsupported, []export.Coordinator{{Model: l.coord, Params: []string{ParamPlan}, Does: []string{
		"classify each request by its input \"class\" (an llm_classes name) into its request group (qlm.plan groups);",
		"keep every instance's virtual queue in qlm.plan's order; forward the head group's requests (text_input, sampling_parameters) to that instance's model (qlm.plan units) while its engine has room;",
		"answer text_output with the engine's output.",
	}}})
	if err := put(f, export.ReadmeFile, readme); err != nil {
		return nil, err
	}
	return f, nil
}

// args are an engine's KServe huggingface-runtime container arguments: the runtime's own
// (model name, model id, backend) and vLLM's engine arguments in CLI form. The model name
// is the first of the names `plan serve` answers the instance's requests by (servedNames),
// so a client moves between the two unchanged: KServe's OpenAI routes take a request's
// model as the name the server registered (--model_name, one per server), and vLLM's
// --served-model-name makes the engine answer, and label its vllm: metrics (the KEDA
// query's model_name), by the same name instead of the Hugging Face id.
func (in instance) args() []string {
	e := in.engine
	name := in.servedName()
	a := []string{"--model_name=" + name, "--model_id=" + e.Model, "--served-model-name=" + name, "--backend=vllm"}
	return append(a, vllm.Args(e)...)
}

func annotation(key string) string { return "plan.dev/" + key }

// servedLine says which OpenAI model name an instance's service answers: `plan serve`'s
// name for its class, and for an instance of several classes, that KServe routes one.
func servedLine(in instance) string {
	name := in.servedName()
	if len(in.served) <= 1 {
		return fmt.Sprintf("for model %q, the name `plan serve` answers this instance's requests by.", name)
	}
	return fmt.Sprintf("for model %q, the name `plan serve` answers them by; KServe routes one model name per server, so requests of %s (classes of the same model, this same engine) name %q here, or go through the queue coordinator.",
		name, strings.Join(quoteAll(in.served[1:]), ", "), name)
}

// servedName is the name an instance's service registers: the first of servedNames.
func (in instance) servedName() string {
	if len(in.served) == 0 {
		return in.in.Model
	}
	return in.served[0]
}

func quoteAll(ss []string) []string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return q
}

// kserveFiles renders one InferenceService per instance, or per role of a disaggregated
// plan with a replica per instance (roles.go).
func kserveFiles(l *layout) (export.Files, error) {
	f := export.Files{}
	rec := export.MustJSON(l.grec)
	for _, g := range l.groups {
		in := g.members[0]
		ann := map[string]string{annotation(ParamPlan): rec, annotation("qlm.unsupported"): Unsupported}
		for k, v := range g.params() {
			ann[annotation(k)] = v
		}
		n := strconv.Itoa(in.in.GPUCount)
		sel, err := l.o.NodeSelector(in.in.GPU)
		if err != nil {
			return nil, err
		}
		labels := map[string]string{annotation("gpu"): export.DNSLabel(in.in.GPU), annotation("model"): export.DNSLabel(in.in.Model)}
		replicas := "one replica is the instance"
		if g.role != "" {
			labels[annotation("role")] = g.role
			replicas = "each replica is one of the instances qlm.instance lists"
		}
		isvc := export.InferenceService{APIVersion: "serving.kserve.io/v1beta1", Kind: "InferenceService",
			Metadata: export.ObjectMeta{Name: g.unit, Annotations: ann, Labels: labels},
			Spec: export.ISVCSpec{Predictor: export.Predictor{MinReplicas: len(g.members), MaxReplicas: len(g.members),
				Model: export.PredictorModel{ModelFormat: export.ModelFormat{Name: "huggingface"}, Runtime: "kserve-huggingfaceserver",
					Args:      in.args(),
					Resources: export.Resources{Limits: map[string]string{"nvidia.com/gpu": n}, Requests: map[string]string{"nvidia.com/gpu": n}}},
				NodeSelector: sel}}}
		b, err := export.YAML(isvc)
		if err != nil {
			return nil, err
		}
		head := export.Comment(g.describe(),
			"The huggingface runtime's vLLM backend answers the OpenAI-compatible API (completions, chat completions)",
			servedLine(in)+" It loads --model_id="+in.engine.Model+" (the profile's hf_model, or the catalogue's id for the model).",
			"The pod is not pinned to qlm.gpus; "+replicas+".",
			fmt.Sprintf("%s is the plan record a queue coordinator needs (groups, virtual queues, SLOs).", annotation(ParamPlan)),
			"KServe cannot express "+Unsupported+".")
		if err := put(f, "inferenceservice-"+g.unit+".yaml", append(head, b...)); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// rayDeployment is one of QLM's deployments (its user_config is not export.RayUserConfig).
type rayDeployment = export.RayDeploymentOf[rayUserConfig]

// rayUserConfig is an instance's (Placement, Engine) or the router's (Record) configuration.
type rayUserConfig struct {
	Placement map[string]string `json:"plan,omitempty"`
	Engine    *Engine           `json:"engine,omitempty"`
	Record    *Record           `json:"qlm,omitempty"`
	Note      string            `json:"note"`
}

// rayFiles renders serve-config.yaml: one application, a deployment per instance and the
// router.
func rayFiles(l *layout) (export.Files, error) {
	var deps []rayDeployment
	seqs := 0
	for _, g := range l.groups {
		in := g.members[0]
		eng := in.engine
		n := float64(in.in.GPUCount)
		accel, err := l.o.RayAcceleratorType(in.in.GPU)
		if err != nil {
			return nil, err
		}
		// max_ongoing_requests = the engine's running-sequence cap: the router pulls no more
		// into an instance (a replica) than its continuous batch admits.
		deps = append(deps, rayDeployment{Name: g.unit, NumReplicas: len(g.members), MaxOngoingRequests: eng.MaxNumSeqs,
			RayActorOptions: export.RayActorOptions{NumGPUs: n, NumCPUs: 1, AcceleratorType: accel},
			UserConfig:      rayUserConfig{Placement: g.params(), Engine: &eng, Note: g.describe()}})
		seqs += eng.MaxNumSeqs * len(g.members)
	}
	rec := l.grec
	// The router holds the global queue: room for every engine's running batch and δ more
	// batches waiting per engine (the request-group cap δ·batch, QLM §4).
	deps = append(deps, rayDeployment{Name: export.DNSLabel(l.o.Name + "-router"), NumReplicas: 1,
		MaxOngoingRequests: seqs * (1 + DefaultDelta), RayActorOptions: export.RayActorOptions{NumCPUs: 1},
		UserConfig: rayUserConfig{Record: &rec, Note: "Ray Serve cannot express " + Unsupported +
			": this router keeps the groups and the virtual queues in qlm and forwards each head group's requests to its instance's deployment (qlm.units)"}})
	what := fmt.Sprintf("a vLLM deployment per LLM instance (%d)", len(l.insts))
	if l.grec.Roles != nil {
		what = fmt.Sprintf("a vLLM deployment per role of the disaggregated instances (%d deployments, a replica per instance: %d)", len(l.groups), len(l.insts))
	}
	head := export.Comment("QLM plan: "+what+" and a router whose user_config.qlm holds the request groups,",
		"every instance's virtual queue and the classes' SLOs. Virtual queues at start: "+l.describeQueues()+".",
		"Ray Serve cannot express "+Unsupported+".")
	return export.RaySystemFile(l.o, deps, head)
}

func put(f export.Files, name string, b []byte) error {
	return f.Put(name, b, "rename an instance, or pass --name")
}
