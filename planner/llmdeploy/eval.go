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
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/internal/quantile"
	"github.com/plan-dev/plan/planner"
)

// Pcts are a latency's percentiles over a class's answered requests (µs; TPOT µs per token).
type Pcts struct {
	P50, P90, P99 float64
}

// Check is one SLO of a class judged at its percentile: the share of the class's requests
// that met it (a refused request meets none) against the percentile (llm-deploy-search.md
// §6). It is the simulator's check, judged by the same rule (workload.LLMChecks), so a probe
// and `plan simulate` of the same requests reach the same verdict.
type Check = workload.SLOCheck

// ClassPrediction is what a probe measured of one class.
type ClassPrediction struct {
	Class           string
	Requests        int
	TTFT, TPOT, E2E Pcts
	Checks          []Check
	// OutTokens are the output tokens its answered requests generated.
	OutTokens int64
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
	reqs, cls := Requests(classes, rate, o.Requests, o.Seed)
	m := llm.NewModel(c.Roles[0].Profile)
	res, _ := llm.ReplayWatched(m, reqs, fcfs.New(), o.watch(classes, reqs, cls))
	return Judge(classes, reqs, cls, res), nil
}

// Requests draws the first n requests of classes at their rate shares (all 0: equal shares)
// of a total rate req/s, as the simulator draws them for a Poisson point (`plan simulate
// --load 1 --seed seed`, sim.PoissonPoint) of a deployment whose applications are the
// classes in order: each class a Poisson process of its own (workload.ArrivalSpec's, seeded
// by workload.PointSeed(seed, 1, class index)), the requests numbered 0, 1, … in order of
// arrival (ties: the lower class first), their token counts drawn by number from the class's
// full length distribution (llm.DrawTokens, as the simulator's fillTokens). A class's
// unit-rate arrival times depend on seed alone, so probes at different rates see the same
// requests compressed or stretched in time (common random numbers: capacity is monotone in
// the rate, so bisection is well posed). cls[i] is request i's class index. A rate the
// arrival process refuses (not positive and finite) draws no requests.
func Requests(classes []llmspec.LLMClass, rate float64, n int, seed uint64) ([]llm.Request, []int) {
	poisson := workload.ArrivalSpec{Kind: "poisson"}
	srcs := make([]workload.Source, len(classes))
	next := make([]dataplane.Time, len(classes))
	for k, r := range ClassRates(classes, rate) {
		next[k] = dataplane.Never
		if r <= 0 {
			continue
		}
		src, err := poisson.New(r, classes[k].Name, workload.PointSeed(seed, 1, k))
		if err != nil {
			continue
		}
		srcs[k], next[k] = src, src.Next()
	}
	reqs := make([]llm.Request, 0, n)
	cls := make([]int, 0, n)
	for i := 0; i < n; i++ {
		k := 0
		for j := range next {
			if next[j] < next[k] {
				k = j
			}
		}
		if next[k] == dataplane.Never {
			break
		}
		c, id := classes[k], uint64(i)
		r := llm.Request{ID: dataplane.ReqID(id), Arrival: next[k],
			Prompt: llm.DrawTokens(c.InputTokens, id, llm.SaltPrompt), Out: llm.DrawTokens(c.OutputTokens, id, llm.SaltOutput)}
		if c.PrefixTokens > 0 {
			// The class's shared prompt prefix, named as the simulator names it
			// (dataplane/qlm): an engine with enable_prefix_caching skips its cached blocks.
			r.Prefix = &dataplane.Prefix{Group: "class/" + c.Name, GroupTokens: int32(c.PrefixTokens)}
		}
		reqs, cls = append(reqs, r), append(cls, k)
		next[k] = srcs[k].Next()
	}
	return reqs, cls
}

// ClassRates are the classes' arrival rates (req/s) at a total rate: each class's share of
// the classes' rate_rps (all 0: equal shares) of rate.
func ClassRates(classes []llmspec.LLMClass, rate float64) []float64 {
	out := make([]float64, len(classes))
	total := 0.0
	for _, c := range classes {
		total += math.Max(c.RateRPS, 0)
	}
	for k, c := range classes {
		share := 1 / float64(len(classes))
		if total > 0 {
			share = math.Max(c.RateRPS, 0) / total
		}
		out[k] = rate * share
	}
	return out
}

// warmupShare of the requests (the first arrivals, into an empty engine) is not judged.
const warmupShare = 0.05

