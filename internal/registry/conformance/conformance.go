// Package conformance is the harness every runtime policy runs through (DESIGN.md "Systems
// as plug-ins"): each registered policy, on small random deployments of the kind it serves,
// under several arrival patterns, in the simulator. It asserts the engine contract's
// invariants — every accepted request finishes exactly once (completed, late, or dropped
// with a reason), time never runs backwards, no worker runs two batches at once, no
// duration is negative, a withdrawn request (Engine.Cancel) finishes as cancelled with one
// EvCancel and is never dispatched after it — and records every decision (Nomad's scheduler harness) so a test
// can look at what a policy decided. New systems get it by registering their policies and a
// Sample deployment generator in internal/registry/systems.
package conformance

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/internal/registry/systems"
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
	// CancelFraction, when > 0, withdraws that share of the requests at random times
	// between arrival and deadline (sim.Options.CancelFraction, seeded by Seed).
	CancelFraction float64
	// CompactEvery, when > 0, compacts the engine after every that many events, as a
	// long-running server does; Result.MaxLive then shows the live table stays bounded.
	CompactEvery int64
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
	// Cancelled counts the requests finished as cancelled (each got one EvCancel).
	Cancelled int
	// MaxLive is the most requests the engine's table held at once (all of them without
	// Compact).
	MaxLive int
}

// ErrViolation marks a broken invariant.
var ErrViolation = errors.New("conformance violation")

// ErrRefused marks a system whose policy refuses the system's own sample deployment: the
// case would otherwise pass with nothing run.
var ErrRefused = errors.New("policy refuses its system's sample deployment")

func violation(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrViolation, fmt.Sprintf(format, a...))
}

