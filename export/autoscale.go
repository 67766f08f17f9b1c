package export

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats"
)

// Autoscaling from the plan (ecosystem-dropin.md §5): every exported worker that a target can
// scale gets a replica range and a threshold derived from the plan's per-replica capacity at
// the SLO. The range is [the replicas the plan's own rates need, the replicas the plan
// allocates]; the threshold is what one replica carries within the SLO:
//
//   - an application the plan predicts (formats.Prediction, `plan solve`'s simulation): its
//     sustained_rps (the highest rate at which it still meets its target) over the unit's
//     replicas — every request of an application passes through each of its units once;
//   - else the plan's own per-replica throughput (a PPipe partition's, a PARD module's);
//   - an LLM instance (vLLM engine): its running-sequence cap (max_num_seqs), on vLLM's
//     `vllm:num_requests_running` + `vllm:num_requests_waiting` (dropin §1): a replica is
//     full when its continuous batch is;
//   - a DNN unit with neither: Triton's mean queue time (dropin §2,
//     rate(nv_inference_queue_duration_us) / rate(nv_inference_request_success)) against the
//     batch wait the plan budgets for it.

// DefaultPrometheus is the Prometheus the triggers query (Options.Prometheus): the service
// the Prometheus Operator creates in a "monitoring" namespace.
const DefaultPrometheus = "http://prometheus-operated.monitoring.svc:9090"

// Capacity is the plan's prediction per application: what the thresholds derive from.
type Capacity struct {
	// SustainedRPS, RateRPS and P50Ms per application name (formats.AppPrediction).
	SustainedRPS, RateRPS, P50Ms map[string]float64
}

// CapacityOf reads a plan's prediction (empty without one).
func CapacityOf(p *formats.Plan) Capacity {
	c := Capacity{SustainedRPS: map[string]float64{}, RateRPS: map[string]float64{}, P50Ms: map[string]float64{}}
	if p == nil || p.Prediction == nil {
		return c
	}
	for _, a := range p.Prediction.Apps {
		if a.SustainedRPS > 0 && !math.IsInf(a.SustainedRPS, 0) {
			c.SustainedRPS[a.Name] = a.SustainedRPS
		}
		c.RateRPS[a.Name] = a.RateRPS
		c.P50Ms[a.Name] = a.P50Ms
	}
	return c
}

// Scale is one worker's autoscaling.
type Scale struct {
	// Min and Max replicas.
	Min, Max int
	// Metric names the series for an HPA External metric (a metrics adapter serves it under
	// this name: the HPA's plan.dev/metric-query annotation is the PromQL to serve); Selector
	// its labels.
	Metric   string
	Selector map[string]string
	// Query is the single-value PromQL KEDA's Prometheus trigger evaluates.
	Query string
	// Threshold is per replica (AverageValue: replicas = ceil(value / threshold)) unless
	// PerPod is false (Value: the metric is already a per-request mean).
	Threshold float64
	PerPod    bool
	// Basis says where the threshold comes from (written beside the object).
	Basis string
}

// appOf is the application a placement key names ("app/..." → "app").
func appOf(key string) string {
	app, _, _ := strings.Cut(key, "/")
	return app
}

// rpsScale scales a DNN unit of app on the coordinator's request rate (plan serve's
// plan_requests_total{model}); fallback is the plan's own per-replica throughput (0: none).
func (c Capacity) rpsScale(app string, count int, fallback float64) (Scale, bool) {
	count = max(count, 1)
	per, basis := 0.0, ""
	if s, ok := c.SustainedRPS[app]; ok {
		per = s / float64(count)
		basis = fmt.Sprintf("the plan's prediction: %s sustains %s rps within its SLO on %d replica(s)", app, fmtNum(s), count)
	} else if fallback > 0 {
		per = fallback
		basis = fmt.Sprintf("the plan's throughput: %s rps per replica within the SLO", fmtNum(fallback))
	}
	if per <= 0 || app == "" {
		return Scale{}, false
	}
	minR := count
	if r, ok := c.RateRPS[app]; ok && r > 0 {
		minR = min(max(int(math.Ceil(r/per-absTol)), 1), count)
	}
	return Scale{Min: minR, Max: count, Metric: "plan_requests_per_second", Selector: map[string]string{"model": app},
		Query:     fmt.Sprintf(`sum(rate(plan_requests_total{model=%q}[1m]))`, app),
		Threshold: per, PerPod: true, Basis: basis}, true
}

