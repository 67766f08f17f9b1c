package serve

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/plan-dev/plan/dataplane"
)

// latencyBuckets are the upper bounds (seconds) of the latency histograms: fine below the
// typical 10–200 ms SLOs, coarse above.
var latencyBuckets = []float64{0.001, 0.002, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2, 5}

// latenessBuckets bound how late the driver's timers fire (seconds): 50 µs to 100 ms.
var latenessBuckets = []float64{0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1}

// metrics are the Prometheus series. The driver writes (one short critical section per
// event); /metrics reads. The text exposition format is written by hand: it is a few lines
// of code and keeps the hot path free of a registry's interface calls.
type metrics struct {
	mu       sync.Mutex
	apps     map[string]*appMetrics
	drops    map[[3]string]int64 // model, stage, reason
	workers  map[string]*workerMetrics
	rejected map[[2]string]int64 // code, why
	digest   string
	planName string
	reloads  int64
	ready    bool
	paused   int
	late     []int64 // timer lateness histogram (non-cumulative, + overflow)
	lateSum  float64
	lateN    int64
}

type appMetrics struct {
	requests int64
	outcomes map[string]int64
	inflight int64
	queued   int64
	latCount []int64 // per bucket (non-cumulative), + overflow
	latSum   float64
	latN     int64
}

type workerMetrics struct {
	stage  string
	busyUs int64
	queued int
	busy   bool
}

func newMetrics() *metrics {
	return &metrics{apps: map[string]*appMetrics{}, drops: map[[3]string]int64{}, workers: map[string]*workerMetrics{},
		rejected: map[[2]string]int64{}, ready: true, late: make([]int64, len(latenessBuckets)+1)}
}

// lateness records how late a timer fired (µs).
func (m *metrics) lateness(us dataplane.Time) {
	s := float64(us) / 1e6
	m.mu.Lock()
	m.late[sort.SearchFloat64s(latenessBuckets, s)]++
	m.lateSum += s
	m.lateN++
	m.mu.Unlock()
}

func (m *metrics) app(name string) *appMetrics {
	a := m.apps[name]
	if a == nil {
		a = &appMetrics{outcomes: map[string]int64{}, latCount: make([]int64, len(latencyBuckets)+1)}
		m.apps[name] = a
	}
	return a
}

func (m *metrics) arrived(model string) {
	m.mu.Lock()
	a := m.app(model)
	a.requests++
	a.inflight++
	m.mu.Unlock()
}

func (m *metrics) finished(model, outcome string, latUs int64) {
	m.mu.Lock()
	a := m.app(model)
	a.outcomes[outcome]++
	a.inflight--
	if outcome == "completed" || outcome == "late" {
		s := float64(latUs) / 1e6
		i := sort.SearchFloat64s(latencyBuckets, s)
		a.latCount[i]++
		a.latSum += s
		a.latN++
	}
	m.mu.Unlock()
}

func (m *metrics) drop(model, stage, reason string) {
	m.mu.Lock()
	m.drops[[3]string{model, stage, reason}]++
	m.mu.Unlock()
}

func (m *metrics) reject(code int, why string) {
	m.mu.Lock()
	m.rejected[[2]string{strconv.Itoa(code), why}]++
	m.mu.Unlock()
}

func (m *metrics) busy(worker, stage string, d dataplane.Time) {
	m.mu.Lock()
	w := m.workers[worker]
	if w == nil {
		w = &workerMetrics{stage: stage}
		m.workers[worker] = w
	}
	w.busyUs += int64(d)
	m.mu.Unlock()
}

func (m *metrics) workerQueue(worker, stage string, queued int, busy bool) {
	m.mu.Lock()
	w := m.workers[worker]
	if w == nil {
		w = &workerMetrics{}
		m.workers[worker] = w
	}
	w.stage, w.queued, w.busy = stage, queued, busy
	m.mu.Unlock()
}

func (m *metrics) queueDepth(model string, n int64) {
	m.mu.Lock()
	m.app(model).queued = n
	m.mu.Unlock()
}

