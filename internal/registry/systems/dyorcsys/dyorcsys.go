// Package dyorcsys assembles the DyOrc system for the registry: the placement MILP
// (planner/dyorc), the speculative scheduler with its baselines (dataplane/dyorc), the plan
// checker, `plan bench dyorc`, the exporters (export/dyorc) and the workflow endpoint of `plan
// serve` (serve/workflow).
package dyorcsys

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/plan-dev/plan/bench/dyorcbench"
	"github.com/plan-dev/plan/dataplane"
	dpd "github.com/plan-dev/plan/dataplane/dyorc"
	"github.com/plan-dev/plan/export"
	xdyorc "github.com/plan-dev/plan/export/dyorc"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/dyorc"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/serve/workflow"
)

// ErrNoSimulator is the system built with a handle without Predict (system.Handle.Predict):
// planner/dyorc falls back to its fitted formula without one, which would size the system's
// plans by something other than the prediction `plan solve` judges them by, so the system's
// planner, checker and capacity refuse to run without it.
var ErrNoSimulator = errors.New("dyorcsys: no simulator given (system.Handle.Predict; the registry passes dyorcsim.PredictAtRates)")

// New returns the DyOrc system (system.Factory), its planner, checker and capacity sizing
// with the handle's prediction (system.Handle.Predict, dyorcsim.PredictAtRates in the
// registry: dyorc.Capacity, --min-gpus, --objective cost). It implements every extension
// point but ONNXCutting (each service runs a whole model).
func New(h system.Handle) system.Plugin { return dyorcSystem{sim: h.Predict} }

type dyorcSystem struct {
	// sim sizes DyOrc plans (Handle.Predict).
	sim dyorc.Simulator
}

func (dyorcSystem) Name() string { return "dyorc" }

func (dyorcSystem) Doc() string {
	return "DyOrc: speculative scheduling of dynamic ML workflows (Markov prediction, DP placement, proactive loading)"
}

// Sections are DyOrc's sections, registered whole (formats/sections).
func (dyorcSystem) Sections() system.Sections {
	return system.Sections{Plan: dyorcsec.PlanSection, Workload: []formats.Section{dyorcsec.WorkloadSection}}
}

func (dyorcSystem) DefaultWorkload() bool { return false }

func (dyorcSystem) Strategies() []string { return []string{"dyorc"} }

func (s dyorcSystem) NewPlanner() planner.Planner {
	return &Planner{f: dyorc.DefaultFlags(), sim: s.sim}
}

func (dyorcSystem) Render(p *formats.Plan) []planner.Table { return Render(p) }

func (dyorcSystem) Deploy(p *formats.Plan) (*dataplane.Deployment, string, error) {
	d, err := dpd.FromPlan(p)
	pol := dyorcsec.PlanOf(p).Policy
	if pol == "" {
		pol = "dyorc"
	}
	return d, pol, err
}

func (dyorcSystem) Policies() []dataplane.PolicySpec { return dpd.Policies() }

func (dyorcSystem) Sample(r *rand.Rand) *dataplane.Deployment { return dpd.Sample(r) }

func (s dyorcSystem) Checker() planner.Checker { return Checker{Sim: s.sim} }

// Capacity: the autopilot sizes a plan by its capacity in simulation (dyorc.Capacity).
func (s dyorcSystem) Capacity(p *formats.Plan, _ *dataplane.Deployment) (map[string]float64, error) {
	if s.sim == nil {
		return nil, ErrNoSimulator
	}
	return dyorc.Capacity(p, s.sim)
}

func (dyorcSystem) Benches() []func() benchapi.Bench {
	return []func() benchapi.Bench{func() benchapi.Bench { return &dyorcbench.Command{} }}
}

// Exporters: Triton, KServe and Ray Serve files (export/dyorc).
func (dyorcSystem) Exporters() []export.Exporter { return xdyorc.Exporters() }

// Frontends: POST /v1/workflows/{app}/run (serve/workflow).
func (dyorcSystem) Frontends() []serve.Frontend { return []serve.Frontend{workflow.New()} }

// Planner places workflow services: its options are dyorc.Flags, which the plan records
// (the gap from plan solve's --gap).
type Planner struct {
	f dyorc.Flags
	// sim sizes the plans (system.Handle.Predict).
	sim    dyorc.Simulator
	report []planner.Table
}

// Report implements planner.Reporter: the defaults the last solve took.
func (o *Planner) Report() []planner.Table { return o.report }

// Options implements planner.Planner.
func (o *Planner) Options() any { return &o.f }

