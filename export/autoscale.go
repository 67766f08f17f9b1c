package export

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// Autoscaling from the plan (ecosystem-dropin.md §5): every exported worker that a target can
// scale gets a replica range and a threshold derived from the plan's per-replica capacity at
// the SLO. The range is [the replicas the plan's own rates need, the replicas the plan
// allocates]; the threshold is what one replica carries within the SLO:
//
//   - an application the plan predicts (formats.Prediction, `plan solve`'s simulation): its
//     sustained_rps (the highest rate at which it still meets its target) over the unit's
//     replicas — every request of an application passes through each of its units once;
//   - a PPipe pool: its pipeline's share of that — the dispatcher splits a model's traffic
//     across its pipelines (PPipe §5.4), so a pool scales on the rate its own pipeline
//     receives (serve's plan_pipeline_requests_total) against what its pipeline sustains
//     over the pool's replicas: the model's sustained_rps times the pipeline's share of the
//     plan's throughput (§5.3: the pipelines' throughputs sum to the model's), else the
//     pipeline's own throughput_rps; a pipeline without a throughput falls back to the
//     model's rate and its sustained_rps (the Basis says so);
//   - else the plan's own per-replica throughput (a PARD module's);
//   - an LLM instance (vLLM engine): its running-sequence cap (max_num_seqs), on vLLM's
//     `vllm:num_requests_running` + `vllm:num_requests_waiting` (dropin §1): a replica is
//     full when its continuous batch is;
//   - a DNN unit with neither: Triton's mean queue time (dropin §2,
//     rate(nv_inference_queue_duration_us) / rate(nv_inference_request_success)) against the
//     batch wait the plan budgets for it.

// DefaultPrometheus is the Prometheus the triggers query (Options.Prometheus): the service
// the Prometheus Operator creates in a "monitoring" namespace.
const DefaultPrometheus = "http://prometheus-operated.monitoring.svc:9090"

// The External metrics of the request-rate scales (a metrics adapter serves them from the
// HPA's plan.dev/metric-query): an application's requests per second at the coordinator, and
// a PPipe pipeline's.
const (
	RequestRateMetric  = "plan_requests_per_second"
	PipelineRateMetric = "plan_pipeline_requests_per_second"
)

// Capacity is the plan's prediction per application, and a PPipe plan's pipelines: what the
// thresholds derive from.
type Capacity struct {
	// SustainedRPS, RateRPS and P50Ms per application name (formats.AppPrediction).
	SustainedRPS, RateRPS, P50Ms map[string]float64
	// Pipelines are a PPipe plan's pipelines by the placement key of each of their pools
	// (PipelineKey).
	Pipelines map[string]PipelineCap
}

// PipelineCap is one pipeline of a PPipe plan as its pools' thresholds need it.
type PipelineCap struct {
	// Model and Index name the pipeline (ppipe.models[].pipelines[Index]).
	Model string
	Index int
	// ThroughputRPS is the pipeline's throughput within the SLO (throughput_rps); Share
	// its fraction of the throughput of its model's pipelines (0 when they have none).
	ThroughputRPS, Share float64
	// PlanRPS is the model's rate at load factor 1 (target_rps, else throughput_rps).
	PlanRPS float64
}

// PipelineKey names pool d (its partition) of pipeline pi of a PPipe model in placements.
func PipelineKey(model string, pi, d int) string { return fmt.Sprintf("%s/p%d/s%d", model, pi, d) }

// CapacityOf reads a plan's prediction (empty without one) and its PPipe pipelines.
func CapacityOf(p *formats.Plan) Capacity {
	c := Capacity{SustainedRPS: map[string]float64{}, RateRPS: map[string]float64{}, P50Ms: map[string]float64{},
		Pipelines: map[string]PipelineCap{}}
	if p != nil && ppipesec.PlanOf(p) != nil {
		for _, m := range ppipesec.PlanOf(p).Models {
			total := 0.0
			for _, pl := range m.Pipelines {
				total += finitePos(pl.ThroughputRPS)
			}
			rate := m.TargetRPS
			if rate <= 0 {
				rate = m.ThroughputRPS
			}
			for pi, pl := range m.Pipelines {
				pc := PipelineCap{Model: m.Model, Index: pi, ThroughputRPS: finitePos(pl.ThroughputRPS), PlanRPS: finitePos(rate)}
				if total > 0 {
					pc.Share = pc.ThroughputRPS / total
				}
				for d := range pl.Partitions {
					c.Pipelines[PipelineKey(m.Model, pi, d)] = pc
				}
			}
		}
	}
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
	return Scale{Min: minR, Max: count, Metric: RequestRateMetric, Selector: map[string]string{"model": app},
		Query:     fmt.Sprintf(`sum(rate(plan_requests_total{model=%q}[1m]))`, app),
		Threshold: per, PerPod: true, Basis: basis}, true
}

