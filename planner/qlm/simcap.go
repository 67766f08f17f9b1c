package qlm

// Simulation-checked capacity. A QLM instance's sustainable rate is what the engine model of
// `plan simulate` (dataplane/qlm: vLLM V1's step scheduler, LLM engine digest §2 — chunked
// prefill mixed with decodes, FCFS admission, KV preemption) serves while every class still
// meets every SLO it sets (slo end-to-end, ttft_slo, tpot_slo; digest §3) at the target
// percentile. The earlier rule counted decode load only (Σ rate·μ_out/Θ, QLM §3 Eq. 2), which
// treats prefill as free: QLM §3 says input tokens cost ~100× less than output tokens, true
// for chat mixes but not for a RAG class with 1,800-token prompts and 20-token answers, where
// prefill is nearly all the work (a "12% loaded" A100 attained 0%). An instance's rate is the
// capacity judge's (planner/llmcap, which the deployment search asks too: one window, warm-up,
// verdict, starting bracket and bisection precision) on the simulator's point of the same
// engine model the runtime and `plan simulate` use, which keeps the planners and the simulator
// in agreement by construction. The closed forms (Capacity, MixRate) are sizing heuristics
// only: Mélange's bucket ILP sizes the cost objective's fleet by them, and the simulator
// checks that fleet and tops it up (costsim.go); they never decide that a plan meets its SLOs.

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/plan-dev/plan/dataplane"
	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	"github.com/plan-dev/plan/planner/llmcap"
)

// PointSimulator runs a deployment under a policy at its planned rates for a span of seeded
// Poisson arrivals (warm-up < 0: the default) and returns the point: sim.PoissonPoint. The
// planner sizes by simulation but planner and sim never import each other (DESIGN.md's
// layering), so the registry hands it to each solve (Options.Sim, set by
// internal/registry/systems/qlmsys from the registry's dependencies): no package state.
type PointSimulator func(dep *dataplane.Deployment, policies *dataplane.Registry, pol string, classes []llmspec.LLMClass, dur, warmup dataplane.Time, seed uint64) (*workload.Point, error)

// ErrNoSimulator is a solve given no PointSimulator: the planner sizes and checks its
// plans by simulation and has nothing to size them with.
var ErrNoSimulator = errors.New("qlm: no simulator given (Options.Sim; the registry's qlmsys passes sim.PoissonPoint)")

// Target is the share of a class's requests that must meet every SLO the class sets: its
// p99 (llm_classes state no percentile; `plan simulate` reports the 99% line).
const Target = 0.99

// The verification run is `plan simulate PLAN --load 1` at its defaults (30 s of Poisson
// arrivals, seed 1, its default warm-up), so a plan the planner accepts is one that command
// shows meeting its targets. (An instance's capacity is the capacity judge's, planner/llmcap:
// its own window of requests, seed and warm-up.)
const (
	verifySeconds = 30
	verifySeed    = 1
)

// capacityKey identifies a cached instance capacity: the instance kind, the policy and the
// class mix.
type capacityKey struct {
	model, gpu, pol string
	gpus            int
	mix             string
}

var (
	capMu    sync.Mutex
	capCache = map[capacityKey]float64{}
)

// ClassResult is one class's outcome in a simulation of a plan at its own rates.
type ClassResult struct {
	Name                  string
	Attainment            float64
	Requests              int64
	E2EP99, TTFTP99       dataplane.Time
	TPOTP99               float64 // µs per token
	SLO, TTFTSLO, TPOTSLO dataplane.Time
	// Checks are the class's SLOs each judged at its own percentile (workload.LLMChecks;
	// nil when the run gave no LLM metrics).
	Checks []workload.SLOCheck
}

// Met reports whether the class holds every SLO at its percentile (Checks), or, without
// checks, reached Target.
func (r ClassResult) Met() bool {
	if r.Checks != nil {
		return workload.AllMet(r.Checks)
	}
	return r.Attainment >= Target
}

// String names the class's attainment and its p99s against the SLOs it sets.
func (r ClassResult) String() string {
	s := fmt.Sprintf("attains %.1f%% (target %.0f%%): p99 e2e %s (slo %s)", 100*r.Attainment, 100*Target, ms(float64(r.E2EP99)), ms(float64(r.SLO)))
	if r.TTFTSLO > 0 || r.TTFTP99 > 0 {
		s += fmt.Sprintf(", p99 ttft %s", ms(float64(r.TTFTP99)))
		if r.TTFTSLO > 0 {
			s += fmt.Sprintf(" (ttft_slo %s)", ms(float64(r.TTFTSLO)))
		}
	}
	if r.TPOTSLO > 0 || r.TPOTP99 > 0 {
		s += fmt.Sprintf(", p99 tpot %s", ms(r.TPOTP99))
		if r.TPOTSLO > 0 {
			s += fmt.Sprintf(" (tpot_slo %s)", ms(float64(r.TPOTSLO)))
		}
	}
	for _, c := range r.Checks {
		if c.Percentile != Target {
			// An SLO stated at another percentile: say what share met it against what.
			s += fmt.Sprintf("; %s met by %.1f%% (p%g)", c.SLO, 100*c.Share, 100*c.Percentile)
		}
	}
	return s
}

