package export

import (
	"maps"
	"math"
	"strconv"

	"sigs.k8s.io/yaml"
)

// KServe manifests (v1beta1 InferenceService, v1alpha1 InferenceGraph): only the documented
// fields a plan sets.

// ObjectMeta is Kubernetes object metadata.
type ObjectMeta struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// InferenceService is serving.kserve.io/v1beta1 InferenceService.
type InferenceService struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       ISVCSpec   `json:"spec"`
}

// ISVCSpec holds the predictor.
type ISVCSpec struct {
	Predictor Predictor `json:"predictor"`
}

// Predictor is the predictor component: replicas, the model and where it runs.
type Predictor struct {
	MinReplicas int    `json:"minReplicas"`
	MaxReplicas int    `json:"maxReplicas"`
	ScaleMetric string `json:"scaleMetric,omitempty"`
	ScaleTarget int    `json:"scaleTarget,omitempty"`
	// AutoScaling is KServe's KEDA-based autoscaling (with the deploymentMode and
	// autoscalerClass annotations).
	AutoScaling  *KServeAutoScaling `json:"autoScaling,omitempty"`
	Batcher      *Batcher           `json:"batcher,omitempty"`
	Model        PredictorModel     `json:"model"`
	NodeSelector map[string]string  `json:"nodeSelector,omitempty"`
}

// Batcher is KServe's request batcher (maxLatency in ms, timeout in s).
type Batcher struct {
	MaxBatchSize int `json:"maxBatchSize"`
	MaxLatency   int `json:"maxLatency"`
	Timeout      int `json:"timeout,omitempty"`
}

// PredictorModel is the model spec.
type PredictorModel struct {
	ModelFormat ModelFormat `json:"modelFormat"`
	Runtime     string      `json:"runtime"`
	// StorageURI is empty for a runtime that fetches its model itself (the huggingface
	// runtime given --model_id).
	StorageURI string `json:"storageUri,omitempty"`
	// Args are the serving container's arguments (the huggingface runtime passes vLLM engine
	// arguments through).
	Args      []string  `json:"args,omitempty"`
	Resources Resources `json:"resources"`
}

// ModelFormat names the format.
type ModelFormat struct {
	Name string `json:"name"`
}

// Resources are container resource limits and requests.
type Resources struct {
	Limits   map[string]string `json:"limits,omitempty"`
	Requests map[string]string `json:"requests,omitempty"`
}

// InferenceGraph is serving.kserve.io/v1alpha1 InferenceGraph.
type InferenceGraph struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       GraphSpec  `json:"spec"`
}

// GraphSpec holds the graph's nodes ("root" is the entry).
type GraphSpec struct {
	Nodes map[string]GraphNode `json:"nodes"`
}

// GraphNode is a router and its steps.
type GraphNode struct {
	RouterType string      `json:"routerType"`
	Steps      []GraphStep `json:"steps"`
}

// GraphStep calls one InferenceService; Data "$response" feeds it the previous step's answer.
type GraphStep struct {
	Name        string `json:"name"`
	ServiceName string `json:"serviceName,omitempty"`
	// NodeName calls another node of the graph instead of a service (a Switch or an
	// Ensemble nested in a Sequence).
	NodeName string `json:"nodeName,omitempty"`
	Data     string `json:"data,omitempty"`
	// Condition is a GJSON query on the previous step's response: the step runs only when
	// it matches (a cascade forwards on low certainty).
	Condition string `json:"condition,omitempty"`
}

// Label keys of exported KServe objects.
const labelPrefix = "plan.dev/"

// Scaling is a predictor's autoscaling from the plan's headroom: the plan allocates Count
// replicas (MaxReplicas); Needed of them carry the rate it was solved for (MinReplicas); one
// replica sustains PerReplicaRPS within the SLO (Knative's rps target). Zero values: fixed at
// Count, no scale metric.
type Scaling struct {
	Needed        int
	PerReplicaRPS float64
}

// NewBatcher is KServe's batcher for a unit that batches (batch > 1), nil otherwise: KServe's
// agent refuses to start with maxLatency or maxBatchSize <= 0 (ecosystem.md §7), so a unit
// that does not batch gets none, and the wait rounds up to at least 1 ms, the timeout to at
// least 1 s.
func NewBatcher(batch int, queueDelayUs, timeoutUs int64) *Batcher {
	if batch <= 1 {
		return nil
	}
	return &Batcher{MaxBatchSize: batch, MaxLatency: max(1, int(math.Ceil(float64(queueDelayUs)/1000))),
		Timeout: max(1, int(math.Ceil(float64(timeoutUs)/1e6)))}
}

// NewInferenceService builds the InferenceService of one pool: up to the pool's slice count
// of pods (one pod per slice), the GPU type's node selector (Options.NodeSelector), and for
// 1/v slices (v > 1) nvidia.com/gpu.replicas = v (the time-sliced device plugin's label).
func NewInferenceService(name, storage string, pl Placement, sel map[string]string, sc Scaling, queueDelayUs, timeoutUs int64) InferenceService {
	sel = maps.Clone(sel)
	if pl.VGPU > 1 {
		sel["nvidia.com/gpu.replicas"] = strconv.Itoa(pl.VGPU)
	}
	labels := map[string]string{}
	ann := map[string]string{}
	for k, v := range pl.Params() {
		ann[labelPrefix+k[len("plan."):]] = v
	}
	labels[labelPrefix+"batch"] = strconv.Itoa(pl.Batch)
	labels[labelPrefix+"gpu"] = DNSLabel(pl.GPU)
	pr := Predictor{MinReplicas: pl.Count, MaxReplicas: pl.Count,
		Batcher: NewBatcher(pl.Batch, queueDelayUs, timeoutUs),
		Model: PredictorModel{ModelFormat: ModelFormat{Name: "onnx"}, Runtime: "kserve-tritonserver",
			StorageURI: storage + "/" + name,
			Resources:  Resources{Limits: map[string]string{"nvidia.com/gpu": "1"}, Requests: map[string]string{"nvidia.com/gpu": "1"}}},
		NodeSelector: sel,
	}
	if sc.Needed > 0 {
		pr.MinReplicas = min(max(sc.Needed, 1), pl.Count)
	}
	if sc.PerReplicaRPS >= 1 {
		pr.ScaleMetric, pr.ScaleTarget = "rps", int(math.Floor(sc.PerReplicaRPS))
	}
	return InferenceService{
		APIVersion: "serving.kserve.io/v1beta1", Kind: "InferenceService",
		Metadata: ObjectMeta{Name: name, Labels: labels, Annotations: ann},
		Spec:     ISVCSpec{Predictor: pr},
	}
}

// NewSequenceGraph builds an InferenceGraph whose root calls services in order.
func NewSequenceGraph(name string, services []string) InferenceGraph {
	g := InferenceGraph{APIVersion: "serving.kserve.io/v1alpha1", Kind: "InferenceGraph", Metadata: ObjectMeta{Name: name}}
	node := GraphNode{RouterType: "Sequence"}
	for i, s := range services {
		st := GraphStep{Name: "step-" + strconv.Itoa(i), ServiceName: s, Data: "$request"}
		if i > 0 {
			st.Data = "$response"
		}
		node.Steps = append(node.Steps, st)
	}
	g.Spec.Nodes = map[string]GraphNode{"root": node}
	return g
}

// YAML marshals a manifest (keys in lexical order).
func YAML(v any) ([]byte, error) { return yaml.Marshal(v) }
