// Package conformance is the harness every runtime policy runs through (DESIGN.md "Systems
// as plug-ins"): each registered policy, on small random deployments of the kind it serves,
// under several arrival patterns, in the simulator. It asserts the engine contract's
// invariants — every accepted request finishes exactly once (completed, late, or dropped
// with a reason), time never runs backwards, no worker runs two batches at once, no
// duration is negative — and records every decision (Nomad's scheduler harness) so a test
// can look at what a policy decided. New systems get it by registering their policies and a
// Sample deployment generator in internal/systems.
package conformance

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/internal/system"
	"github.com/plan-dev/plan/internal/systems"
	"github.com/plan-dev/plan/sim"
)

// Case is one conformance run.
type Case struct {
	System string
	Policy string
	// Seed draws the deployment, the arrivals and the jitter.
	Seed uint64
	// Pattern is an arrival process sim.ParseArrival understands (poisson, bursty:CV, mmpp).
	Pattern string
	// Load scales the deployment's planned rates.
	Load float64
	// Duration is the arrival window (virtual time).
	Duration dataplane.Time
	// Jitter is the relative execution noise.
	Jitter float64
	// Fail, when FailAt > 0, fails worker FailWorker (modulo the sampled deployment's workers)
	// at FailAt and brings it back at FailUntil (0 = never): every invariant must still hold.
	FailWorker        int
	FailAt, FailUntil dataplane.Time
}

// Decision is one recorded policy call: the event it saw and what it decided.
type Decision struct {
	Now       dataplane.Time
	Event     dataplane.EventKind
	Decisions []dataplane.DecisionKind
}

// Result is what a run did: the recorded decisions and the request outcomes.
type Result struct {
	Decisions []Decision
	Outcomes  map[dataplane.Outcome]int
	Requests  int
}

// ErrViolation marks a broken invariant.
var ErrViolation = errors.New("conformance violation")

func violation(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrViolation, fmt.Sprintf(format, a...))
}

// Policies lists (system, policy) pairs of every in-tree policy whose system can sample
// deployments, in a stable order.
func Policies() [][2]string {
	var out [][2]string
	for _, s := range systems.InTree() {
		if s.Sample == nil {
			continue
		}
		for _, p := range s.Policies {
			out = append(out, [2]string{s.Name, p.Name})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i][0] != out[j][0] {
			return out[i][0] < out[j][0]
		}
		return out[i][1] < out[j][1]
	})
	return out
}

// Run executes c and checks every invariant. A policy may refuse a sampled deployment at
// attach time (an error from the policy's Attach, e.g. a plan shape it does not serve);
// that is not a violation and Run returns (nil, nil).
func Run(c Case) (*Result, error) {
	sys, ok := systems.ByName(c.System)
	if !ok || sys.Sample == nil {
		return nil, fmt.Errorf("system %q has no sample deployments", c.System)
	}
	return run(sys, c)
}

