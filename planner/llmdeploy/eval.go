package llmdeploy

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/llm/sched/fcfs"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/internal/base/quantile"
	"github.com/plan-dev/plan/planner/llmcap"
)

// Pcts are a latency's percentiles over a class's answered requests (µs; TPOT µs per token).
type Pcts struct {
	P50, P90, P99 float64
}

// Check is one SLO of a class judged at its percentile: the share of the class's requests
// that met it (a refused request meets none) against the percentile (llm-deploy-search.md
// §6). It is the simulator's check, judged by the capacity judge's rule (llmcap.Checks:
// workload.LLMChecks), so a probe and `plan simulate` of the same requests reach the same
// verdict.
type Check = workload.SLOCheck

// ClassPrediction is what a probe measured of one class.
type ClassPrediction struct {
	Class           string
	Requests        int
	TTFT, TPOT, E2E Pcts
	Checks          []Check
	// OutTokens are the output tokens its answered requests generated.
	OutTokens int64
	// Metrics are the counts the checks judge, as the simulator keeps them of a class
	// (requests judged, answered, and of those past each SLO): what the capacity judge
	// (llmcap.Capacity) reads.
	Metrics workload.AppMetrics
}

// Met reports whether every SLO of the class holds at its percentile.
func (p ClassPrediction) Met() bool {
	for _, c := range p.Checks {
		if !c.Met {
			return false
		}
	}
	return true
}

// Evaluator simulates one unit of a candidate (an aggregated instance; a disaggregated unit
// of prefill and decode instances) at a total request rate of the model's classes at their
// mix. The disaggregated mode plugs in as another Evaluator (Evaluators).
type Evaluator interface {
	Probe(c Candidate, classes []llmspec.LLMClass, rate float64, o Options) ([]ClassPrediction, error)
}

// Evaluators are the modes' evaluators; a mode without one is not searched.
var Evaluators = map[Mode]Evaluator{Aggregated: AggregatedEvaluator{}, Disaggregated: DisaggregatedEvaluator{}}

// AggregatedEvaluator runs one engine (dataplane/llm.Replay, FCFS as vLLM schedules) on
// seeded Poisson arrivals.
type AggregatedEvaluator struct{}

// Probe implements Evaluator.
func (AggregatedEvaluator) Probe(c Candidate, classes []llmspec.LLMClass, rate float64, o Options) ([]ClassPrediction, error) {
	if len(c.Roles) != 1 {
		return nil, fmt.Errorf("llmdeploy: aggregated candidate %s has %d roles, want 1", c.Label(), len(c.Roles))
	}
	o = o.withDefaults()
	reqs, cls := llmcap.Draw(classes, rate, o.Requests, o.Seed)
	m := llm.NewModel(c.Roles[0].Profile)
	res, _ := llm.ReplayWatched(m, reqs, fcfs.New(), o.watch(classes, reqs, cls))
	return Judge(classes, reqs, cls, res), nil
}

// Judge measures each class's TTFT, TPOT (the mean time per output token after the first)
// and end-to-end latency over the requests after the warm-up, and judges each SLO the class
// sets at its percentile.
func Judge(classes []llmspec.LLMClass, reqs []llm.Request, cls []int, res []llm.Result) []ClassPrediction {
	skip := llmcap.Skip(len(reqs))
	type acc struct {
		ttft, tpot, e2e []float64
		n               int
		out             int64
		// answered and missed are what the simulator counts of a class (workload.LLMMetrics):
		// the requests answered, and of them those past each SLO.
		answered int
		missed   [nSLOs]int
	}
	a := make([]acc, len(classes))
	for i := skip; i < len(reqs); i++ {
		c, r := &a[cls[i]], res[i]
		c.n++
		if r.Refused || r.Done == dataplane.Never {
			continue
		}
		j := judgeRequest(&classes[cls[i]], &reqs[i], &r)
		c.ttft, c.e2e = append(c.ttft, j.ttft), append(c.e2e, j.e2e)
		c.out += int64(reqs[i].Out)
		if reqs[i].Out > 1 {
			c.tpot = append(c.tpot, j.tpot)
		}
		c.answered++
		for slo, ok := range j.ok {
			if !ok {
				c.missed[slo]++
			}
		}
	}
	out := make([]ClassPrediction, len(classes))
	for k, cl := range classes {
		c := a[k]
		m := workload.AppMetrics{Requests: int64(c.n), LLM: &workload.LLMMetrics{Answered: int64(c.answered),
			E2EMissed: int64(c.missed[sloE2E]), TTFTMissed: int64(c.missed[sloTTFT]), TPOTMissed: int64(c.missed[sloTPOT])}}
		out[k] = ClassPrediction{Class: cl.Name, Requests: c.n, TTFT: pcts(c.ttft), TPOT: pcts(c.tpot), E2E: pcts(c.e2e), OutTokens: c.out,
			Checks: llmcap.Checks(&cl, &m), Metrics: m}
	}
	return out
}