// unitScale scales a DNN worker that serves the pools of keys (one pool, or the pools one
// Triton server shares under PPipe's stage rounding) over count replicas: a PPipe pool on its
// pipeline's rate (pipelineScale), anything else — and a pool whose pipeline's capacity the
// plan does not give, which the Basis then says — on its application's (rpsScale).
func (c Capacity) unitScale(keys []string, count int, fallback float64) (Scale, bool) {
	sc, ok, why := c.pipelineScale(keys, count)
	if ok {
		return sc, true
	}
	app := ""
	if len(keys) > 0 {
		app = appOf(keys[0])
	}
	sc, ok = c.rpsScale(app, count, fallback)
	if ok && why != "" {
		sc.Basis += "; on the model's rate, not its pipeline's: " + why
	}
	return sc, ok
}

// pipelineScale scales the pools of keys, PPipe pools of one model, on the requests the
// dispatcher sends their pipelines (serve's plan_pipeline_requests_total): every request a
// pipeline takes passes each of its pools once, so one of count replicas carries the
// pipeline's capacity within the SLO over count — the model's predicted sustained_rps times
// the pipeline's share of the plan's throughput, else the pipeline's throughput_rps (several
// pipelines on one server: their sum). The range starts at the replicas the pipelines' share
// of the model's rate needs. ok is false with why empty where keys name no PPipe pool, with
// why saying what is missing where a pipeline's capacity cannot be derived.
func (c Capacity) pipelineScale(keys []string, count int) (sc Scale, ok bool, why string) {
	count = max(count, 1)
	if !slices.ContainsFunc(keys, func(k string) bool { _, ok := c.Pipelines[k]; return ok }) {
		return Scale{}, false, ""
	}
	var pcs []PipelineCap
	for _, k := range keys {
		pc, isPipe := c.Pipelines[k]
		switch {
		case !isPipe:
			return Scale{}, false, fmt.Sprintf("the worker also serves %q, no pool of a PPipe pipeline", k)
		case len(pcs) > 0 && pc.Model != pcs[0].Model:
			return Scale{}, false, fmt.Sprintf("the worker serves pipelines of %s and of %s", pcs[0].Model, pc.Model)
		}
		if !slices.ContainsFunc(pcs, func(x PipelineCap) bool { return x.Index == pc.Index }) {
			pcs = append(pcs, pc)
		}
	}
	slices.SortFunc(pcs, func(a, b PipelineCap) int { return a.Index - b.Index })
	model := pcs[0].Model
	sustained, predicted := c.SustainedRPS[model]
	capRPS, rate, share := 0.0, 0.0, 0.0
	var idx []string
	for _, pc := range pcs {
		if pc.ThroughputRPS <= 0 || pc.Share <= 0 {
			return Scale{}, false, fmt.Sprintf("the plan gives pipeline %d of %s no throughput_rps, so its capacity is unknown", pc.Index, model)
		}
		if predicted {
			capRPS += sustained * pc.Share
		} else {
			capRPS += pc.ThroughputRPS
		}
		planRate := pc.PlanRPS
		if r, ok := c.RateRPS[model]; ok && r > 0 {
			planRate = r
		}
		rate += planRate * pc.Share
		share += pc.Share
		idx = append(idx, strconv.Itoa(pc.Index))
	}
	per := capRPS / float64(count)
	minR := count
	if rate > 0 {
		minR = min(max(int(math.Ceil(rate/per-absTol)), 1), count)
	}
	which, sel := "pipeline "+idx[0], fmt.Sprintf("pipeline=%q", idx[0])
	if len(idx) > 1 {
		which, sel = "pipelines "+strings.Join(idx, ", "), fmt.Sprintf("pipeline=~%q", strings.Join(idx, "|"))
	}
	basis := fmt.Sprintf("the plan's throughput: %s of %s carries %s rps within its SLO on %d replica(s)", which, model, fmtNum(capRPS), count)
	if predicted {
		basis = fmt.Sprintf("the plan's prediction: %s sustains %s rps within its SLO, %s of it on %s (its share of the plan's throughput): %s rps on %d replica(s)",
			model, fmtNum(sustained), fmtPct(share), which, fmtNum(capRPS), count)
	}
	basis += ", scaled on the rate the dispatcher sends " + which
	return Scale{Min: minR, Max: count, Metric: PipelineRateMetric,
		Selector:  map[string]string{"model": model, "pipeline": strings.Join(idx, "_")},
		Query:     fmt.Sprintf(`sum(rate(plan_pipeline_requests_total{model=%q,%s}[1m]))`, model, sel),
		Threshold: per, PerPod: true, Basis: basis}, true, ""
}

// finitePos is x where it is a finite number > 0, else 0.
func finitePos(x float64) float64 {
	if x > 0 && !math.IsInf(x, 0) {
		return x
	}
	return 0
}

// fmtPct writes a fraction as a percentage with at most 2 decimals.
func fmtPct(x float64) string { return fmtNum(math.Floor(x*1e4)/100) + "%" }

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
	return Scale{Min: minR, Max: replicas, Metric: RequestRateMetric, Selector: map[string]string{"model": strings.Join(apps, ",")},
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

// KServe annotations that select KEDA: KEDA scales only a Standard (raw) deployment, and
// the autoscaler class names it (dropin §5).
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
	if sc.Metric == RequestRateMetric || sc.Metric == PipelineRateMetric {
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