func ms(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.2f s", us/1e6)
	case us >= 1e4:
		return fmt.Sprintf("%.0f ms", us/1e3)
	}
	return fmt.Sprintf("%.1f ms", us/1e3)
}

// simulate runs instances serving classes at their rate_rps for seconds of Poisson arrivals
// (seeded) under QLM's policy, as `plan simulate` does, and returns each class's outcome in
// class order. warmup < 0 takes `plan simulate`'s default warm-up.
func simulate(point PointSimulator, profs []*formats.Profile, classes []llmspec.LLMClass, insts []qlmsec.QLMInstance, routes []qlmsec.QLMRoute, seconds float64, seed uint64, warmup dataplane.Time) ([]ClassResult, error) {
	pt, err := run(point, dq.PolicyQLM, profs, classes, insts, routes, dataplane.Time(seconds*1e6), warmup, seed)
	if err != nil {
		return nil, err
	}
	out := make([]ClassResult, len(classes))
	for a, c := range classes {
		r := ClassResult{Name: c.Name, Attainment: 1, SLO: dataplane.Time(c.SLO.D().Microseconds()),
			TTFTSLO: dataplane.Time(c.TTFTSLO.D().Microseconds()), TPOTSLO: dataplane.Time(c.TPOTSLO.D().Microseconds())}
		if a < len(pt.Apps) {
			m := pt.Apps[a]
			r.Requests = m.Requests
			if m.Requests > 0 {
				r.Attainment = m.Attainment
			}
			r.E2EP99 = dataplane.Time(m.Latency.P99Us)
			if m.LLM != nil {
				r.TTFTP99, r.TPOTP99 = dataplane.Time(m.LLM.TTFT.P99Us), float64(m.LLM.TPOT.P99Us)
				r.Checks = llmcap.Checks(&c, &m)
			}
		}
		out[a] = r
	}
	return out, nil
}

// run is the simulator's point of instances serving classes at their rate_rps under policy
// pol (of QLM's policies, admission at the door off) for dur of seeded Poisson arrivals, the
// requests arriving before warmup not counted (< 0: `plan simulate`'s default warm-up).
func run(point PointSimulator, pol string, profs []*formats.Profile, classes []llmspec.LLMClass, insts []qlmsec.QLMInstance, routes []qlmsec.QLMRoute, dur, warmup dataplane.Time, seed uint64) (*workload.Point, error) {
	setup := dq.Setup{ReplanMs: 500, Routes: routes}
	for _, p := range profs {
		setup.Profiles = append(setup.Profiles, p.LLMs...)
	}
	for _, in := range insts {
		x := dq.Instance{Name: in.Name, GPU: in.GPU, Model: in.Model}
		if in.GPUCount > 1 {
			x.GPUCount = in.GPUCount
		}
		setup.Instances = append(setup.Instances, x)
	}
	if point == nil {
		return nil, ErrNoSimulator
	}
	dep, err := dq.Build(classes, setup)
	if err != nil {
		return nil, err
	}
	return point(dep, admitAll(), pol, classes, dur, warmup, seed)
}

// admitAll is QLM's policies with admission at the door off (policy parameter admit=all):
// the capacity check asks how many of the offered requests the instances serve in time when
// they serve them all, as QLM §8 measures it; a door refusing near the SLO's edge would count
// as misses a plan that serves them late or not, and move the search's answer.
func admitAll() *dataplane.Registry {
	specs := dq.Policies()
	for i := range specs {
		mk := specs[i].New
		specs[i].New = func(cfg dataplane.Config) (dataplane.Policy, error) {
			if _, set := cfg.Params["admit"]; !set {
				params := map[string]string{"admit": "all"}
				for k, v := range cfg.Params {
					params[k] = v
				}
				cfg.Params = params
			}
			return mk(cfg)
		}
	}
	return dataplane.NewRegistry(specs...)
}

// mixOf is model's classes of w with their shares of the model's requests as rate_rps (all
// at 0: equal shares), scaled to total req/s.
func mixOf(w *formats.Workload, model string, total float64) []llmspec.LLMClass {
	var cls []llmspec.LLMClass
	sum := 0.0
	for _, c := range llmspec.ClassesOf(w) {
		if c.Model == model {
			cls = append(cls, c)
			sum += math.Max(c.RateRPS, 0)
		}
	}
	for i := range cls {
		share := 1 / float64(len(cls))
		if sum > 0 {
			share = math.Max(cls[i].RateRPS, 0) / sum
		}
		cls[i].RateRPS = total * share
	}
	return cls
}

