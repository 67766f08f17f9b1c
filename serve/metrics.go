package serve

import (
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"

	"github.com/plan-dev/plan/dataplane"
)

// latencyBuckets are the upper bounds (seconds) of the latency histograms: fine below the
// typical 10–200 ms SLOs, coarse above, up to a year (formats.MaxDuration, the longest SLO a
// plan may set) so that no SLO's completions (an LLM batch class's 10 minutes) land in +Inf.
var latencyBuckets = []float64{0.001, 0.002, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2, 5,
	10, 20, 30, 60, 120, 300, 600, 1200, 3600, 7200, 21600, 86400, 604800, 31536000}

// latenessBuckets bound how late the driver's timers fire (seconds): 50 µs to 100 ms.
var latenessBuckets = []float64{0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1}

// intakeBuckets bound the intake queue age (seconds): from the door (the request read off
// the socket) to the engine, 10 µs to 1 s.
var intakeBuckets = []float64{0.00001, 0.00002, 0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1}

// metrics are the Prometheus series, kept with the Prometheus client library in a registry of
// the server's own (two servers in one process do not collide). /metrics serves them with the
// library's Go runtime and process collectors (goroutines, heap, RSS, file descriptors).
// Per-model series are resolved once per model, so the hot path does no label lookups.
type metrics struct {
	reg *prometheus.Registry // plan_* families
	all prometheus.Gatherers // reg + runtime and process collectors

	requests, responses, drops, rejected *prometheus.CounterVec
	pipelineReqs                         *prometheus.CounterVec
	latency                              *prometheus.HistogramVec
	inflight, queued                     *prometheus.GaugeVec
	workerQueued, workerBusy             *prometheus.GaugeVec
	workerBusySecs                       *prometheus.CounterVec
	paused, readyG                       prometheus.Gauge
	reloads                              prometheus.Counter
	planInfo                             *prometheus.GaugeVec
	lateness                             prometheus.Histogram
	intakeAge                            prometheus.Histogram
	deliveryMargin                       prometheus.Gauge

	models    sync.Map // model name → *modelSeries
	dropsByK  sync.Map // dropKey → prometheus.Counter
	rejectByK sync.Map // rejectKey → prometheus.Counter

	mu       sync.Mutex // setPlan, worker series
	digest   string
	workers  map[string]*workerSeries
	ready    atomic.Bool
	late     [16]atomic.Int64 // lateness per bucket (non-cumulative, + overflow) for quantiles
	lateN    atomic.Int64
	answered atomic.Int64 // answers sent (every accepted request exactly once)

	llm     *llmMetrics // LLM series (metrics_llm.go), registered on first use
	llmOnce sync.Once
	tri     tritonState // Triton series (metrics_triton.go), registered on first use
	// legacy: the LLM series include the names vLLM removed (Options.MetricsLegacy).
	legacy bool
}

type modelSeries struct {
	name                              string
	requests                          prometheus.Counter
	completed, late, dropped, errored prometheus.Counter
	latency                           prometheus.Observer
	inflight, queued                  prometheus.Gauge
}

type workerSeries struct {
	busySecs     prometheus.Counter
	queued, busy prometheus.Gauge
}

type dropKey struct{ model, stage, reason string }