// pcts are the p50, p90 and p99 of xs (internal/base/quantile's definition), rounded to whole µs.
func pcts(xs []float64) Pcts {
	if len(xs) == 0 {
		return Pcts{}
	}
	s := quantile.Sorted(xs)
	at := func(q float64) float64 { return math.Round(quantile.Percentile(s, q)) }
	return Pcts{P50: at(50), P90: at(90), P99: at(99)}
}

// Evaluation is a candidate's capacity: the highest total rate (req/s) one unit serves of
// its model's classes at their mix with every class holding every SLO at its percentile,
// and the classes' percentiles at that rate.
type Evaluation struct {
	Rate    float64
	Classes []ClassPrediction
	// OutTokensPerS is the output tokens per second generated at Rate.
	OutTokensPerS float64
}

// Capacity finds c's rate by the capacity judge (llmcap.Capacity: its window, warm-up,
// starting bracket, verdict and bisection precision, the QLM planner's too), each probe
// simulated by ev over the window (Rate 0: not even a trickle meets the SLOs). The bracket
// search starts at llmcap.Start on the serving side's throughput: the last role's
// throughput_tokens_per_s times its instances in the unit.
func Capacity(ev Evaluator, c Candidate, classes []llmspec.LLMClass, o Options) (Evaluation, error) {
	// byRate are the probes' predictions, for the rate the judge settles on.
	byRate := map[float64][]ClassPrediction{}
	o.failFast = true
	probe := func(rate float64, n int, seed uint64) ([]workload.AppMetrics, error) {
		if o.ctx != nil {
			if err := o.ctx.Err(); err != nil {
				return nil, err
			}
		}
		po := o
		po.Requests, po.Seed = n, seed
		p, err := ev.Probe(c, classes, rate, po)
		if err != nil {
			return nil, err
		}
		byRate[rate] = p
		apps := make([]workload.AppMetrics, len(p))
		for k := range p {
			apps[k] = p[k].Metrics
		}
		return apps, nil
	}
	theta := 0.0
	if n := len(c.Roles); n > 0 {
		theta = c.Roles[n-1].Profile.ThroughputTokensPerS * float64(c.instances(n-1))
	}
	r, err := llmcap.Capacity(classes, llmcap.Start(theta, classes), o.Requests, o.Seed, probe)
	if err != nil {
		return Evaluation{}, err
	}
	e := Evaluation{Rate: r.Rate, Classes: byRate[r.At]}
	if r.Rate > 0 {
		e.OutTokensPerS = outRate(e.Classes, r.At)
	}
	return e, nil
}

// outRate is the output tokens per second at rate: the judged requests' mean output tokens
// times the rate.
func outRate(p []ClassPrediction, rate float64) float64 {
	var out int64
	n := 0
	for _, x := range p {
		out += x.OutTokens
		n += x.Requests
	}
	if n == 0 {
		return 0
	}
	return math.Round(float64(out)/float64(n)*rate*10) / 10
}

// memo caches capacities per (candidate, class mix, probe settings): the comparison rows and
// repeated solves (the rate margins of `plan solve`) reuse them.
var memo = struct {
	sync.Mutex
	m map[string]Evaluation
}{m: map[string]Evaluation{}}

// mixKey is a class mix's key: every field a probe reads, rates as shares of the total.
func mixKey(classes []llmspec.LLMClass) string {
	total := 0.0
	for _, c := range classes {
		total += math.Max(c.RateRPS, 0)
	}
	parts := make([]string, len(classes))
	for i, c := range classes {
		parts[i] = fmt.Sprintf("%s|%d|%d|%d|%s|%s|%s|%.6f|%v|%v|%d", c.Name, c.SLO, c.TTFTSLO, c.TPOTSLO, c.SLOPercentile, c.TTFTPercentile, c.TPOTPercentile,
			math.Max(c.RateRPS, 0)/math.Max(total, 1e-12), c.InputTokens, c.OutputTokens, c.PrefixTokens)
	}
	return strings.Join(parts, ";")
}

// capacityMemo is Capacity through the memo.
func capacityMemo(ev Evaluator, c Candidate, classes []llmspec.LLMClass, o Options) (Evaluation, error) {
	key := fmt.Sprintf("%T#%s#%s#%d#%d#%g", ev, c.Key(), mixKey(classes), o.Requests, o.Seed, o.KVLinkGBps)
	for _, r := range c.Roles {
		// A profile given in a file is keyed by its content, not its file name.
		b, _ := json.Marshal(r.Profile)
		key += fmt.Sprintf("#%x", sha256.Sum256(b))
	}
	memo.Lock()
	e, ok := memo.m[key]
	memo.Unlock()
	if ok {
		return e, nil
	}
	e, err := Capacity(ev, c, classes, o)
	if err != nil {
		return e, err
	}
	memo.Lock()
	memo.m[key] = e
	memo.Unlock()
	return e, nil
}