// mixKey is a class mix's cache key: every field the simulation reads, shares normalised.
func mixKey(cls []llmspec.LLMClass) string {
	total := 0.0
	for _, c := range cls {
		total += c.RateRPS
	}
	parts := make([]string, len(cls))
	for i, c := range cls {
		// The percentiles each SLO is judged at are part of the mix: a ttft_slo at p90 and
		// the same one at p99 are different capacities.
		e2e, ttft, tpot := c.Percentiles()
		parts[i] = fmt.Sprintf("%s|%d|%d|%d|%g|%g|%g|%t|%.6f|%v|%v|%d", c.Name, c.SLO, c.TTFTSLO, c.TPOTSLO, e2e, ttft, tpot, c.Interactive, c.RateRPS/math.Max(total, 1e-12), c.InputTokens, c.OutputTokens, c.PrefixTokens)
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}

// InstanceRate is the highest total rate (req/s) one instance of pr serves model's classes of
// w at their mix under QLM's policy with every class holding every SLO it sets at its
// percentile in simulation (0 when none does even at a trickle): InstanceRateUnder QLM's
// policy.
func InstanceRate(sim PointSimulator, pr *formats.LLMProfile, w *formats.Workload, model string) (float64, error) {
	return InstanceRateUnder(sim, dq.PolicyQLM, pr, w, model)
}

// InstanceRateUnder is the capacity judge's rate (llmcap.Capacity: the deployment search's
// too, its window, warm-up, starting bracket, verdict and precision) of one instance of pr
// serving model's classes of w at their mix under policy pol (one of QLM's policies,
// admission at the door off), each probe the simulator's point (sim) bounded to the judge's
// window (llmcap.Span). sim may stop a probe once a class is certain to miss (sim.PoissonProbe,
// workload.Point.Stopped): the probe fails, and as a class certain to miss fails on the
// metrics so far, the judge reads the same verdict as from the whole window. Cached per
// (model, GPU, tensor-parallel GPUs, policy, class mix).
func InstanceRateUnder(sim PointSimulator, pol string, pr *formats.LLMProfile, w *formats.Workload, model string) (float64, error) {
	if sim == nil {
		return 0, ErrNoSimulator
	}
	classes := mixOf(w, model, 1)
	key := capacityKey{model: model, gpu: pr.GPU, pol: pol, gpus: max(pr.GPUCount, 1), mix: mixKey(classes)}
	capMu.Lock()
	r, ok := capCache[key]
	capMu.Unlock()
	if ok {
		return r, nil
	}
	probe := instanceProbe(sim, pol, pr, classes, model)
	res, err := llmcap.Capacity(classes, llmcap.Start(pr.ThroughputTokensPerS, classes), 0, 0, probe)
	if err != nil {
		return 0, err
	}
	capMu.Lock()
	capCache[key] = res.Rate
	capMu.Unlock()
	return res.Rate, nil
}

// instanceProbe is InstanceRateUnder's probe: the simulator's point (sim) of one instance of
// pr under policy pol serving classes (model's, rate_rps their mix) at a total rate, over
// the judge's window of n requests drawn with seed (llmcap.Span).
func instanceProbe(sim PointSimulator, pol string, pr *formats.LLMProfile, classes []llmspec.LLMClass, model string) llmcap.Probe {
	one := []*formats.Profile{{LLMs: []formats.LLMProfile{*pr}}}
	inst := []qlmsec.QLMInstance{{Name: "llm-0", GPU: pr.GPU, GPUCount: max(pr.GPUCount, 1), Model: model}}
	return func(rate float64, n int, seed uint64) ([]workload.AppMetrics, error) {
		dur, warmup, ok := llmcap.Span(classes, rate, n, seed)
		if !ok {
			return nil, fmt.Errorf("qlm: model %s: its classes draw no %d requests at %g req/s", model, n+1, rate)
		}
		pt, err := run(sim, pol, one, llmcap.AtRate(classes, rate), inst, nil, dur, warmup, seed)
		if err != nil {
			return nil, err
		}
		if pt.Stopped && llmcap.Met(classes, pt.Apps) {
			// A stop is a certain failure: metrics that meet would make the verdict the
			// stop's accident, not the window's.
			return nil, fmt.Errorf("qlm: model %s: the probe at %g req/s stopped certain to miss, yet its metrics meet every SLO", model, rate)
		}
		return pt.Apps, nil
	}
}

// RateRPSZero reports whether the class had no requests (a class at rate 0 attains trivially).
func (r ClassResult) RateRPSZero() bool { return r.Requests == 0 }