type rejectKey struct {
	code  int
	cause string
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), workers: map[string]*workerSeries{}}
	m.ready.Store(true)
	f := promauto(m.reg)
	m.requests = f.counterVec("plan_requests_total", "Inference requests accepted by the driver.", "model")
	m.pipelineReqs = f.counterVec("plan_pipeline_requests_total", "Requests the dispatcher sent into each pipeline of a PPipe plan (at their first dispatch): the rate a pipeline's pools scale on.", "model", "pipeline")
	m.responses = f.counterVec("plan_responses_total", "Answered requests by outcome (completed, late, dropped, error, cancelled: the client left before its answer).", "model", "outcome")
	m.drops = f.counterVec("plan_drops_total", "Dropped requests by stage and reason (stage intake: refused at the door, before the body was decoded).", "model", "stage", "reason")
	m.rejected = f.counterVec("plan_rejected_total", "Requests refused before intake, by HTTP status and cause.", "code", "cause")
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "plan_request_latency_seconds",
		Help: "End-to-end latency of answered (completed or late) requests, from the door.", Buckets: latencyBuckets}, []string{"model"})
	m.inflight = f.gaugeVec("plan_requests_in_flight", "Accepted requests not answered yet.", "model")
	m.queued = f.gaugeVec("plan_queue_depth", "Requests in the dispatcher's queue (not yet in a batch).", "model")
	m.workerQueued = f.gaugeVec("plan_worker_queue_depth", "Batches queued on a worker (not running).", "worker", "stage")
	m.workerBusy = f.gaugeVec("plan_worker_busy", "1 while a worker runs a batch.", "worker", "stage")
	m.workerBusySecs = f.counterVec("plan_worker_busy_seconds_total", "Time a worker spent executing batches (since the active plan started).", "worker", "stage")
	m.paused = prometheus.NewGauge(prometheus.GaugeOpts{Name: "plan_paused_requests", Help: "Requests held while a plan migration pauses intake."})
	m.readyG = prometheus.NewGauge(prometheus.GaugeOpts{Name: "plan_ready", Help: "1 when the server takes requests (0 while migrating or draining)."})
	m.reloads = prometheus.NewCounter(prometheus.CounterOpts{Name: "plan_reloads_total", Help: "Plan migrations completed."})
	m.planInfo = f.gaugeVec("plan_active_plan_info", "The active plan: its digest and name.", "digest", "name")
	m.lateness = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "plan_timer_lateness_seconds",
		Help: "How late the driver's timers (emulated hops, transfers, policy timers) fired: the executor's own delay.", Buckets: latenessBuckets})
	m.intakeAge = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "plan_intake_age_seconds",
		Help: "Age of a request when the engine received it: from the door (read off the socket) through body decoding and the intake queue.", Buckets: intakeBuckets})
	m.deliveryMargin = prometheus.NewGauge(prometheus.GaugeOpts{Name: "plan_delivery_margin_seconds",
		Help: "The estimated p99 of an answer's delivery after the engine finished it; the engine plans each request against its deadline less this (capped at a tenth of the SLO)."})
	m.reg.MustRegister(m.latency, m.paused, m.readyG, m.reloads, m.lateness, m.intakeAge, m.deliveryMargin)
	m.readyG.Set(1)
	rt := prometheus.NewRegistry()
	rt.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.all = prometheus.Gatherers{m.reg, rt}
	return m
}

type registerer struct{ r *prometheus.Registry }

func promauto(r *prometheus.Registry) registerer { return registerer{r} }

func (r registerer) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	r.r.MustRegister(v)
	return v
}

func (r registerer) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	r.r.MustRegister(v)
	return v
}

// model returns the series of one model, creating them on first use.
func (m *metrics) model(name string) *modelSeries {
	if s, ok := m.models.Load(name); ok {
		return s.(*modelSeries)
	}
	s := &modelSeries{
		name:      name,
		requests:  m.requests.WithLabelValues(name),
		completed: m.responses.WithLabelValues(name, "completed"),
		late:      m.responses.WithLabelValues(name, "late"),
		dropped:   m.responses.WithLabelValues(name, "dropped"),
		errored:   m.responses.WithLabelValues(name, "error"),
		latency:   m.latency.WithLabelValues(name),
		inflight:  m.inflight.WithLabelValues(name),
		queued:    m.queued.WithLabelValues(name),
	}
	v, _ := m.models.LoadOrStore(name, s)
	return v.(*modelSeries)
}

// pipelines resolves the per-pipeline request counters of a deployment, [app][pipeline] (nil
// for an app without pooled pipelines: only PPipe-style plans split a model's traffic across
// pipelines, PPipe §5.4's dispatcher choosing one per batch). The series of a pipeline a later
// plan no longer has stay (a counter's rate falls to 0), as a model's do.
func (m *metrics) pipelines(dep *dataplane.Deployment) [][]prometheus.Counter {
	out := make([][]prometheus.Counter, len(dep.Apps))
	for ai, a := range dep.Apps {
		for pi := range a.Pipelines {
			out[ai] = append(out[ai], m.pipelineReqs.WithLabelValues(a.Name, strconv.Itoa(pi)))
		}
	}
	return out
}

// countPipeline adds n requests to the pipeline whose stage st is (a PPipe stage; other
// systems' stages have no pipeline and count nothing).
func (g *generation) countPipeline(app dataplane.AppID, st dataplane.StageID, n int) {
	if int(app) >= len(g.pipeReqs) || st < 0 || int(st) >= len(g.dep.Stages) {
		return
	}
	if pi := g.dep.Stages[st].Pipeline; pi >= 0 && pi < len(g.pipeReqs[app]) {
		g.pipeReqs[app][pi].Add(float64(n))
	}
}

// lateness records how late a timer fired (µs).
func (m *metrics) latenessUs(us dataplane.Time) {
	s := float64(us) / 1e6
	m.lateness.Observe(s)
	m.late[sort.SearchFloat64s(latenessBuckets, s)].Add(1)
	m.lateN.Add(1)
}

// intake records the age of a request when the engine took it (µs).
func (m *metrics) intake(us dataplane.Time) { m.intakeAge.Observe(float64(us) / 1e6) }

func (m *metrics) arrived(ms *modelSeries) {
	ms.requests.Inc()
	ms.inflight.Inc()
}

