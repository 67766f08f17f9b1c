// Package llmcap is the one capacity judge of an LLM instance (or a disaggregated unit): the
// highest total Poisson rate of a model's classes, at their mix, at which every class holds
// every SLO it sets at its percentile. Both planners that size LLM fleets by simulation ask
// it — QLM's (planner/qlm: the instance rate its solve divides the load by) and the
// deployment search (planner/llmdeploy: each candidate's capacity) — so one rule decides
// their capacities: the same window of requests, the same warm-up, the same verdict
// (workload.LLMChecks, the simulator's), the same starting bracket and the same bisection
// precision. What runs the requests is the caller's probe: the simulator's Poisson point
// under a policy (sim.PoissonPoint, handed down by the registry: planner and sim never import
// each other) or the engine replayed alone (dataplane/llm.Replay), which runs the engine the
// simulator runs (planner/llmdeploy's agreement tests hold them equal, request for request).
//
// The window is the first n requests of the classes' seeded Poisson point, as `plan simulate
// --load 1 --seed s` draws them (Draw), the first 5% of them (into an empty engine) not
// judged: a run bounded in time at the (n+1)-th arrival with its warm-up ending at the first
// judged one (Span) judges exactly those. A window counted in requests rather than seconds
// gives every probe the same statistical weight (one miss in a hundred is seen at p99
// whatever the rate) and the same cost at low rates, where the engine steps with few
// sequences (Vidur-Search and DistServe's search_binary.py likewise fix the request count;
// llm-deploy-search.md §4).
package llmcap

import (
	"math"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/planner"
)

// The judge's constants: its window, warm-up, seed and bisection (Vidur-Search stops at 2.5%
// granularity; DistServe bisects to hi − lo < ε, llm-deploy-search.md §4).
const (
	// Requests is the window: the requests a probe draws and judges (less the warm-up).
	Requests = 2000
	// WarmupShare of the window's requests, the first arrivals, is not judged.
	WarmupShare = 0.05
	// Seed is the probes' arrival seed (`plan simulate`'s default).
	Seed = 1
	// Precision is the capacity's relative precision: the bisection stops once the lowest
	// failing rate is within it of the highest meeting one.
	Precision = 0.02
	// MinRate and MaxRate bound the rates probed (req/s): below MinRate an instance serves
	// nothing; no engine reaches MaxRate.
	MinRate = 1.0 / 1024
	MaxRate = 1 << 14
)

// Probe runs the classes' Poisson point at a total rate (req/s; each class at its share,
// ClassRates) over the window of n requests drawn with seed (Draw, Span) and returns each
// class's metrics in class order, as the simulator counts them (workload.AppMetrics: requests
// judged, answered, and those past each SLO). A probe may stop its window early once a class
// has missed on more of its judged requests than a percentile allows (sim.PoissonProbe,
// planner/llmdeploy's replay): the verdict is then certain, and Met fails on the metrics so
// far as on the whole window's (the same misses over fewer requests). A probe that meets must
// not stop, so its metrics are the whole window's.
type Probe func(rate float64, n int, seed uint64) ([]workload.AppMetrics, error)

// Result is a capacity: Rate, the highest rate that met, rounded to 10⁻⁴ req/s (0: not even
// MinRate meets), and At, the rate as probed (unrounded), whose metrics are Apps.
type Result struct {
	Rate, At float64
	Apps     []workload.AppMetrics
}

// Capacity is the judge: the highest total rate of classes at their mix at which probe's
// point has every class with requests meet every SLO it sets at its percentile (Met), found
// from start (Start: a closed form's guess, never a verdict) by doubling or halving to a
// bracket within [MinRate, MaxRate], then bisecting to Precision, each probe over the window
// of n requests (≤ 0: Requests) drawn with seed (0: Seed). Probes at different rates draw the
// same requests compressed or stretched in time (common random numbers), so the verdict is
// monotone in the rate and the bisection well posed.
func Capacity(classes []llmspec.LLMClass, start float64, n int, seed uint64, probe Probe) (Result, error) {
	if n <= 0 {
		n = Requests
	}
	if seed == 0 {
		seed = Seed
	}
	var res Result
	meets := func(rate float64) (bool, error) {
		apps, err := probe(rate, n, seed)
		if err != nil {
			return false, err
		}
		if !Met(classes, apps) {
			return false, nil
		}
		res.At, res.Apps = rate, apps
		return true, nil
	}
	lo, err := planner.HighestRate(start, MinRate, MaxRate, 1+Precision, meets)
	if err != nil {
		return Result{}, err
	}
	if lo <= 0 {
		return Result{}, nil
	}
	res.Rate = math.Round(lo*1e4) / 1e4
	return res, nil
}

