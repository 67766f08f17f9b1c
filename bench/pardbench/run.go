package pardbench

import (
	"errors"
	"fmt"
	"math"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/sim"
)

// PipelineJitter is the default execution noise of pipeline runs. The paper treats profiled
// durations as fixed and gives no noise figure; we stand in a 3% standard deviation. The
// simulator's noise is uniform, and ±5.2% has the same standard deviation (0.03·√3).
const PipelineJitter = 0.052

// PipelineRun configures one simulation of a single pipeline application (PARD's
// experiments run one application per deployment).
type PipelineRun struct {
	Dep      *dataplane.Deployment
	Policies *dataplane.Registry
	Policy   dataplane.Config
	// Rates drives the arrivals (per-second rates, Poisson within each second).
	Rates RateSeries
	Seed  uint64
	// Jitter is the relative half-width of uniform execution noise (default PipelineJitter;
	// negative = none).
	Jitter float64
	// OnFinish sees every finished request (tests).
	OnFinish func(now dataplane.Time, r *dataplane.Request)
}

// WindowStat is the worst window of one size: the minimum normalized goodput over sliding
// windows (1 s steps, by arrival time) and the matching maximum ("transient") drop rate.
type WindowStat struct {
	Seconds     int     `json:"seconds"`
	MinGoodput  float64 `json:"min_goodput"`
	MaxDropRate float64 `json:"max_drop_rate"`
}

// ModuleShare is the share of all drops (late completions included, charged to the sink)
// that happened at one module.
type ModuleShare struct {
	Module string  `json:"module"`
	Index  int     `json:"index"`
	Share  float64 `json:"share"`
	Count  int64   `json:"count"`
}

// PipelineMetrics are PARD's metrics for one run (PARD §5.1, "Metrics").
type PipelineMetrics struct {
	App       string `json:"app"`
	Policy    string `json:"policy"`
	Requests  int64  `json:"requests"`
	Completed int64  `json:"completed"`
	Late      int64  `json:"late"`
	Dropped   int64  `json:"dropped"`
	// Goodput is on-time completions normalized by the input (the paper's normalized
	// goodput); GoodputRPS is on-time completions per second.
	Goodput    float64 `json:"goodput"`
	GoodputRPS float64 `json:"goodput_rps"`
	// DropRate = (dropped + late) / requests.
	DropRate float64 `json:"drop_rate"`
	// InvalidRate = GPU time of requests that ended dropped or late / all GPU time (a batch
	// of s requests charges d(s)/s to each, every branch included).
	InvalidRate float64 `json:"invalid_rate"`
	GPUSeconds  float64 `json:"gpu_seconds"`
	// Shares of drops per module (pipeline order) and the share in the later half (modules
	// with index ≥ N/2).
	Shares     []ModuleShare `json:"shares"`
	LaterShare float64       `json:"later_share"`
	Windows    []WindowStat  `json:"windows"`
	// MeanWaitMs is the mean queueing + batch wait per request and module.
	MeanWaitMs float64 `json:"mean_wait_ms"`
	// Decisions is the per-module decision trace (pipeline order).
	Decisions []ModuleTrace `json:"decisions"`
	// Reasons counts drops by reason.
	Reasons map[string]int64 `json:"reasons,omitempty"`
	// PerSecond arrivals and on-time completions, by arrival second.
	Arrivals []int64 `json:"-"`
	Good     []int64 `json:"-"`
}

// WindowSizes are the window lengths of the transient metrics (seconds).
var WindowSizes = []int{1, 5, 10, 30, 60}

// RunPipeline simulates one pipeline application under the configured policy.
func RunPipeline(cfg PipelineRun) (*PipelineMetrics, error) {
	if cfg.Dep == nil || len(cfg.Dep.Apps) != 1 {
		return nil, fmt.Errorf("pipeline run: need a deployment with exactly one application")
	}
	if cfg.Policies == nil {
		return nil, errors.New("sim: PipelineRun.Policies is nil")
	}
	pol, err := cfg.Policies.New(cfg.Dep, cfg.Policy, "")
	if err != nil {
		return nil, err
	}
	j := cfg.Jitter
	if j == 0 {
		j = PipelineJitter
	}
	if j < 0 {
		j = 0
	}
	s, err := sim.New(cfg.Dep, pol, []sim.Source{cfg.Rates.Source(cfg.Seed)}, sim.Options{
		Duration: dataplane.Time(len(cfg.Rates)) * dataplane.Second, Seed: cfg.Seed ^ 0x9e37, Jitter: j, OnFinish: cfg.OnFinish,
	})
	if err != nil {
		return nil, err
	}
	s.Engine.ReserveRequests(int(cfg.Rates.Mean()*float64(len(cfg.Rates))*1.05) + 16)
	if _, err := s.Run(); err != nil {
		return nil, err
	}
	m := PipelineOutcome(s.Engine, len(cfg.Rates))
	m.Policy = pol.Name()
	return m, nil
}

