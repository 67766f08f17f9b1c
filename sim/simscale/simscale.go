// Package simscale builds the load points of the simulator's scale benchmarks: one fixed
// deployment per system laid out at k times its GPUs (workers, instances) and k times its
// rate, so the simulator's work per request stays the same and only N grows. The
// BenchmarkSimScale of each data-plane package and `plan bench speed` (bench/speedbench) run
// the same cases, so the ratio the bench prints is the one the benchmarks report: events per
// CPU-second at 16× against 1× should not fall (the simulator's cost is linear in N).
//
// The inputs that live under testdata/ (the PPipe fixture hc1-100, the CascadeServe golden
// plan, the DyOrc MIX workload) are passed in as file contents: the benchmarks read them
// from testdata/, the bench embeds copies. They are read with the sections the caller gives
// (the system registry's, which `plan bench speed` hands down; the in-tree set in tests).
package simscale

import (
	"fmt"
	"strings"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/cascade"
	"github.com/plan-dev/plan/dataplane/dyorc"
	"github.com/plan-dev/plan/dataplane/pard"
	"github.com/plan-dev/plan/dataplane/ppipe"
	"github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/sim"
)

// Case is one load point: a deployment, its policy and its arrivals. Run builds a fresh
// policy and simulation each time, so a case can be run repeatedly.
type Case struct {
	// Units is the case's N: GPUs (PPipe, CascadeServe, DyOrc), workers (PARD) or
	// instances (QLM); Unit names it.
	Units int
	Unit  string
	Dep   *dataplane.Deployment
	// Tweak, when set, adjusts each run's policy before the run (a benchmark's variant).
	Tweak func(dataplane.Policy)

	newPolicy func() (dataplane.Policy, error)
	sources   func() ([]sim.Source, error)
	opts      sim.Options
	// retain keeps every request in the engine's tables (no compaction): the cost a run
	// pays without it (ModeBusyUntilRetain).
	retain bool
}

// Run simulates the case once and returns the finished simulation (its engine counts the
// events; it holds only the requests still in flight, unless the case retains them all).
func (c *Case) Run() (*sim.Sim, error) {
	s, err := c.Build()
	if err != nil {
		return nil, err
	}
	if _, err := s.Run(); err != nil {
		return nil, err
	}
	return s, nil
}

// Build makes one run of the case, not yet started (a test observes its engine first).
func (c *Case) Build() (*sim.Sim, error) {
	p, err := c.newPolicy()
	if err != nil {
		return nil, err
	}
	if c.Tweak != nil {
		c.Tweak(p)
	}
	srcs, err := c.sources()
	if err != nil {
		return nil, err
	}
	opts := c.opts
	if !c.retain {
		// As every sweep's load point runs (sim.RunPoint): the engine forgets finished
		// requests, so memory, and the collector's scan of it, stays flat in N.
		sim.CompactAsSweeps(&opts)
	}
	return sim.New(c.Dep, p, srcs, opts)
}

// PPipe modes: the reservation dispatcher busy-until (the default), in interval mode, and
// busy-until with every request retained (no engine compaction, which every other case
// does as the sweeps do).
const (
	ModeBusyUntil       = "busy-until"
	ModeInterval        = "interval"
	ModeBusyUntilRetain = "busy-until-retain"
)

// PPipe is the PPipe fixture planJSON (hc1-100: 75 P4 + 25 L4) scaled k-fold
// (ppipe.ScaledDeployment) at load 0.9 for dur (0: 30 simulated seconds), built as the
// sweep builds a load point: one seeded source per application, tables presized.
func PPipe(secs *formats.SectionSet, planJSON []byte, mode string, k int, dur dataplane.Time) (*Case, error) {
	p, err := formats.DecodeInto[*formats.Plan]("hc1-100.json", planJSON, secs)
	if err != nil {
		return nil, err
	}
	dep, err := ppipe.ScaledDeployment(p, k)
	if err != nil {
		return nil, err
	}
	pc := dataplane.Config{Policy: ppipe.DefaultPolicy}
	switch mode {
	case ModeBusyUntil, ModeBusyUntilRetain:
	case ModeInterval:
		pc.Params = map[string]string{"interval": "true"}
	default:
		return nil, fmt.Errorf("simscale: ppipe mode %q: want %s, %s or %s", mode, ModeBusyUntil, ModeInterval, ModeBusyUntilRetain)
	}
	dur = orDefault(dur, 30*dataplane.Second)
	const load, seed = 0.9, 1
	spec, _ := sim.ParseArrival("poisson")
	reg := ppipe.Registry()
	c := &Case{Units: len(dep.Topo.GPUs), Unit: "gpus", Dep: dep, retain: mode == ModeBusyUntilRetain,
		newPolicy: func() (dataplane.Policy, error) { return reg.New(dep, pc, "") }}
	c.sources = func() ([]sim.Source, error) {
		srcs := make([]sim.Source, len(dep.Apps))
		for a := range dep.Apps {
			var err error
			if srcs[a], err = spec.New(dep.Apps[a].RateRPS*load, dep.Apps[a].Name, sim.PointSeed(seed, load, a)); err != nil {
				return nil, err
			}
		}
		return srcs, nil
	}
	c.opts = sim.Options{Duration: dur, Seed: sim.PointSeed(seed, load, -1), ExpectedRequests: expected(dep, load, dur)}
	return c, nil
}