// Met is the verdict on one probe: every class with requests in apps holds every SLO it sets
// at its percentile (Checks). A class without LLM metrics (a point of a system that keeps
// none) is judged on its end-to-end attainment at its slo percentile.
func Met(classes []llmspec.LLMClass, apps []workload.AppMetrics) bool {
	for k := range classes {
		if k >= len(apps) || apps[k].Requests == 0 {
			continue
		}
		m := &apps[k]
		if m.LLM == nil {
			if e2e, _, _ := classes[k].Percentiles(); m.Attainment < e2e {
				return false
			}
			continue
		}
		if !workload.AllMet(Checks(&classes[k], m)) {
			return false
		}
	}
	return true
}

// Checks are class cl's SLOs judged at their percentiles on its metrics m (the simulator's
// rule, workload.LLMChecks): nil without requests or LLM metrics.
func Checks(cl *llmspec.LLMClass, m *workload.AppMetrics) []workload.SLOCheck {
	return workload.LLMChecks(SLOs(cl), m)
}

// SLOs are cl's SLOs (µs) at their percentiles, as the simulator states them
// (sim.LLMClassesOf).
func SLOs(cl *llmspec.LLMClass) workload.LLMSLOs {
	s := workload.LLMSLOs{E2E: us(cl.SLO), TTFT: us(cl.TTFTSLO), TPOT: us(cl.TPOTSLO)}
	s.E2EP, s.TTFTP, s.TPOTP = cl.Percentiles()
	return s
}

// us is d in whole µs, the simulator's time unit.
func us(d formats.Duration) dataplane.Time { return dataplane.Time(d.D().Microseconds()) }

// Start is where Capacity's bracket search starts: a closed form's guess, half the rate at
// which the serving side's saturated throughput theta (tokens/s: the profiles'
// throughput_tokens_per_s, the engine's Θ at its average batch, times the instances that
// decode) emits the classes' mean output tokens, rounded to a power of two within 2⁻⁶..2¹²
// (1 req/s without a throughput). It only places the bracket: the answer is the probes'.
// Starting near it saves probes, and low rates are the dear ones.
func Start(theta float64, classes []llmspec.LLMClass) float64 {
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

// AtRate are classes with their rate_rps set to their shares of a total rate (ClassRates),
// as a deployment states its applications' rates.
func AtRate(classes []llmspec.LLMClass, rate float64) []llmspec.LLMClass {
	out := append([]llmspec.LLMClass(nil), classes...)
	for k, r := range ClassRates(classes, rate) {
		out[k].RateRPS = r
	}
	return out
}

// Draw draws the first n requests of classes at their rate shares of a total rate req/s, as
// the simulator draws them for a Poisson point (`plan simulate --load 1 --seed seed`,
// sim.PoissonPoint) of a deployment whose applications are the classes in order: each class
// a Poisson process of its own (workload.ArrivalSpec's, seeded by workload.PointSeed(seed,
// 1, class index)), the requests numbered 0, 1, … in order of arrival (ties: the lower class
// first), their token counts drawn by number from the class's full length distribution
// (llm.DrawTokens, as the simulator's fillTokens). A class's unit-rate arrival times depend
// on seed alone, so probes at different rates see the same requests compressed or stretched
// in time. cls[i] is request i's class index. A rate the arrival process refuses (not
// positive and finite) draws no requests.
func Draw(classes []llmspec.LLMClass, rate float64, n int, seed uint64) ([]llm.Request, []int) {
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
		if len(next) == 0 || next[k] == dataplane.Never {
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

// Skip is how many of a window's n requests, the first arrivals, are not judged.
func Skip(n int) int { return int(float64(n) * WarmupShare) }

// Span is the time bounds of the window of n requests of classes at rate drawn with seed, for
// a probe that runs the simulator's point rather than the requests themselves: the run's
// arrivals stop at the (n+1)-th request's (dur) and its warm-up ends at the first judged
// one's (warmup), so the point runs exactly Draw's n requests and judges the same ones. ok
// is false when the classes draw no more than n requests (no class has a positive rate).
func Span(classes []llmspec.LLMClass, rate float64, n int, seed uint64) (dur, warmup dataplane.Time, ok bool) {
	reqs, _ := Draw(classes, rate, n+1, seed)
	if len(reqs) <= n {
		return 0, 0, false
	}
	return reqs[n].Arrival, reqs[Skip(n)].Arrival, true
}