// PipelineOutcome computes PARD's metrics from a finished engine (every request must have
// reached its outcome); secs is the arrival window in seconds.
func PipelineOutcome(e *dataplane.Engine, secs int) *PipelineMetrics {
	dep := e.Deployment()
	m := &PipelineMetrics{App: dep.Apps[0].Name, Reasons: map[string]int64{},
		Arrivals: make([]int64, secs), Good: make([]int64, secs)}
	var stages []dataplane.StageID
	sink := dataplane.NoStage
	for i := range dep.Stages {
		if dep.Stages[i].App == 0 {
			stages = append(stages, dataplane.StageID(i))
			if len(dep.Stages[i].Next) == 0 {
				sink = dataplane.StageID(i)
			}
		}
	}
	counts := make(map[dataplane.StageID]int64)
	var all, bad, wait float64
	var waits int64
	batches := e.Batches()
	reqs := e.Requests()
	for i := range reqs {
		r := &reqs[i]
		m.Requests++
		sec := int(r.Arrival / dataplane.Second)
		if sec >= 0 && sec < secs {
			m.Arrivals[sec]++
		}
		all += r.WorkGPU
		switch r.Outcome {
		case dataplane.Completed:
			m.Completed++
			if sec >= 0 && sec < secs {
				m.Good[sec]++
			}
		case dataplane.Late:
			m.Late++
			bad += r.WorkGPU
			counts[sink]++
			m.Reasons["late"]++
		case dataplane.Dropped:
			m.Dropped++
			bad += r.WorkGPU
			counts[r.DropStage]++
			m.Reasons[string(r.Reason())]++
		}
		// Queueing + batch wait per module: from the input's arrival at the module (the
		// request's arrival, or the end of the transfer that brought it) to the start of
		// its batch. For a merge the later branch counts (L_pre ends when it arrives).
		ready := map[dataplane.StageID]dataplane.Time{}
		for _, b := range e.RequestBatches(r.ID) {
			bt := &batches[b]
			h := &bt.Hops[0]
			at := r.Arrival
			if t, ok := ready[h.Stage]; ok {
				at = t
			}
			if h.Start >= 0 {
				wait += float64(h.Start - at)
				waits++
			}
			end := h.End
			if h.OutEnd >= 0 {
				end = h.OutEnd
			}
			for _, n := range dep.Stages[h.Stage].Next {
				ready[n] = max(ready[n], end)
			}
		}
	}
	if m.Requests > 0 {
		m.Goodput = round6(float64(m.Completed) / float64(m.Requests))
		m.DropRate = round6(float64(m.Dropped+m.Late) / float64(m.Requests))
	}
	if secs > 0 {
		m.GoodputRPS = round6(float64(m.Completed) / float64(secs))
	}
	if all > 0 {
		m.InvalidRate = round6(bad / all)
	}
	m.GPUSeconds = round6(all / 1e6)
	if waits > 0 {
		m.MeanWaitMs = round6(wait / float64(waits) / 1000)
	}
	tot := m.Dropped + m.Late
	n := len(stages)
	var later int64
	for _, s := range stages {
		st := &dep.Stages[s]
		c := counts[s]
		sh := ModuleShare{Module: st.Name, Index: st.Index, Count: c}
		if tot > 0 {
			sh.Share = round6(float64(c) / float64(tot))
		}
		if 2*st.Index >= n {
			later += c
		}
		m.Shares = append(m.Shares, sh)
	}
	if tot > 0 {
		m.LaterShare = round6(float64(later) / float64(tot))
	}
	for _, w := range WindowSizes {
		m.Windows = append(m.Windows, windowStat(m.Arrivals, m.Good, w))
	}
	m.Decisions = decisionTrace(e, stages, sink)
	return m
}