// Judge measures each class's TTFT, TPOT (the mean time per output token after the first)
// and end-to-end latency over the requests after the warm-up, and judges each SLO the class
// sets at its percentile.
func Judge(classes []llmspec.LLMClass, reqs []llm.Request, cls []int, res []llm.Result) []ClassPrediction {
	skip := int(float64(len(reqs)) * warmupShare)
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
		out[k] = ClassPrediction{Class: cl.Name, Requests: c.n, TTFT: pcts(c.ttft), TPOT: pcts(c.tpot), E2E: pcts(c.e2e), OutTokens: c.out,
			Checks: checks(&cl, c.n, c.answered, c.missed)}
	}
	return out
}

// checks judges class cl's SLOs over n judged requests, answered of them answered and
// missed[s] of those past SLO s, by the simulator's rule (workload.LLMChecks on the counts
// the simulator keeps of a class): nil for no requests.
func checks(cl *llmspec.LLMClass, n, answered int, missed [nSLOs]int) []Check {
	m := workload.AppMetrics{Requests: int64(n), LLM: &workload.LLMMetrics{Answered: int64(answered),
		E2EMissed: int64(missed[sloE2E]), TTFTMissed: int64(missed[sloTTFT]), TPOTMissed: int64(missed[sloTPOT])}}
	return workload.LLMChecks(slosOf(cl), &m)
}

// slosOf are cl's SLOs (µs) at their percentiles, as the simulator states them
// (sim.LLMClass.SLOs).
func slosOf(cl *llmspec.LLMClass) workload.LLMSLOs {
	s := workload.LLMSLOs{E2E: us(cl.SLO), TTFT: us(cl.TTFTSLO), TPOT: us(cl.TPOTSLO)}
	s.E2EP, s.TTFTP, s.TPOTP = cl.Percentiles()
	return s
}

// us is d in whole µs, the simulator's time unit.
func us(d formats.Duration) dataplane.Time { return dataplane.Time(d.D().Microseconds()) }

// pcts are the p50, p90 and p99 of xs (internal/quantile's definition), rounded to whole µs.
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

// Bisection bounds (Vidur-Search: stop at 2.5% granularity; DistServe bisects to hi − lo < ε,
// llm-deploy-search.md §4): the rate's relative precision, and the range probed.
const (
	precision = 0.02
	minRate   = 1.0 / 1024
	maxRate   = 1 << 14
)

// start is where Capacity's bracket search starts: half the rate at which the decode side's
// saturated throughput (the profiles' throughput_tokens_per_s: the engine's Θ at its
// average batch) emits the classes' mean output tokens, rounded to a power of two (1 req/s
// without a throughput). Starting near the answer saves probes, and low rates are the
// dear ones: the engine steps with few sequences, so 2,000 requests take many more steps.
func start(c Candidate, classes []llmspec.LLMClass) float64 {
	theta := 0.0
	if n := len(c.Roles); n > 0 {
		theta = c.Roles[n-1].Profile.ThroughputTokensPerS * float64(c.instances(n-1))
	}
	total, out := 0.0, 0.0
	for _, cl := range classes {
		w := math.Max(cl.RateRPS, 0)
		total += w
		out += w * math.Max(cl.OutputTokens.Mean, 1)
	}
	if theta <= 0 || total <= 0 {
		return 1
	}
	g := theta / (out / total) / 2
	return math.Exp2(math.Max(-6, math.Min(12, math.Round(math.Log2(g)))))
}

// Capacity finds c's rate by doubling (or halving) from start to a bracket, then bisecting
// to precision, each probe simulated by ev (Rate 0: not even a trickle meets the SLOs).
func Capacity(ev Evaluator, c Candidate, classes []llmspec.LLMClass, o Options) (Evaluation, error) {
	// last is the prediction at the highest rate that met the SLOs so far (the search's lo).
	var last []ClassPrediction
	o.failFast = true
	meets := func(rate float64) (bool, error) {
		if o.ctx != nil {
			if err := o.ctx.Err(); err != nil {
				return false, err
			}
		}
		p, err := ev.Probe(c, classes, rate, o)
		if err != nil {
			return false, err
		}
		for _, x := range p {
			if x.Requests > 0 && !x.Met() {
				return false, nil
			}
		}
		last = p
		return true, nil
	}
	rate := 1.0
	if len(c.Roles) > 0 {
		rate = start(c, classes)
	}
	lo, err := planner.HighestRate(rate, minRate, maxRate, 1+precision, meets)
	if err != nil {
		return Evaluation{}, err
	}
	e := Evaluation{Rate: math.Round(lo*1e4) / 1e4, Classes: last}
	if lo > 0 {
		e.OutTokensPerS = outRate(classes, last, lo, o)
	}
	return e, nil
}

// outRate is the output tokens per second at rate: the judged requests' mean output tokens
// times the rate.
func outRate(classes []llmspec.LLMClass, p []ClassPrediction, rate float64, o Options) float64 {
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