// PoolScale scales replicas interchangeable instances that serve apps together (QLM's
// instances of one model, which pull any of the model's request groups: QLM §5) on the
// coordinator's request rate of those applications: the threshold is what one replica
// carries within the SLOs, the apps' predicted sustained_rps summed over the replicas; the
// range runs from the replicas the apps' own rates need to the plan's. ok is false where the
// plan's prediction gives no sustained_rps for one of the apps.
func (c Capacity) PoolScale(apps []string, replicas int) (Scale, bool) {
	replicas = max(replicas, 1)
	sum, rate := 0.0, 0.0
	var names []string
	for _, a := range apps {
		s, ok := c.SustainedRPS[a]
		if !ok || a == "" {
			return Scale{}, false
		}
		sum, rate = sum+s, rate+c.RateRPS[a]
		names = append(names, regexp.QuoteMeta(a))
	}
	if len(apps) == 0 || sum <= 0 {
		return Scale{}, false
	}
	per := sum / float64(replicas)
	minR := min(max(int(math.Ceil(rate/per-absTol)), 1), replicas)
	return Scale{Min: minR, Max: replicas, Metric: "plan_requests_per_second", Selector: map[string]string{"model": strings.Join(apps, ",")},
		Query:     fmt.Sprintf(`sum(rate(plan_requests_total{model=~%q}[1m]))`, strings.Join(names, "|")),
		Threshold: per, PerPod: true,
		Basis: fmt.Sprintf("the plan's prediction: %s sustain %s rps within their SLOs on %d replica(s)", strings.Join(apps, ", "), fmtNum(sum), replicas)}, true
}

// llmScale scales an LLM instance of served model name on vLLM's queue gauges.
func llmScale(model string, maxSeqs, count int) Scale {
	count = max(count, 1)
	return Scale{Min: count, Max: count, Metric: "vllm_requests_in_engine", Selector: map[string]string{"model_name": model},
		Query:     fmt.Sprintf(`sum(vllm:num_requests_running{model_name=%q}) + sum(vllm:num_requests_waiting{model_name=%q})`, model, model),
		Threshold: float64(max(maxSeqs, 1)), PerPod: true,
		Basis: fmt.Sprintf("the plan's engine: a replica runs at most max_num_seqs=%d sequences; more are queued", maxSeqs)}
}

// queueScale scales a DNN unit the prediction does not name on Triton's mean queue time
// against the batch wait the plan budgets (at least 1 ms).
func queueScale(model string, count int, waitUs int64) Scale {
	count = max(count, 1)
	waitUs = max(waitUs, 1000)
	return Scale{Min: count, Max: count, Metric: "nv_inference_queue_duration_us_per_request", Selector: map[string]string{"model": model},
		Query:     fmt.Sprintf(`sum(rate(nv_inference_queue_duration_us{model=%q}[1m])) / sum(rate(nv_inference_request_success{model=%q}[1m]))`, model, model),
		Threshold: float64(waitUs), PerPod: false,
		Basis: fmt.Sprintf("the plan's batch wait: a request may queue %d us on average before the SLO is at risk", waitUs)}
}