func (m *metrics) setPlan(g *generation) {
	m.mu.Lock()
	if m.digest != "" && m.digest != g.digest {
		m.reloads++
	}
	m.digest = g.digest
	if g.plan != nil {
		m.planName = g.plan.Metadata.Name
	}
	// Workers of the previous plan disappear from the per-worker gauges.
	for k := range m.workers {
		delete(m.workers, k)
	}
	for _, w := range g.dep.Topo.Workers {
		m.workers[w.Name] = &workerMetrics{stage: g.dep.Stages[w.Stage].Name}
	}
	m.mu.Unlock()
}

func (m *metrics) setReady(ok bool) {
	m.mu.Lock()
	m.ready = ok
	m.mu.Unlock()
}

func (m *metrics) isReady() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ready
}

func (m *metrics) setPaused(n int) {
	m.mu.Lock()
	m.paused = n
	m.mu.Unlock()
}

// latenessQuantile returns the upper bound of the lateness bucket holding quantile q
// (+Inf as 1 s), or 0 before any timer fired.
func (m *metrics) latenessQuantile(q float64) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lateN == 0 {
		return 0
	}
	need := int64(math.Ceil(q * float64(m.lateN)))
	var cum int64
	for i, ub := range latenessBuckets {
		cum += m.late[i]
		if cum >= need {
			return ub
		}
	}
	return 1
}

// MetricNames lists every series family /metrics exposes (tests check them).
var MetricNames = []string{
	"plan_requests_total", "plan_responses_total", "plan_drops_total", "plan_rejected_total",
	"plan_request_latency_seconds", "plan_requests_in_flight", "plan_queue_depth",
	"plan_worker_queue_depth", "plan_worker_busy", "plan_worker_busy_seconds_total",
	"plan_paused_requests", "plan_ready", "plan_reloads_total", "plan_active_plan_info",
	"plan_timer_lateness_seconds",
}