func (m *metrics) finished(ms *modelSeries, outcome string, latUs int64) {
	m.answered.Add(1)
	ms.inflight.Dec()
	switch outcome {
	case "completed":
		ms.completed.Inc()
	case "late":
		ms.late.Inc()
	case "dropped":
		ms.dropped.Inc()
		return
	case "error":
		ms.errored.Inc()
		return
	case outcomeCancelled:
		// Created on first use (cancellations are rare), so a server that never saw one
		// exports no such series.
		m.responses.WithLabelValues(ms.name, outcomeCancelled).Inc()
		return
	default:
		m.responses.WithLabelValues("?", outcome).Inc()
		return
	}
	ms.latency.Observe(float64(latUs) / 1e6)
}

func (m *metrics) drop(model, stage, reason string) {
	k := dropKey{model, stage, reason}
	if c, ok := m.dropsByK.Load(k); ok {
		c.(prometheus.Counter).Inc()
		return
	}
	c, _ := m.dropsByK.LoadOrStore(k, m.drops.WithLabelValues(model, stage, reason))
	c.(prometheus.Counter).Inc()
}

func (m *metrics) reject(code int, why string) {
	k := rejectKey{code, why}
	if c, ok := m.rejectByK.Load(k); ok {
		c.(prometheus.Counter).Inc()
		return
	}
	c, _ := m.rejectByK.LoadOrStore(k, m.rejected.WithLabelValues(strconv.Itoa(code), why))
	c.(prometheus.Counter).Inc()
}

func (m *metrics) worker(name, stage string) *workerSeries {
	w := m.workers[name]
	if w == nil {
		w = &workerSeries{busySecs: m.workerBusySecs.WithLabelValues(name, stage),
			queued: m.workerQueued.WithLabelValues(name, stage), busy: m.workerBusy.WithLabelValues(name, stage)}
		m.workers[name] = w
	}
	return w
}

func (m *metrics) busy(worker, stage string, d dataplane.Time) {
	m.mu.Lock()
	w := m.worker(worker, stage)
	m.mu.Unlock()
	w.busySecs.Add(float64(d) / 1e6)
}

func (m *metrics) workerQueue(worker, stage string, queued int, busy bool) {
	m.mu.Lock()
	w := m.worker(worker, stage)
	m.mu.Unlock()
	w.queued.Set(float64(queued))
	b := 0.0
	if busy {
		b = 1
	}
	w.busy.Set(b)
}

func (m *metrics) queueDepth(model string, n int64) { m.model(model).queued.Set(float64(n)) }

func (m *metrics) setPlan(g *generation) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.digest != "" && m.digest != g.digest {
		m.reloads.Inc()
	}
	m.digest = g.digest
	name := ""
	if g.plan != nil {
		name = g.plan.Metadata.Name
	}
	m.planInfo.Reset()
	m.planInfo.WithLabelValues(g.digest, name).Set(1)
	// Workers of the previous plan disappear from the per-worker series.
	m.workerBusySecs.Reset()
	m.workerQueued.Reset()
	m.workerBusy.Reset()
	clear(m.workers)
	for _, w := range g.dep.Topo.Workers {
		m.worker(w.Name, g.dep.Stages[w.Stage].Name)
	}
}

func (m *metrics) setReady(ok bool) {
	m.ready.Store(ok)
	v := 0.0
	if ok {
		v = 1
	}
	m.readyG.Set(v)
}

func (m *metrics) isReady() bool { return m.ready.Load() }

func (m *metrics) setPaused(n int) { m.paused.Set(float64(n)) }

// latenessQuantile returns the upper bound of the lateness bucket holding quantile q
// (+Inf as 1 s), or 0 before any timer fired.
func (m *metrics) latenessQuantile(q float64) float64 {
	n := m.lateN.Load()
	if n == 0 {
		return 0
	}
	need := int64(math.Ceil(q * float64(n)))
	var cum int64
	for i, ub := range latenessBuckets {
		cum += m.late[i].Load()
		if cum >= need {
			return ub
		}
	}
	return 1
}

// MetricNames lists every plan_* series family /metrics exposes (tests check them); the Go
// runtime (go_*) and process (process_*) families come with them.
var MetricNames = []string{
	"plan_requests_total", "plan_pipeline_requests_total", "plan_responses_total", "plan_drops_total", "plan_rejected_total",
	"plan_request_latency_seconds", "plan_requests_in_flight", "plan_queue_depth",
	"plan_worker_queue_depth", "plan_worker_busy", "plan_worker_busy_seconds_total",
	"plan_paused_requests", "plan_ready", "plan_reloads_total", "plan_active_plan_info",
	"plan_timer_lateness_seconds", "plan_intake_age_seconds", "plan_delivery_margin_seconds",
}

// handler serves every family (plan_*, go_*, process_*) with content negotiation.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.all, promhttp.HandlerOpts{})
}

// write renders the plan_* families in the text exposition format (the golden test).
func (m *metrics) write(w io.Writer) error {
	mfs, err := m.reg.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}