// fmtNum writes a threshold: at most 3 decimals, no trailing zeros (a Kubernetes quantity).
func fmtNum(x float64) string {
	s := strconv.FormatFloat(math.Floor(x*1000)/1000, 'f', 3, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "" || s == "-" {
		return "0"
	}
	return s
}

// ScaledObjectFor is KEDA's ScaledObject for a Deployment.
func ScaledObjectFor(name string, s Scale, prometheus string) ScaledObject {
	md := map[string]string{"serverAddress": prometheus, "query": s.Query, "threshold": fmtNum(s.Threshold), "ignoreNullValues": "true"}
	trig := Trigger{Type: "prometheus", Metadata: md}
	so := ScaledObject{APIVersion: "keda.sh/v1alpha1", Kind: "ScaledObject",
		Metadata: ObjectMeta{Name: name, Annotations: map[string]string{labelPrefix + "scale-basis": s.Basis}},
		Spec: ScaledObjectSpec{ScaleTargetRef: ScaleTargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			PollingInterval: 15, CooldownPeriod: 300, MinReplicaCount: s.Min, MaxReplicaCount: s.Max,
			Triggers: []Trigger{trig}}}
	if !s.PerPod {
		so.Spec.Triggers[0].MetricType = "Value"
	}
	return so
}

// HPAFor is the autoscaling/v2 variant: the same range and threshold on an External metric
// a metrics adapter serves.
func HPAFor(name string, s Scale) HPA {
	t := MetricTarget{Type: "AverageValue", AverageValue: fmtNum(s.Threshold)}
	if !s.PerPod {
		t = MetricTarget{Type: "Value", Value: fmtNum(s.Threshold)}
	}
	return HPA{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler",
		Metadata: ObjectMeta{Name: name, Annotations: map[string]string{labelPrefix + "scale-basis": s.Basis,
			labelPrefix + "metric-query": s.Query, labelPrefix + "apply": "instead of the KEDA ScaledObject of the same name (KEDA makes its own HPA)"}},
		Spec: HPASpec{ScaleTargetRef: ScaleTargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas: max(s.Min, 1), MaxReplicas: max(s.Max, 1),
			Metrics: []HPAMetric{{Type: "External", External: &HPAExternalMetric{
				Metric: MetricIdentifier{Name: s.Metric, Selector: &LabelSelector{MatchLabels: s.Selector}}, Target: t}}}}}
}

// KServeAutoScaling is the predictor's KEDA-based autoscaling (KServe: deploymentMode
// RawDeployment — "Standard" in releases after 0.15 — and autoscalerClass keda; an External
// Prometheus metric).
type KServeAutoScaling struct {
	Metrics []KServeMetric `json:"metrics"`
}

// KServeMetric is one autoScaling metric (type External).
type KServeMetric struct {
	Type     string          `json:"type"`
	External *KServeExternal `json:"external,omitempty"`
}

// KServeExternal is an External metric: a Prometheus query and its target.
type KServeExternal struct {
	Metric KServeExternalMetric `json:"metric"`
	Target MetricTarget         `json:"target"`
}

// KServeExternalMetric names the backend and the query.
type KServeExternalMetric struct {
	Backend       string `json:"backend"`
	ServerAddress string `json:"serverAddress"`
	Query         string `json:"query"`
}

// KServe annotations that select KEDA (dropin §5).
const (
	KServeDeploymentMode  = "serving.kserve.io/deploymentMode"
	KServeAutoscalerClass = "serving.kserve.io/autoscalerClass"
)

// applyKServeScale sets a predictor's range and KEDA autoscaling, replacing Knative's rps.
func applyKServeScale(s *InferenceService, sc Scale, prometheus string) {
	if s.Metadata.Annotations == nil {
		s.Metadata.Annotations = map[string]string{}
	}
	s.Metadata.Annotations[KServeDeploymentMode] = "RawDeployment"
	s.Metadata.Annotations[KServeAutoscalerClass] = "keda"
	s.Metadata.Annotations[labelPrefix+"scale-basis"] = sc.Basis
	p := &s.Spec.Predictor
	p.MinReplicas, p.MaxReplicas = sc.Min, sc.Max
	p.ScaleMetric, p.ScaleTarget = "", 0
	t := MetricTarget{Type: "AverageValue", AverageValue: fmtNum(sc.Threshold)}
	if !sc.PerPod {
		t = MetricTarget{Type: "Value", Value: fmtNum(sc.Threshold)}
	}
	p.AutoScaling = &KServeAutoScaling{Metrics: []KServeMetric{{Type: "External", External: &KServeExternal{
		Metric: KServeExternalMetric{Backend: "prometheus", ServerAddress: prometheus, Query: sc.Query}, Target: t}}}}
}

// RayAutoscaling is a Ray Serve deployment's autoscaling_config (dropin §5: current names
// only; it replaces num_replicas).
type RayAutoscaling struct {
	MinReplicas           int     `json:"min_replicas"`
	InitialReplicas       int     `json:"initial_replicas"`
	MaxReplicas           int     `json:"max_replicas"`
	TargetOngoingRequests float64 `json:"target_ongoing_requests"`
}

// RayReplicas is the replicas a deployment is sized for: num_replicas, or with autoscaling
// the most it scales to (the plan's allocation).
func RayReplicas[U any](d RayDeploymentOf[U]) int {
	if d.AutoscalingConfig != nil {
		return d.AutoscalingConfig.MaxReplicas
	}
	return d.NumReplicas
}

// rayScale turns a deployment's fixed replicas into autoscaling_config: the range from sc,
// target_ongoing_requests the requests one replica holds at its capacity — Little's law,
// per-replica rps × the application's median latency (the LLM engine's max_num_seqs) — at
// least 1 and at most max_ongoing_requests.
func rayScale[U any](d *RayDeploymentOf[U], sc Scale, p50Ms float64) {
	target := sc.Threshold
	if sc.Metric == "plan_requests_per_second" {
		target = sc.Threshold * p50Ms / 1000
	}
	target = math.Max(1, target)
	if d.MaxOngoingRequests > 0 {
		target = math.Min(target, float64(d.MaxOngoingRequests))
	}
	d.AutoscalingConfig = &RayAutoscaling{MinReplicas: sc.Min, InitialReplicas: sc.Max, MaxReplicas: sc.Max,
		TargetOngoingRequests: math.Round(target*100) / 100}
	d.NumReplicas = 0
}