// CascadeBase is how many copies of the golden cascade plan (2 V100s, 6 replicas) the 1×
// point serves: 16 GPUs, so that a per-event cost linear in the GPUs shows against the
// per-request work at 4× and 16×.
const CascadeBase = 8

// Cascade is the golden cascade plan planJSON scaled CascadeBase × k-fold
// (cascade.ScaledDeployment) under Poisson arrivals at half the scaled qps_max for dur (0: 2
// simulated seconds), run by policy pol (cascade.PolicyGears, cascade.PolicyCocktail, ...).
func Cascade(secs *formats.SectionSet, planJSON []byte, pol string, k int, dur dataplane.Time) (*Case, error) {
	p, err := formats.DecodeInto[*formats.Plan]("golden-plan.json", planJSON, secs)
	if err != nil {
		return nil, err
	}
	dep, err := cascade.ScaledDeployment(p, CascadeBase*k)
	if err != nil {
		return nil, err
	}
	dur = orDefault(dur, 2*dataplane.Second)
	rate := dep.Apps[0].RateRPS * 0.5
	spec, _ := sim.ParseArrival("poisson")
	return &Case{Units: len(dep.Topo.GPUs), Unit: "gpus", Dep: dep,
		newPolicy: func() (dataplane.Policy, error) {
			return cascade.Registry().New(dep, dataplane.Config{Policy: pol}, cascade.PolicyGears)
		},
		sources: func() ([]sim.Source, error) {
			src, err := spec.New(rate, dep.Apps[0].Name, 1)
			return []sim.Source{src}, err
		},
		opts: sim.Options{Duration: dur, Seed: 1, ExpectedRequests: expected(dep, 0.5, dur)},
	}, nil
}

// PARD is the three-module pipeline of pard.ScaledPipeline at k times its workers and load
// 0.9 of its capacity for dur (0: 10 simulated seconds), run by policy pol ("pard" or the
// FIFO baseline "none").
func PARD(pol string, k int, dur dataplane.Time) (*Case, error) {
	dep, err := pard.ScaledPipeline(k, 0.9)
	if err != nil {
		return nil, err
	}
	spec, _ := sim.ParseArrival("poisson")
	dur = orDefault(dur, 10*dataplane.Second)
	return &Case{Units: len(dep.Topo.Workers), Unit: "workers", Dep: dep,
		newPolicy: func() (dataplane.Policy, error) { return pard.NewPolicy(dataplane.Config{Policy: pol}) },
		sources: func() ([]sim.Source, error) {
			src, err := spec.New(dep.Apps[0].RateRPS, dep.Apps[0].Name, 1)
			return []sim.Source{src}, err
		},
		opts: sim.Options{Duration: dur, Seed: 1, ExpectedRequests: expected(dep, 1, dur)},
	}, nil
}

// QLMBase is the number of instances of the QLM 1× point.
const QLMBase = 8

