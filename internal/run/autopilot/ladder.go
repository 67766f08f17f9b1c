package autopilot

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/plan-dev/plan/dataplane"
	ap "github.com/plan-dev/plan/dataplane/autopilot"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
	pap "github.com/plan-dev/plan/planner/autopilot"
	"github.com/plan-dev/plan/serve"
	serveap "github.com/plan-dev/plan/serve/autopilot"
)

// solver is a re-solver that also describes plans for the loop.
type solver interface {
	ap.Solver
	Candidate(p *formats.Plan) (ap.Candidate, error)
}

// newLadder is the autopilot's solver for plan: its system's re-solve on shrunken clusters
// (objective throughput), or for the forecast rates (cost: a plan solved with --objective
// cost, whose fleet the re-solve prices). The flag and the plan's objective must agree.
func newLadder(reg *systems.Registry, plan *formats.Plan, dep *dataplane.Deployment, a *Flags) (solver, error) {
	s, err := reg.ForPlan(plan)
	if err != nil {
		return nil, run.UsageError(err)
	}
	ck := system.CheckerOf(s)
	if ck == nil {
		return nil, run.UsageErrorf("--autopilot: system %s cannot re-solve its plans", s.Name())
	}
	// A system without a capacity model states its capacity in its planned rates
	// (system.Sizing): the ladder reads those.
	var capacity func(*formats.Plan, *dataplane.Deployment) (map[string]float64, error)
	if sz, ok := s.(system.Sizing); ok {
		capacity = sz.Capacity
	}
	own := "throughput"
	if plan.Fleet != nil {
		own = "cost"
	}
	if a.Objective != "" && a.Objective != own {
		return nil, run.UsageErrorf("--autopilot-objective %s conflicts with the plan's objective %s (solve it with --objective %s, or leave --autopilot-objective out)", a.Objective, own, a.Objective)
	}
	names := appNames(dep)
	resolve := func(ctx context.Context, p *formats.Plan) (*formats.Plan, error) {
		return ck.Resolve(ctx, p, a.SolveLimit)
	}
	deploy := func(p *formats.Plan) (*dataplane.Deployment, error) {
		d, _, err := reg.Deploy(p)
		return d, err
	}
	if pap.HasClasses(plan) && own != "cost" {
		// QLM: a rung plans its share of the llm_classes' demand (planner/autopilot classes.go).
		resolve = pap.ClassResolve(plan, resolve)
	}
	if own == "cost" {
		r, err := pap.NewRateSolver(plan, names, resolve, deploy)
		if err != nil {
			return nil, run.UsageErrorf("--autopilot-objective cost: %v", err)
		}
		r.SetCapacity(capacity)
		return r, nil
	}
	l, err := pap.NewLadder(plan, names, a.Steps, resolve, deploy)
	if err != nil {
		return nil, run.UsageErrorf("--autopilot: %v", err)
	}
	l.Capacity = capacity
	return l, nil
}

func appNames(dep *dataplane.Deployment) []string {
	names := make([]string, len(dep.Apps))
	for i, x := range dep.Apps {
		names[i] = x.Name
	}
	return names
}

// ForServe adds the autopilot front end to opts when --autopilot is given (nil otherwise):
// given are the flags set on the command line (Flags.CheckGiven). The caller starts it once
// the server runs.
func ForServe(reg *systems.Registry, a Flags, given []string, plan *formats.Plan, dep *dataplane.Deployment, opts *serve.Options) (*serveap.Autopilot, error) {
	if err := a.CheckGiven(given, true); err != nil || !a.Enabled() {
		return nil, err
	}
	cfg, err := a.Config()
	if err != nil {
		return nil, err
	}
	ladder, err := newLadder(reg, plan, dep, &a)
	if err != nil {
		return nil, err
	}
	pilot := serveap.New(serveap.Options{Loop: cfg, Solver: ladder, Describe: ladder.Candidate,
		Apps: appNames(dep), SolveTimeout: 2 * a.SolveLimit * time.Duration(a.Steps)})
	opts.Frontends = append(slices.Clone(opts.Frontends), pilot)
	return pilot, nil
}

// recordingLadder remembers every plan the ladder handed the loop, by digest, so the
// report can say what a chosen plan was predicted to serve (its capacity), which the
// loop's decision log does not carry.
type recordingLadder struct {
	solver
	mu   sync.Mutex
	seen map[string]ap.Candidate
}

func newRecordingLadder(l solver) *recordingLadder {
	return &recordingLadder{solver: l, seen: map[string]ap.Candidate{}}
}

func (r *recordingLadder) note(c ap.Candidate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.Digest != "" {
		r.seen[c.Digest] = c
	}
}

func (r *recordingLadder) Solve(ctx context.Context, d ap.Demand) (ap.Candidate, error) {
	c, err := r.solver.Solve(ctx, d)
	if err == nil {
		r.note(c)
	}
	return c, err
}

func (r *recordingLadder) Candidate(p *formats.Plan) (ap.Candidate, error) {
	c, err := r.solver.Candidate(p)
	if err == nil {
		r.note(c)
	}
	return c, err
}

func (r *recordingLadder) lookup(digest string) (ap.Candidate, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.seen[digest]
	return c, ok
}