func run(sys system.System, c Case) (*Result, error) {
	rng := rand.New(rand.NewPCG(c.Seed, 0xc0f0))
	dep := sys.Sample(rng)
	if err := dep.Validate(); err != nil {
		return nil, fmt.Errorf("%s.Sample: invalid deployment: %w", sys.Name, err)
	}
	reg := dataplane.NewRegistry(sys.Policies...)
	pol, err := reg.New(dep, dataplane.Config{Policy: c.Policy}, "")
	if err != nil {
		return nil, err
	}
	spec, err := sim.ParseArrival(c.Pattern)
	if err != nil {
		return nil, err
	}
	srcs := make([]sim.Source, len(dep.Apps))
	for a := range dep.Apps {
		rate := dep.Apps[a].RateRPS * c.Load
		if !(rate > 0) {
			continue
		}
		if srcs[a], err = spec.New(rate, dep.Apps[a].Name, c.Seed+uint64(a)); err != nil {
			return nil, err
		}
	}
	res := &Result{Outcomes: map[dataplane.Outcome]int{}}
	finished := map[dataplane.ReqID]int{}
	var lastFinish dataplane.Time
	var bad error
	note := func(err error) {
		if bad == nil {
			bad = err
		}
	}
	var lastNow dataplane.Time
	opts := sim.Options{
		Duration: c.Duration, Seed: c.Seed, Jitter: c.Jitter,
		Observe: func(now dataplane.Time, ev *dataplane.Event, ds []dataplane.Decision) {
			if now < lastNow {
				note(violation("time ran backwards: event %v at %d after %d", ev.Kind, now, lastNow))
			}
			lastNow = now
			d := Decision{Now: now, Event: ev.Kind}
			for _, x := range ds {
				d.Decisions = append(d.Decisions, x.Kind)
				if x.Kind == dataplane.DDrop && x.Reason == "" {
					note(violation("request %d dropped without a reason", x.Req))
				}
			}
			res.Decisions = append(res.Decisions, d)
		},
		OnFinish: func(now dataplane.Time, r *dataplane.Request) {
			finished[r.ID]++
			if finished[r.ID] > 1 {
				note(violation("request %d finished %d times", r.ID, finished[r.ID]))
			}
			if now < lastFinish {
				note(violation("finish of request %d at %d after a finish at %d", r.ID, now, lastFinish))
			}
			lastFinish = now
			if r.Outcome == dataplane.Pending {
				note(violation("request %d finished while pending", r.ID))
			}
			if r.Outcome == dataplane.Dropped && r.Reason == "" {
				note(violation("request %d dropped without a reason", r.ID))
			}
			if r.Done < r.Arrival {
				note(violation("request %d done at %d before its arrival at %d", r.ID, r.Done, r.Arrival))
			}
		},
	}
	// Every run must drain: a policy that loses track of requests would otherwise tick for ever.
	opts.Horizon = 100*c.Duration + 600*dataplane.Second
	if c.FailAt > 0 && !dataplane.HandlesFailures(pol) {
		return nil, fmt.Errorf("%s: %w", c.Policy, dataplane.ErrNoFailover)
	}
	if c.FailAt > 0 && len(dep.Topo.Workers) > 0 {
		w := dataplane.WorkerID(c.FailWorker % len(dep.Topo.Workers))
		opts.Failures = []sim.Failure{{Worker: w, At: c.FailAt, Until: c.FailUntil}}
	}
	s, err := sim.New(dep, pol, srcs, opts)
	if err != nil {
		return nil, nil // the policy refused the deployment at attach time
	}
	if _, err := s.Run(); err != nil {
		return res, violation("engine error: %v", err)
	}
	if bad != nil {
		return res, bad
	}
	e := s.Engine
	for i := range e.Requests() {
		r := &e.Requests()[i]
		res.Requests++
		res.Outcomes[r.Outcome]++
		if r.Outcome == dataplane.Pending {
			return res, violation("request %d (app %d, arrived %d) never finished", r.ID, r.App, r.Arrival)
		}
		if finished[r.ID] != 1 {
			return res, violation("request %d finished %d times", r.ID, finished[r.ID])
		}
	}
	type span struct{ start, end dataplane.Time }
	busy := map[dataplane.WorkerID][]span{}
	for i := range e.Batches() {
		b := &e.Batches()[i]
		for h, hop := range b.Hops {
			if hop.Start < 0 || b.Lost {
				continue // dropped before this hop ran, or lost to the failed worker
			}
			if hop.End < hop.Start || hop.OutEnd < hop.OutStart {
				return res, violation("batch %d hop %d: negative duration (%d..%d, transfer %d..%d)", b.ID, h, hop.Start, hop.End, hop.OutStart, hop.OutEnd)
			}
			if hop.Start < b.Dispatched {
				return res, violation("batch %d hop %d started at %d before its dispatch at %d", b.ID, h, hop.Start, b.Dispatched)
			}
			busy[hop.Worker] = append(busy[hop.Worker], span{hop.Start, hop.End})
		}
	}
	for w, ss := range busy {
		sort.Slice(ss, func(i, j int) bool { return ss[i].start < ss[j].start })
		for i := 1; i < len(ss); i++ {
			if ss[i].start < ss[i-1].end {
				return res, violation("worker %d runs two batches at once: %d..%d and %d..%d", w, ss[i-1].start, ss[i-1].end, ss[i].start, ss[i].end)
			}
		}
	}
	return res, nil
}
