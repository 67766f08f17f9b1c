package serve

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/serve/kserve"
)

// The DNN series are Triton Inference Server's own families (ecosystem drop-in §2), labelled
// model and version (a plan serves version ModelVersion of every model), so dashboards and
// alerts written for Triton's :8002/metrics read a `plan serve` DNN plan unchanged:
//
//   - per served model (an application, the model a client names in /v2/models/{model}/infer:
//     Triton's top-level or ensemble model): nv_inference_request_success,
//     nv_inference_request_failure{reason} (REJECTED: dropped by the policy; CANCELED: the
//     client left; BACKEND: a worker failed), nv_inference_request_duration_us (from the door
//     to the answer) and nv_inference_queue_duration_us (from the door to the first batch that
//     took it), cumulative microseconds; nv_inference_pending_request_count (requests not in
//     a batch yet);
//   - per executed model (a stage's model, Triton's composing model): nv_inference_count
//     (requests executed), nv_inference_exec_count (batches executed; count/exec_count is the
//     mean batch) and nv_inference_compute_infer_duration_us (each request's batch's time).
//
// They are registered on the first DNN request answered, so an LLM plan shows none. GPU
// gauges (nv_gpu_*) are left out: plan measures no GPU, and absent is what Triton shows
// without one.
type tritonMetrics struct {
	success, failure, reqDur, queueDur *prometheus.CounterVec
	count, exec, compute               *prometheus.CounterVec
	pending                            *prometheus.GaugeVec
}

// TritonMetricNames lists the nv_inference_* families a DNN plan's /metrics exposes.
var TritonMetricNames = []string{
	"nv_inference_request_success", "nv_inference_request_failure", "nv_inference_count",
	"nv_inference_exec_count", "nv_inference_request_duration_us", "nv_inference_queue_duration_us",
	"nv_inference_compute_infer_duration_us", "nv_inference_pending_request_count",
}

// tritonFailure maps plan's answer outcomes to Triton's failure reasons.
var tritonFailure = map[string]string{"dropped": "REJECTED", outcomeCancelled: "CANCELED", "error": "BACKEND"}

func newTritonMetrics() *tritonMetrics {
	c := func(name, help string, extra ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append([]string{"model", "version"}, extra...))
	}
	return &tritonMetrics{
		success:  c("nv_inference_request_success", "Number of successful inference requests, all batch sizes."),
		failure:  c("nv_inference_request_failure", "Number of failed inference requests, all batch sizes.", "reason"),
		reqDur:   c("nv_inference_request_duration_us", "Cumulative inference request duration in microseconds (from the door to the answer)."),
		queueDur: c("nv_inference_queue_duration_us", "Cumulative inference queuing duration in microseconds."),
		count:    c("nv_inference_count", "Number of inferences performed (requests executed)."),
		exec:     c("nv_inference_exec_count", "Number of model executions performed (batches)."),
		compute:  c("nv_inference_compute_infer_duration_us", "Cumulative compute inference duration in microseconds (each request its batch's time)."),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "nv_inference_pending_request_count",
			Help: "Instantaneous number of pending requests awaiting execution per-model."}, []string{"model", "version"}),
	}
}

// tritonState holds the Triton series, registered on first use.
type tritonState struct {
	once sync.Once
	t    *tritonMetrics
	// answers and execs cache each model's unlabelled series of the per-request families
	// (*[3]prometheus.Counter), made on the model's first answer (served models) or batch
	// (executed models): every request updates six, and a vector's lookup hashes the label
	// values.
	answers, execs sync.Map
}

// tritonSeries returns model's series of the three families fs (cache: tri.answers or
// tri.execs), made on first use.
func (m *metrics) tritonSeries(cache *sync.Map, model string, fs func(*tritonMetrics) [3]*prometheus.CounterVec) *[3]prometheus.Counter {
	if s, ok := cache.Load(model); ok {
		return s.(*[3]prometheus.Counter)
	}
	var s [3]prometheus.Counter
	for i, f := range fs(m.triton()) {
		s[i] = f.WithLabelValues(model, kserve.ModelVersion)
	}
	got, _ := cache.LoadOrStore(model, &s)
	return got.(*[3]prometheus.Counter)
}

func (m *metrics) triton() *tritonMetrics {
	m.tri.once.Do(func() {
		t := newTritonMetrics()
		m.reg.MustRegister(t.success, t.failure, t.reqDur, t.queueDur, t.count, t.exec, t.compute, t.pending)
		m.tri.t = t
	})
	return m.tri.t
}

func answerFamilies(t *tritonMetrics) [3]*prometheus.CounterVec {
	return [3]*prometheus.CounterVec{t.success, t.reqDur, t.queueDur}
}

func execFamilies(t *tritonMetrics) [3]*prometheus.CounterVec {
	return [3]*prometheus.CounterVec{t.exec, t.count, t.compute}
}

// tritonAnswered records a DNN request's answer: outcome as plan_responses_total's, latUs its
// end-to-end latency, queueUs its wait before the first batch (< 0: never batched).
func (m *metrics) tritonAnswered(model, outcome string, latUs, queueUs int64) {
	if reason, failed := tritonFailure[outcome]; failed {
		m.triton().failure.WithLabelValues(model, kserve.ModelVersion, reason).Inc()
		return
	}
	s := m.tritonSeries(&m.tri.answers, model, answerFamilies)
	s[0].Inc()
	s[1].Add(float64(max(latUs, 0)))
	if queueUs >= 0 {
		s[2].Add(float64(queueUs))
	}
}

// tritonExec records one batch of size requests of model that ran durUs.
func (m *metrics) tritonExec(model string, size int, durUs int64) {
	s := m.tritonSeries(&m.tri.execs, model, execFamilies)
	s[0].Inc()
	s[1].Add(float64(size))
	s[2].Add(float64(size) * float64(max(durUs, 0)))
}

// tritonPending sets the pending-request gauges from the dispatcher's queue depths.
func (m *metrics) tritonPending(dep *dataplane.Deployment, queued []int64) {
	t := m.triton()
	for i, a := range dep.Apps {
		if i < len(queued) {
			t.pending.WithLabelValues(a.Name, kserve.ModelVersion).Set(float64(queued[i]))
		}
	}
}

// stageModel names the model a stage runs (its name when it names none).
func stageModel(dep *dataplane.Deployment, s dataplane.StageID) string {
	if int(s) < 0 || int(s) >= len(dep.Stages) {
		return "?"
	}
	if m := dep.Stages[s].Model; m != "" {
		return m
	}
	return dep.Stages[s].Name
}
