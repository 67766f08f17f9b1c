package sim

import (
	"maps"
	"slices"
	"sort"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/internal/base/quantile"
)

type dropKey struct {
	stage  dataplane.StageID
	reason dataplane.DropReason
}

type appCol struct {
	requests, completed, late, dropped, cancelled int64
	wasted                                        float64
	judged, correct                               int64 // Deployment.Judge's verdicts on answered requests
	lat                                           []dataplane.Time
	drops                                         map[dropKey]int64
	// llm holds an LLM class's token timings (nil for other applications).
	llm *llmCol
}

type collector struct {
	dep  *dataplane.Deployment
	apps []appCol
	// wholeBusy and wholeUntil are, per GPU, the union of the busy intervals of its whole-GPU
	// (VGPU = 1) workers and where that union ends so far: several such workers on one GPU
	// (DyOrc's one worker per stage, whose service batch across workflows runs as one engine
	// batch per stage at once) keep one GPU busy once, not once per worker.
	wholeBusy, wholeUntil []dataplane.Time
	// wholeGPU is, per worker, its GPU if it is a whole-GPU worker of one (the index into
	// wholeBusy), else -1: run reads it instead of the worker's 88-byte Topology record, a
	// line of its own per worker, out of the first-level cache at 1,600 workers (140 KB).
	wholeGPU []int32
	// latencies: record each answered request's latency (Options.NoLatencies).
	latencies bool
	// warmup: requests arriving before it are simulated but not counted (Options.Warmup).
	warmup dataplane.Time
	// llm are the applications' LLM classes (Options.LLM; nil: no LLM application).
	llm []LLMClass
}

// run records that worker w runs from start to end; calls come in nondecreasing start.
func (c *collector) run(w dataplane.WorkerID, start, end dataplane.Time) {
	g := c.wholeGPU[w]
	if g < 0 {
		return
	}
	if u := c.wholeUntil[g]; end > u {
		c.wholeBusy[g] += end - max(start, u)
		c.wholeUntil[g] = end
	}
}

// newCollector makes the collector; expect (0 = unknown) is about how many requests will be
// answered, shared among the applications by their rates.
func newCollector(dep *dataplane.Deployment, expect int, latencies bool, warmup dataplane.Time, llm []LLMClass) *collector {
	c := &collector{dep: dep, apps: make([]appCol, len(dep.Apps)), latencies: latencies, warmup: warmup, llm: llm,
		wholeBusy: make([]dataplane.Time, len(dep.Topo.GPUs)), wholeUntil: make([]dataplane.Time, len(dep.Topo.GPUs)),
		wholeGPU: make([]int32, len(dep.Topo.Workers))}
	for w := range dep.Topo.Workers {
		c.wholeGPU[w] = -1
		if wk := &dep.Topo.Workers[w]; wk.VGPU == 1 && wk.GPU >= 0 && wk.GPU < len(c.wholeBusy) {
			c.wholeGPU[w] = int32(wk.GPU)
		}
	}
	var total float64
	for _, a := range dep.Apps {
		total += max(a.RateRPS, 0)
	}
	for i := range c.apps {
		c.apps[i].drops = map[dropKey]int64{}
		if i < len(llm) {
			c.apps[i].llm = &llmCol{}
		}
		if expect > 0 && total > 0 && latencies {
			c.apps[i].lat = make([]dataplane.Time, 0, int(float64(expect)*max(dep.Apps[i].RateRPS, 0)/total)+16)
		}
	}
	return c
}

