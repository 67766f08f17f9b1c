// Package dyorcsys assembles the DyOrc system for the registry: the placement MILP
// (planner/dyorc), the speculative scheduler with its baselines (dataplane/dyorc), the plan
// checker, `plan bench dyorc`, the exporters (export/dyorc) and the workflow endpoint of `plan
// serve` (serve/workflow).
package dyorcsys

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/bench"
	"github.com/plan-dev/plan/bench/dyorcbench"
	"github.com/plan-dev/plan/dataplane"
	dpd "github.com/plan-dev/plan/dataplane/dyorc"
	xdyorc "github.com/plan-dev/plan/export/dyorc"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/internal/system"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/dyorc"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/serve/workflow"
)

// System returns the DyOrc system.
func System() system.System {
	return system.System{
		Name:             "dyorc",
		Doc:              "DyOrc: speculative scheduling of dynamic ML workflows (Markov prediction, DP placement, proactive loading)",
		WorkloadSections: []string{"workflows"},
		Strategies:       []string{"dyorc"},
		NewPlanner:       func() planner.Planner { return &Planner{} },
		Render:           Render,
		PlanSection:      dpd.Kind,
		// DyOrc validates and cross-checks its typed sections itself (issue 29 item 3).
		Sections: system.Sections{Plan: dyorcsec.Plan{}, Workload: []formats.Section{dyorcsec.Workload{}}},
		HasPlan:  func(p *formats.Plan) bool { return p.DyOrc != nil },
		Deploy: func(p *formats.Plan) (*dataplane.Deployment, string, error) {
			d, err := dpd.FromPlan(p)
			pol := p.DyOrc.Policy
			if pol == "" {
				pol = "dyorc"
			}
			return d, pol, err
		},
		Policies: dpd.Policies(),
		Sample:   dpd.Sample,
		Checker:  Checker{},
		Benches:  []func() bench.Bench{func() bench.Bench { return &dyorcbench.Command{} }},
		// plan export: Triton, KServe and Ray Serve files (export/dyorc).
		Exporters: xdyorc.Exporters(),
		// plan serve: POST /v1/workflows/{app}/run (serve/workflow).
		Frontends: []func() serve.Frontend{workflow.New},
	}
}

// Planner places workflow services: its flags fill dyorc.Flags, which the plan records (the
// gap from plan solve's --gap).
type Planner struct {
	f dyorc.Flags
}

// Flags implements planner.Planner.
func (o *Planner) Flags(f *pflag.FlagSet) {
	f.StringVar(&o.f.Policy, "runtime-policy", dyorc.DefaultFlags().Policy, "the runtime policy the plan names as its default (plan simulate/serve --policy overrides it)")
}

// Solve implements planner.Planner.
func (o *Planner) Solve(ctx context.Context, in planner.Inputs, s planner.Settings) (*formats.Plan, error) {
	if s.SLO > 0 {
		return nil, &planner.InputError{Problems: []string{"--slo: DyOrc apps take their SLO from the workload (workflows.apps.*.slo)"}}
	}
	if s.Strategy != "" && s.Strategy != "dyorc" {
		return nil, &planner.InputError{Problems: []string{fmt.Sprintf("--strategy: %q: dyorc plans have one strategy, dyorc", s.Strategy)}}
	}
	opts := dyorc.Options{TimeLimit: s.TimeLimit, Gap: s.Gap,
		Deterministic: s.Deterministic, Policy: o.f.Policy, ToolVersion: s.ToolVersion, Progress: s.Progress}
	if s.Objective == planner.ObjectiveCost {
		return dyorc.SolveCost(ctx, in.Workload, in.Cluster, in.Refs, opts)
	}
	return dyorc.Solve(ctx, in.Workload, in.Cluster, in.Refs, opts)
}

// Render prints the placement per GPU and the replicas per service.
func Render(p *formats.Plan) []planner.Table {
	t := planner.Table{Header: []string{"SERVICE", "GPU", "REPLICAS", "MAX_BATCH"}}
	for _, d := range p.DyOrc.Deployments {
		t.Rows = append(t.Rows, []string{d.Service, d.GPU, strconv.Itoa(d.Replicas), strconv.Itoa(d.MaxBatch)})
	}
	g := planner.Table{Header: []string{"GPU", "SERVICES"}}
	for _, pl := range p.DyOrc.Placement {
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
			a.Rows = append(a.Rows, []string{n, fmt.Sprintf("%.4f", loads[n]), fmt.Sprintf("%.4f", p.Provenance.Gap)})
		}
	}
	return []planner.Table{t, g, a}
}

// Checker checks dyorc plans.
type Checker struct{}

// Verify implements planner.Checker.
func (Checker) Verify(p *formats.Plan) ([]string, string) {
	return dyorc.Verify(p), fmt.Sprintf("dyorc plan, %d service deployment(s) on %d GPU(s): GPUs exist, memory per GPU, every service placed, replicas match the placement, max_batch within the service's max_batch", len(p.DyOrc.Deployments), len(p.DyOrc.Placement))
}

// Compare implements planner.Checker (per application).
func (Checker) Compare(got, ref *formats.Plan, tol float64) []planner.Check {
	return dyorc.Compare(got, ref, tol)
}

// Resolve implements planner.Checker.
func (Checker) Resolve(ctx context.Context, p *formats.Plan, timeLimit time.Duration) (*formats.Plan, error) {
	return dyorc.Resolve(ctx, p, timeLimit)
}