// QLM is qlm.MixedDeployment at QLMBase × k instances and the same per-instance load for
// dur (0: 10 simulated seconds), run by policy pol (qlm.PolicyQLM or the vLLM baseline
// qlm.PolicyFCFS).
func QLM(pol string, k int, dur dataplane.Time) (*Case, error) {
	dep, err := qlm.MixedDeployment(QLMBase*k, 1)
	if err != nil {
		return nil, err
	}
	dur = orDefault(dur, 10*dataplane.Second)
	return &Case{Units: len(dep.Topo.Workers), Unit: "instances", Dep: dep,
		newPolicy: func() (dataplane.Policy, error) {
			// admit=all: the engine's scaling as measured before the admission judge
			// (dataplane/llm's Judge) existed, every request admitted as in the paper.
			return qlm.Registry().New(dep, dataplane.Config{Policy: pol, Params: map[string]string{"admit": "all"}}, qlm.PolicyQLM)
		},
		sources: appSources(dep, 1),
		opts:    sim.Options{Duration: dur, Seed: 1, ExpectedRequests: expected(dep, 1, dur)},
	}, nil
}

// DyOrc is the MIX workload workloadJSON (testdata/dyorc/workload.json) on 8k A800s
// (dyorc.SpreadDeployment) at k times its rates (every application at least 0.5/s) for dur
// (0: 60 simulated seconds), run by policy pol ("dyorc" or "dyorc-ray"): half the per-GPU
// load of the package's tests, at whose load the queues grow over a minute and the cost
// per event with them.
func DyOrc(secs *formats.SectionSet, workloadJSON []byte, pol string, k int, dur dataplane.Time) (*Case, error) {
	doc, err := formats.Decode("workload.json", workloadJSON, secs)
	if err != nil {
		return nil, err
	}
	wl, ok := doc.(*formats.Workload)
	if !ok {
		return nil, fmt.Errorf("simscale: workload.json: not a workload")
	}
	w, err := dyorc.Compile(dyorcsec.WorkflowsOf(wl))
	if err != nil {
		return nil, err
	}
	dep, err := dyorc.SpreadDeployment(w, 8*k)
	if err != nil {
		return nil, err
	}
	sp, ok := dyorc.Registry().Lookup(pol)
	if !ok {
		return nil, fmt.Errorf("simscale: no dyorc policy %q", pol)
	}
	spec, _ := sim.ParseArrival("poisson")
	dur = orDefault(dur, 60*dataplane.Second)
	var rate float64
	for a := range dep.Apps {
		rate += max(dep.Apps[a].RateRPS, 0.5) * float64(k)
	}
	return &Case{Units: 8 * k, Unit: "gpus", Dep: dep,
		newPolicy: func() (dataplane.Policy, error) { return sp.New(dataplane.Config{Policy: pol}) },
		sources: func() ([]sim.Source, error) {
			var srcs []sim.Source
			for a := range dep.Apps {
				s, err := spec.New(max(dep.Apps[a].RateRPS, 0.5)*float64(k), dep.Apps[a].Name, uint64(a)+1)
				if err != nil {
					return nil, err
				}
				srcs = append(srcs, s)
			}
			return srcs, nil
		},
		opts: sim.Options{Duration: dur, Seed: 1, Jitter: 0.05, ExpectedRequests: int(rate*float64(dur)/1e6*1.1 + 1024)},
	}, nil
}

// expected is the number of arrivals to presize for, as a sweep's load point does: every
// application's planned rate × load over dur, plus a tenth and a margin.
func expected(dep *dataplane.Deployment, load float64, dur dataplane.Time) int {
	var rps float64
	for a := range dep.Apps {
		rps += dep.Apps[a].RateRPS * load
	}
	return int(rps*float64(dur)/1e6*1.1 + 1024)
}

// appSources is one Poisson source per application at its planned rate × scale, application
// a seeded a+1.
func appSources(dep *dataplane.Deployment, scale float64) func() ([]sim.Source, error) {
	spec, _ := sim.ParseArrival("poisson")
	return func() ([]sim.Source, error) {
		var srcs []sim.Source
		for a := range dep.Apps {
			s, err := spec.New(dep.Apps[a].RateRPS*scale, dep.Apps[a].Name, uint64(a)+1)
			if err != nil {
				return nil, err
			}
			srcs = append(srcs, s)
		}
		return srcs, nil
	}
}

// Name is a case's benchmark name, "POLICY/UNIT=N" (BenchmarkSimScale's sub-benchmarks).
func (c *Case) Name(policy string) string {
	return fmt.Sprintf("%s/%s=%d", strings.TrimSpace(policy), c.Unit, c.Units)
}

func orDefault(d, def dataplane.Time) dataplane.Time {
	if d > 0 {
		return d
	}
	return def
}