func (c *collector) finish(r *dataplane.Request) {
	if r.Arrival < c.warmup {
		return // start-up: the queues and the policy's state are still filling
	}
	a := &c.apps[r.App]
	a.requests++
	if c.dep.Judge != nil && (r.Outcome == dataplane.Completed || r.Outcome == dataplane.Late) {
		a.judged++
		if c.dep.Judge(r) {
			a.correct++
		}
	}
	outcome := r.Outcome
	if a.llm != nil && (outcome == dataplane.Completed || outcome == dataplane.Late) {
		// On time only if every SLO of its class holds (deadline, TTFT, TPOT).
		if !c.llmFinish(&c.llm[r.App], a.llm, r) {
			outcome = dataplane.Late
		}
	}
	switch outcome {
	case dataplane.Completed:
		a.completed++
		if c.latencies {
			a.lat = append(a.lat, r.Done-r.Arrival)
		}
	case dataplane.Late:
		a.late++
		if c.latencies {
			a.lat = append(a.lat, r.Done-r.Arrival)
		}
	case dataplane.Dropped:
		a.wasted += r.WorkGPU
		if r.Reason() == dataplane.DropCancelled {
			a.cancelled++
			return
		}
		a.dropped++
		a.drops[dropKey{r.DropStage, r.Reason()}]++
	}
}

func (c *collector) metrics(e *dataplane.Engine, end, window dataplane.Time) *Metrics {
	m := &Metrics{Events: e.Events(), EndUs: int64(end)}
	secs := float64(window-min(c.warmup, window)) / 1e6 // goodput counts the measured window only
	var all appCol
	all.drops = map[dropKey]int64{}
	// Reports read a few order statistics of each application's latencies (its summary's
	// percentiles and maximum, its SLO percentile) and of all of them: Select puts those in
	// place in O(n) instead of sorting (workload.SummarizeSelected gives the sorted
	// summary's bits). A report at 16× a plan's rate holds millions of latencies, and their
	// sort was a sixth of a simulation's CPU time.
	var ranks []int
	for i := range c.apps {
		a := &c.apps[i]
		ranks = latencyRanks(ranks[:0], len(a.lat), a.requests, c.dep.Apps[i].SLOPercentile)
		quantile.Select(a.lat, ranks)
	}
	for i := range c.apps {
		a := &c.apps[i]
		m.Apps = append(m.Apps, c.summarize(c.dep.Apps[i].Name, a, secs))
		c.atPercentile(&m.Apps[len(m.Apps)-1], a, c.dep.Apps[i].SLOPercentile)
		all.requests += a.requests
		all.completed += a.completed
		all.late += a.late
		all.dropped += a.dropped
		all.cancelled += a.cancelled
		all.wasted += a.wasted
		all.judged += a.judged
		all.correct += a.correct
		for k, v := range a.drops {
			all.drops[k] += v
		}
		if a.llm != nil {
			if all.llm == nil {
				all.llm = &llmCol{}
			}
			all.llm.add(a.llm)
		}
	}
	shared := c.sharedPercentile()
	if len(c.apps) == 1 && c.apps[0].requests == all.requests && c.dep.Apps[0].SLOPercentile == shared {
		all.lat = c.apps[0].lat // the same samples, their ranks already in place
	} else {
		for i := range c.apps {
			all.lat = append(all.lat, c.apps[i].lat...)
		}
		quantile.Select(all.lat, latencyRanks(ranks[:0], len(all.lat), all.requests, shared))
	}
	m.Total = c.summarize("total", &all, secs)
	c.atPercentile(&m.Total, &all, shared)
	// Output tokens per second over the run, to the last finish (as vLLM's benchmark
	// client measures output throughput), not over the arrival window alone.
	if run := float64(max(end, window)-min(c.warmup, window)) / 1e6; run > 0 {
		for i := range m.Apps {
			if l := m.Apps[i].LLM; l != nil {
				l.OutputTokensPerS = round6(float64(l.OutputTokens) / run)
			}
		}
		if l := m.Total.LLM; l != nil {
			l.OutputTokensPerS = round6(float64(l.OutputTokens) / run)
		}
	}
	wall := float64(max(end, window))
	if wall <= 0 {
		wall = 1
	}
	m.Classes = c.util(e, wall, func(g dataplane.GPU) string { return g.Class })
	m.GPUTypes = c.util(e, wall, func(g dataplane.GPU) string { return g.Type })
	return m
}