// Policies lists (system, policy) pairs of every in-tree policy whose system can sample
// deployments, in a stable order.
func Policies() [][2]string {
	var out [][2]string
	for _, sys := range systems.Default().Systems() {
		s, ok := sys.(system.Sampling)
		if !ok {
			continue
		}
		for _, p := range s.Policies() {
			out = append(out, [2]string{s.Name(), p.Name})
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

// Run executes c and checks every invariant. A policy that refuses its own system's sample
// deployment (an error from its Attach) fails with ErrRefused: a harness whose cases pass
// with nothing run proves nothing.
func Run(c Case) (*Result, error) {
	sys, ok := sampling(c.System)
	if !ok {
		return nil, fmt.Errorf("system %q has no sample deployments", c.System)
	}
	return run(sys, c)
}

// sampling is the in-tree system called name if it samples deployments (system.Sampling).
func sampling(name string) (system.Sampling, bool) {
	s, _ := systems.ByName(name)
	sys, ok := s.(system.Sampling)
	return sys, ok
}

func run(sys system.Sampling, c Case) (*Result, error) {
	rng := rand.New(rand.NewPCG(c.Seed, 0xc0f0))
	dep := sys.Sample(rng)
	if err := dep.Validate(); err != nil {
		return nil, fmt.Errorf("%s.Sample: invalid deployment: %w", sys.Name(), err)
	}
	reg := dataplane.NewRegistry(sys.Policies()...)
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
	k := &checker{res: &Result{Outcomes: map[dataplane.Outcome]int{}}}
	opts := sim.Options{
		Duration: c.Duration, Seed: c.Seed, Jitter: c.Jitter, CancelFraction: c.CancelFraction,
		CompactEvery: c.CompactEvery, Observe: k.observe, OnFinish: k.finish, OnCancel: k.cancel,
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
		return nil, fmt.Errorf("%s/%s: %w: %v", sys.Name(), c.Policy, ErrRefused, err)
	}
	k.eng = s.Engine
	if _, err := s.Run(); err != nil {
		if k.bad != nil {
			return k.res, k.bad // what the policy did wrong first, usually why the engine failed
		}
		return k.res, violation("engine error: %v", err)
	}
	if err := k.done(); err != nil {
		return k.res, err
	}
	return k.res, checkBatches(s.Engine)
}

// checker follows one run through the simulator's hooks. Requests are indexed by ID, which
// the engine hands out densely from 0, so the checks survive Compact.
type checker struct {
	res     *Result
	eng     *dataplane.Engine
	bad     error
	lastNow dataplane.Time
	// lastFinish is the time of the latest Finish; arrived counts EvArrival.
	lastFinish dataplane.Time
	arrived    int
	// finished, evCancels: Finish calls and EvCancel deliveries per request; withdrawn:
	// Engine.Cancel took the request; asCancelled: it finished as cancelled.
	finished, evCancels    []int8
	withdrawn, asCancelled []bool
}

func (k *checker) note(err error) {
	if k.bad == nil {
		k.bad = err
	}
}

// grow makes the per-request tables cover id.
func (k *checker) grow(id dataplane.ReqID) {
	for int(id) >= len(k.finished) {
		k.finished = append(k.finished, 0)
		k.evCancels = append(k.evCancels, 0)
		k.withdrawn = append(k.withdrawn, false)
		k.asCancelled = append(k.asCancelled, false)
	}
}

func (k *checker) observe(now dataplane.Time, ev *dataplane.Event, ds []dataplane.Decision) {
	if now < k.lastNow {
		k.note(violation("time ran backwards: event %v at %d after %d", ev.Kind, now, k.lastNow))
	}
	k.lastNow = now
	if k.eng != nil {
		k.res.MaxLive = max(k.res.MaxLive, k.eng.HeldRequests())
	}
	switch ev.Kind {
	case dataplane.EvArrival:
		k.arrived++
	case dataplane.EvCancel:
		k.grow(ev.Req)
		if k.evCancels[ev.Req]++; k.evCancels[ev.Req] > 1 {
			k.note(violation("request %d got EvCancel %d times", ev.Req, k.evCancels[ev.Req]))
		}
	}
	d := Decision{Now: now, Event: ev.Kind}
	for _, x := range ds {
		d.Decisions = append(d.Decisions, x.Kind)
		if x.Kind == dataplane.DDrop && x.Reason == "" {
			k.note(violation("request %d dropped without a reason", x.Req))
		}
		reqs := x.Reqs
		if x.Kind == dataplane.DDrop || x.Kind == dataplane.DComplete {
			reqs = []dataplane.ReqID{x.Req}
		}
		for _, r := range reqs {
			if int(r) < len(k.evCancels) && r >= 0 && k.evCancels[r] > 0 {
				k.note(violation("policy decided %v of request %d after its EvCancel (on %v at %d)", x.Kind, r, ev.Kind, now))
			}
		}
	}
	k.res.Decisions = append(k.res.Decisions, d)
}

func (k *checker) finish(now dataplane.Time, r *dataplane.Request) {
	k.grow(r.ID)
	k.finished[r.ID]++
	k.res.Outcomes[r.Outcome]++
	if k.finished[r.ID] > 1 {
		k.note(violation("request %d finished %d times", r.ID, k.finished[r.ID]))
	}
	if now < k.lastFinish {
		k.note(violation("finish of request %d at %d after a finish at %d", r.ID, now, k.lastFinish))
	}
	k.lastFinish = now
	switch {
	case r.Outcome == dataplane.Pending:
		k.note(violation("request %d finished while pending", r.ID))
	case r.Outcome == dataplane.Dropped && r.Reason() == "":
		k.note(violation("request %d dropped without a reason", r.ID))
	case r.Done < r.Arrival:
		k.note(violation("request %d done at %d before its arrival at %d", r.ID, r.Done, r.Arrival))
	}
	if r.Reason() == dataplane.DropCancelled {
		// Withdrawn, which done checks (Finish of a queued request comes inside Cancel,
		// before OnCancel says it was withdrawn).
		k.asCancelled[r.ID] = true
		k.res.Cancelled++
	}
}

func (k *checker) cancel(now dataplane.Time, id dataplane.ReqID, withdrawn bool) {
	if id < 0 || int(id) >= k.arrived {
		if withdrawn {
			k.note(violation("Cancel withdrew request %d, which never arrived", id))
		}
		return
	}
	k.grow(id)
	switch {
	case withdrawn && k.finished[id] > 0 && !k.asCancelled[id]:
		k.note(violation("Cancel withdrew request %d, which had finished", id))
	case !withdrawn && k.finished[id] == 0:
		// Only a request withdrawn before (still held) may be refused while unfinished.
		if !k.withdrawn[id] {
			k.note(violation("Cancel refused request %d, which is pending", id))
		}
	}
	k.withdrawn[id] = k.withdrawn[id] || withdrawn
}

// done checks, once the run drained, that every request finished once, and every withdrawn
// one as cancelled with exactly one EvCancel.
func (k *checker) done() error {
	if k.bad != nil {
		return k.bad
	}
	k.res.Requests = k.arrived
	k.grow(dataplane.ReqID(k.arrived - 1))
	for id := range k.arrived {
		if k.finished[id] != 1 {
			return violation("request %d finished %d times", id, k.finished[id])
		}
		if k.withdrawn[id] != k.asCancelled[id] {
			return violation("request %d: withdrawn %v but finished as cancelled %v", id, k.withdrawn[id], k.asCancelled[id])
		}
		if k.withdrawn[id] && k.evCancels[id] != 1 {
			return violation("request %d was cancelled; its policy got %d EvCancel", id, k.evCancels[id])
		}
		if !k.withdrawn[id] && k.evCancels[id] != 0 {
			return violation("request %d got EvCancel but was never withdrawn", id)
		}
	}
	return nil
}

// checkBatches checks the batches the engine still holds (all of them without Compact): no
// negative duration, no hop before its dispatch, no worker running two batches at once.
func checkBatches(e *dataplane.Engine) error {
	type span struct{ start, end dataplane.Time }
	busy := map[dataplane.WorkerID][]span{}
	for i := range e.Batches() {
		b := &e.Batches()[i]
		for h, hop := range b.Hops {
			if hop.Start < 0 || b.Lost {
				continue // dropped before this hop ran, or lost to the failed worker
			}
			if hop.End < hop.Start || hop.OutEnd < hop.OutStart {
				return violation("batch %d hop %d: negative duration (%d..%d, transfer %d..%d)", b.ID, h, hop.Start, hop.End, hop.OutStart, hop.OutEnd)
			}
			if hop.Start < b.Dispatched {
				return violation("batch %d hop %d started at %d before its dispatch at %d", b.ID, h, hop.Start, b.Dispatched)
			}
			busy[hop.Worker] = append(busy[hop.Worker], span{hop.Start, hop.End})
		}
	}
	for w, ss := range busy {
		sort.Slice(ss, func(i, j int) bool { return ss[i].start < ss[j].start })
		for i := 1; i < len(ss); i++ {
			if ss[i].start < ss[i-1].end {
				return violation("worker %d runs two batches at once: %d..%d and %d..%d", w, ss[i-1].start, ss[i-1].end, ss[i].start, ss[i].end)
			}
		}
	}
	return nil
}