// write renders the text exposition format (version 0.0.4), families and series sorted.
func (m *metrics) write(w io.Writer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	fam := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	models := make([]string, 0, len(m.apps))
	for k := range m.apps {
		models = append(models, k)
	}
	sort.Strings(models)

	fam("plan_requests_total", "counter", "Inference requests accepted by the driver.")
	for _, k := range models {
		fmt.Fprintf(&b, "plan_requests_total{model=%s} %d\n", q(k), m.apps[k].requests)
	}
	fam("plan_responses_total", "counter", "Answered requests by outcome (completed, late, dropped, error).")
	for _, k := range models {
		a := m.apps[k]
		outs := sortedKeys(a.outcomes)
		for _, o := range outs {
			fmt.Fprintf(&b, "plan_responses_total{model=%s,outcome=%s} %d\n", q(k), q(o), a.outcomes[o])
		}
	}
	fam("plan_drops_total", "counter", "Dropped requests by stage and reason.")
	dk := make([][3]string, 0, len(m.drops))
	for k := range m.drops {
		dk = append(dk, k)
	}
	sort.Slice(dk, func(i, j int) bool { return strings.Join(dk[i][:], "\x00") < strings.Join(dk[j][:], "\x00") })
	for _, k := range dk {
		fmt.Fprintf(&b, "plan_drops_total{model=%s,stage=%s,reason=%s} %d\n", q(k[0]), q(k[1]), q(k[2]), m.drops[k])
	}
	fam("plan_rejected_total", "counter", "Requests rejected before intake, by HTTP status and cause.")
	rk := make([][2]string, 0, len(m.rejected))
	for k := range m.rejected {
		rk = append(rk, k)
	}
	sort.Slice(rk, func(i, j int) bool { return rk[i][0]+rk[i][1] < rk[j][0]+rk[j][1] })
	for _, k := range rk {
		fmt.Fprintf(&b, "plan_rejected_total{code=%s,cause=%s} %d\n", q(k[0]), q(k[1]), m.rejected[k])
	}
	fam("plan_request_latency_seconds", "histogram", "End-to-end latency of answered (completed or late) requests.")
	for _, k := range models {
		a := m.apps[k]
		var cum int64
		for i, ub := range latencyBuckets {
			cum += a.latCount[i]
			fmt.Fprintf(&b, "plan_request_latency_seconds_bucket{model=%s,le=%s} %d\n", q(k), q(strconv.FormatFloat(ub, 'g', -1, 64)), cum)
		}
		cum += a.latCount[len(latencyBuckets)]
		fmt.Fprintf(&b, "plan_request_latency_seconds_bucket{model=%s,le=\"+Inf\"} %d\n", q(k), cum)
		fmt.Fprintf(&b, "plan_request_latency_seconds_sum{model=%s} %g\n", q(k), a.latSum)
		fmt.Fprintf(&b, "plan_request_latency_seconds_count{model=%s} %d\n", q(k), a.latN)
	}
	fam("plan_requests_in_flight", "gauge", "Accepted requests not answered yet.")
	for _, k := range models {
		fmt.Fprintf(&b, "plan_requests_in_flight{model=%s} %d\n", q(k), m.apps[k].inflight)
	}
	fam("plan_queue_depth", "gauge", "Requests in the dispatcher's queue (not yet in a batch).")
	for _, k := range models {
		fmt.Fprintf(&b, "plan_queue_depth{model=%s} %d\n", q(k), m.apps[k].queued)
	}
	workers := make([]string, 0, len(m.workers))
	for k := range m.workers {
		workers = append(workers, k)
	}
	sort.Strings(workers)
	fam("plan_worker_queue_depth", "gauge", "Batches queued on a worker (not running).")
	for _, k := range workers {
		fmt.Fprintf(&b, "plan_worker_queue_depth{worker=%s,stage=%s} %d\n", q(k), q(m.workers[k].stage), m.workers[k].queued)
	}
	fam("plan_worker_busy", "gauge", "1 while a worker runs a batch.")
	for _, k := range workers {
		v := 0
		if m.workers[k].busy {
			v = 1
		}
		fmt.Fprintf(&b, "plan_worker_busy{worker=%s,stage=%s} %d\n", q(k), q(m.workers[k].stage), v)
	}
	fam("plan_worker_busy_seconds_total", "counter", "Time a worker spent executing batches (since the active plan started).")
	for _, k := range workers {
		fmt.Fprintf(&b, "plan_worker_busy_seconds_total{worker=%s,stage=%s} %g\n", q(k), q(m.workers[k].stage), float64(m.workers[k].busyUs)/1e6)
	}
	fam("plan_paused_requests", "gauge", "Requests held while a plan migration pauses intake.")
	fmt.Fprintf(&b, "plan_paused_requests %d\n", m.paused)
	fam("plan_ready", "gauge", "1 when the server takes requests (0 while migrating or draining).")
	r := 0
	if m.ready {
		r = 1
	}
	fmt.Fprintf(&b, "plan_ready %d\n", r)
	fam("plan_reloads_total", "counter", "Plan migrations completed.")
	fmt.Fprintf(&b, "plan_reloads_total %d\n", m.reloads)
	fam("plan_active_plan_info", "gauge", "The active plan: its digest and name.")
	fmt.Fprintf(&b, "plan_active_plan_info{digest=%s,name=%s} 1\n", q(m.digest), q(m.planName))
	fam("plan_timer_lateness_seconds", "histogram", "How late the driver's timers (emulated hops, transfers, policy timers) fired: the executor's own delay.")
	var cum int64
	for i, ub := range latenessBuckets {
		cum += m.late[i]
		fmt.Fprintf(&b, "plan_timer_lateness_seconds_bucket{le=%s} %d\n", q(strconv.FormatFloat(ub, 'g', -1, 64)), cum)
	}
	cum += m.late[len(latenessBuckets)]
	fmt.Fprintf(&b, "plan_timer_lateness_seconds_bucket{le=\"+Inf\"} %d\n", cum)
	fmt.Fprintf(&b, "plan_timer_lateness_seconds_sum %g\n", m.lateSum)
	fmt.Fprintf(&b, "plan_timer_lateness_seconds_count %d\n", m.lateN)
	_, err := io.WriteString(w, b.String())
	return err
}

// q quotes a label value as the exposition format wants (backslash, quote, newline escaped).
func q(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