// Solve implements planner.Planner.
func (o *Planner) Solve(ctx context.Context, in planner.Inputs, s planner.Settings) (*formats.Plan, error) {
	if o.sim == nil {
		return nil, ErrNoSimulator
	}
	if s.SLO > 0 {
		return nil, &planner.InputError{Problems: []string{"--slo: DyOrc apps take their SLO from the workload (workflows.apps.*.slo)"}}
	}
	if s.Strategy != "" && s.Strategy != "dyorc" {
		return nil, &planner.InputError{Problems: []string{fmt.Sprintf("--strategy: %q: dyorc plans have one strategy, dyorc", s.Strategy)}}
	}
	opts := dyorc.Options{TimeLimit: s.TimeLimit, Gap: cmp.Or(s.Gap, planner.DefaultGap),
		Deterministic: s.Deterministic, Policy: o.f.Policy, ToolVersion: s.ToolVersion, Progress: s.Progress, Sim: o.sim}
	if s.Objective == planner.ObjectiveCost {
		return dyorc.SolveCost(ctx, in.Workload, in.Cluster, in.Refs, opts)
	}
	if o.f.MinGPUs {
		return dyorc.SolveMinGPUs(ctx, in.Workload, in.Cluster, in.Refs, opts)
	}
	o.report = nil
	plan, err := dyorc.Solve(ctx, in.Workload, in.Cluster, in.Refs, opts)
	if err != nil {
		return nil, err
	}
	// The placement minimizes the busiest GPU's expected load (busy seconds per second at the
	// services' max batch): at 1 or more the apps' rates exceed what the cluster serves, and
	// the plan is the least overloaded one, not a plan that meets them. With
	// the load spread evenly (the shares are continuous) G·z GPUs' worth of work needs more
	// than G·z GPUs.
	if z := dyorcsec.PlanOf(plan).Params["expected_max_gpu_load"]; z >= 1 {
		g := 0
		for _, p := range in.Cluster.GPUs {
			g += p.Count
		}
		return nil, &planner.InputError{Problems: []string{fmt.Sprintf(
			"workload: workflows.apps: rate_rps: %s: the busiest of the cluster's %d GPUs has an expected load of %.2f (busy seconds per second at the services' max batch; it must stay below 1): about %d GPUs would carry these rates (add GPUs or lower the apps' rate_rps)",
			planner.ErrInfeasible, g, z, int(math.Floor(z*float64(g)))+1)}}
	}
	// The defaults it took, printed as the deployment search prints its own and recorded.
	plan.Provenance.Defaults = defaultNotes(o.f)
	o.report = planner.NoteTable(plan.Provenance.Defaults)
	return plan, nil
}

// Render prints the placement per GPU and the replicas per service.
func Render(p *formats.Plan) []planner.Table {
	t := planner.Table{Header: []string{"SERVICE", "GPU", "REPLICAS", "MAX_BATCH"}}
	for _, d := range dyorcsec.PlanOf(p).Deployments {
		t.Rows = append(t.Rows, []string{d.Service, d.GPU, strconv.Itoa(d.Replicas), strconv.Itoa(d.MaxBatch)})
	}
	g := planner.Table{Header: []string{"GPU", "SERVICES"}}
	for _, pl := range dyorcsec.PlanOf(p).Placement {
		g.Rows = append(g.Rows, []string{strconv.Itoa(pl.GPU), strings.Join(pl.Services, ",")})
	}
	a := planner.Table{Header: []string{"APP", "BUSIEST_LOAD_PER_REPLICA", "MILP_GAP"}}
	if loads, err := dyorc.AppLoad(p); err == nil {
		names := make([]string, 0, len(loads))
		for n := range loads {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			a.Rows = append(a.Rows, []string{n, fmt.Sprintf("%.4f", loads[n]), fmt.Sprintf("%.4f", formats.Num(p.Provenance.Gap))})
		}
	}
	return []planner.Table{t, g, a}
}

// Checker checks dyorc plans; Resolve re-solves with Sim (system.Handle.Predict, required as for
// a solve).
type Checker struct {
	Sim dyorc.Simulator
}

// Verify implements planner.Checker.
func (Checker) Verify(p *formats.Plan) ([]string, string) {
	return dyorc.Verify(p), fmt.Sprintf("dyorc plan, %d service deployment(s) on %d GPU(s): GPUs exist, memory per GPU, every service placed, replicas match the placement, max_batch within the service's max_batch", len(dyorcsec.PlanOf(p).Deployments), len(dyorcsec.PlanOf(p).Placement))
}

// Compare implements planner.Checker (per application).
func (Checker) Compare(got, ref *formats.Plan, tol float64) []planner.Check {
	return dyorc.Compare(got, ref, tol)
}

// Resolve implements planner.Checker.
func (c Checker) Resolve(ctx context.Context, p *formats.Plan, timeLimit time.Duration) (*formats.Plan, error) {
	if c.Sim == nil {
		return nil, ErrNoSimulator
	}
	return dyorc.Resolve(ctx, p, timeLimit, c.Sim)
}