func windowStat(arr, good []int64, w int) WindowStat {
	ws := WindowStat{Seconds: w, MinGoodput: 1}
	if len(arr) == 0 {
		return ws
	}
	w = min(w, len(arr))
	var a, g int64
	for i := range arr {
		a += arr[i]
		g += good[i]
		if i >= w {
			a -= arr[i-w]
			g -= good[i-w]
		}
		if i >= w-1 && a > 0 {
			ws.MinGoodput = math.Min(ws.MinGoodput, float64(g)/float64(a))
		}
	}
	ws.MinGoodput = round6(ws.MinGoodput)
	ws.MaxDropRate = round6(1 - ws.MinGoodput)
	return ws
}

// GoodputOver returns the normalized goodput over the seconds mask selects (the paper's
// "segments that need dropping"); 1 when they hold no arrivals.
func (m *PipelineMetrics) GoodputOver(mask []bool) float64 {
	var a, g int64
	for i, on := range mask {
		if on && i < len(m.Arrivals) {
			a += m.Arrivals[i]
			g += m.Good[i]
		}
	}
	if a == 0 {
		return 1
	}
	return round6(float64(g) / float64(a))
}

// NeedsDropping marks the seconds in which the never-dropping baseline misses the SLO for
// more than 1% of the arrivals: the windows where a dropping policy matters.
func (m *PipelineMetrics) NeedsDropping() []bool {
	mask := make([]bool, len(m.Arrivals))
	for i := range mask {
		mask[i] = m.Arrivals[i] > 0 && float64(m.Good[i]) < 0.99*float64(m.Arrivals[i])
	}
	return mask
}

// StressRates is the fixed-capacity stress test's arrival series: a constant rate of f ×
// capacity for secs seconds (the stress test of PARD §5.4; our sweep is 0.5×–3×).
func StressRates(capacity, f float64, secs int) RateSeries {
	r := make(RateSeries, secs)
	for i := range r {
		r[i] = capacity * f
	}
	return r
}

// PipelineCapacity returns the throughput (requests/s) of the application's workers that
// serve from the start: the bottleneck module's Σ b/d(b).
func PipelineCapacity(dep *dataplane.Deployment) float64 {
	capacity := math.Inf(1)
	for i := range dep.Stages {
		st := &dep.Stages[i]
		n := st.Active
		if n <= 0 || n > len(st.Pool) {
			n = len(st.Pool)
		}
		c := float64(n) * float64(st.Batch) / (float64(st.Lat(st.Batch)) / 1e6)
		capacity = math.Min(capacity, c)
	}
	return capacity
}

// FixCapacity turns a pipeline deployment into the stress test's fixed-capacity set-up:
// every module keeps only the workers that serve from the start, so the autoscaler (if
// enabled) has nothing to add.
func FixCapacity(dep *dataplane.Deployment) {
	for i := range dep.Stages {
		st := &dep.Stages[i]
		if st.Active > 0 && st.Active < len(st.Pool) {
			st.Pool = st.Pool[:st.Active]
		}
	}
}

// round6 rounds to 6 decimals so reports do not depend on float noise (as sim's metrics).
func round6(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return math.Round(x*1e6) / 1e6
}

// AddOverheads adds the testbed's serving overheads to a pipeline deployment: rpcMs per request on every edge between modules (a batch of b leaving a module takes
// b·rpcMs longer to reach the next), and batchMs to every batch's execution time. The
// provisioning is left as planned, so the overheads take capacity as they would on the
// testbed; the policies see them where a real one would: the transfer in the planned hop
// (PARD's L_sub with hop_in_lsub) and the batch overhead in the profiled d(b).
func AddOverheads(dep *dataplane.Deployment, rpcMs, batchMs float64) {
	for i := range dep.Stages {
		st := &dep.Stages[i]
		if len(st.Next) > 0 && rpcMs > 0 {
			st.XferPerSampleUs += rpcMs * 1000
		}
		if batchMs > 0 {
			lat := make([]dataplane.Time, len(st.LatUs))
			for b := range lat {
				lat[b] = st.LatUs[b]
				if b > 0 {
					lat[b] += dataplane.Time(batchMs * float64(dataplane.Millisecond))
				}
			}
			st.LatUs = lat
		}
	}
}