func (c *collector) util(e *dataplane.Engine, wall float64, key func(dataplane.GPU) string) []Utilization {
	gpus := map[string]int{}
	busy := map[string]float64{}
	for _, g := range c.dep.Topo.GPUs {
		gpus[key(g)] += g.Physical()
	}
	for i, w := range c.dep.Topo.Workers {
		if w.VGPU == 1 {
			continue // counted once per GPU below
		}
		g := c.dep.Topo.GPUs[w.GPU]
		busy[key(g)] += float64(e.WorkerBusy(dataplane.WorkerID(i))) / float64(w.VGPU) * float64(g.Physical())
	}
	for gi, b := range c.wholeBusy {
		// A tensor-parallel instance keeps all its GPUs busy while it runs.
		g := c.dep.Topo.GPUs[gi]
		busy[key(g)] += float64(b) * float64(g.Physical())
	}
	names := slices.Sorted(maps.Keys(gpus))
	out := make([]Utilization, 0, len(names))
	for _, k := range names {
		name := k
		if name == "" {
			name = "-"
		}
		out = append(out, Utilization{Name: name, GPUs: gpus[k], Busy: round6(busy[k] / (float64(gpus[k]) * wall))})
	}
	return out
}

func (c *collector) summarize(name string, a *appCol, secs float64) AppMetrics {
	out := AppMetrics{
		Name: name, Requests: a.requests, Completed: a.completed, Late: a.late, Dropped: a.dropped, Cancelled: a.cancelled,
		WastedGPUMs: round6(a.wasted / 1000),
	}
	out.Attainment = attainmentOf(a.completed, a.requests)
	if secs > 0 {
		out.GoodputRPS = round6(float64(a.completed) / secs)
	}
	for k, v := range a.drops {
		st := "queue"
		if k.stage >= 0 {
			st = c.dep.Stages[k.stage].Name
		}
		out.Drops = append(out.Drops, DropCount{Stage: st, Reason: string(k.reason), Count: v})
	}
	sort.Slice(out.Drops, func(i, j int) bool {
		if out.Drops[i].Stage != out.Drops[j].Stage {
			return out.Drops[i].Stage < out.Drops[j].Stage
		}
		return out.Drops[i].Reason < out.Drops[j].Reason
	})
	out.Latency = workload.SummarizeSelected(a.lat)
	if a.judged > 0 {
		acc := round6(float64(a.correct) / float64(a.judged))
		out.Accuracy = &acc
	}
	if a.llm != nil {
		out.LLM = a.llm.summarize()
	}
	return out
}

// attainmentOf is the attainment a report gives completed requests of requests (1 of none).
func attainmentOf(completed, requests int64) float64 {
	if requests <= 0 {
		return 1
	}
	return round6(float64(completed) / float64(requests))
}

// atPercentile adds the latency at the SLO's percentile p (0 = none) to out (a cascade is
// judged on its p95, CascadeServe §5).
func (c *collector) atPercentile(out *AppMetrics, a *appCol, p float64) {
	if p <= 0 || !c.latencies {
		return
	}
	out.SLOPercentile = workload.AtPercentileSelected(p, a.lat, a.requests, out.Attainment)
}

// sharedPercentile is the SLO percentile of every application (0 when they differ).
func (c *collector) sharedPercentile() float64 {
	p := -1.0
	for _, a := range c.dep.Apps {
		if p >= 0 && a.SLOPercentile != p {
			return 0
		}
		p = a.SLOPercentile
	}
	return max(p, 0)
}

// latencyRanks appends the ranks among n answered latencies (of requests in all) that the
// report reads: its summary's and, for an SLO percentile p > 0, that one's.
func latencyRanks(ks []int, n int, requests int64, p float64) []int {
	ks = workload.AppendLatencyRanks(ks, n)
	if p > 0 {
		if k := workload.AtPercentileRank(p, n, requests); k >= 0 {
			ks = append(ks, k)
		}
	}
	return ks
}
