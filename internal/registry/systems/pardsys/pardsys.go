// Package pardsys assembles the PARD system for the registry: pipeline provisioning
// (planner/pard), the proactive dropper with its baselines and ablations (dataplane/pard),
// the plan checker and `plan bench pard`.
package pardsys

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/plan-dev/plan/bench/pardbench"
	"github.com/plan-dev/plan/dataplane"
	dppard "github.com/plan-dev/plan/dataplane/pard"
	"github.com/plan-dev/plan/export"
	xpard "github.com/plan-dev/plan/export/pard"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/pardsec"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/pard"
)

// New returns the PARD system (system.Factory; it needs nothing of the handle). It
// implements every extension point but Serving and ONNXCutting.
func New(system.Handle) system.Plugin { return pardSystem{} }

type pardSystem struct{}

func (pardSystem) Name() string { return "pard" }

func (pardSystem) Doc() string {
	return "PARD: proactive request dropping and adaptive priority in multi-model pipelines"
}

// Sections are PARD's sections, registered whole (formats/sections); a failed solve's
// problems name the workload or cluster file that holds them.
func (pardSystem) Sections() system.Sections {
	return system.Sections{Plan: pardsec.PlanSection, Workload: []formats.Section{pardsec.WorkloadSection}, SolveErrors: solveErrors}
}

func (pardSystem) DefaultWorkload() bool { return false }

func (pardSystem) Strategies() []string { return []string{"pard"} }

func (pardSystem) NewPlanner() planner.Planner { return &Planner{f: pard.DefaultFlags()} }

func (pardSystem) Render(p *formats.Plan) []planner.Table { return Render(p) }

func (pardSystem) Deploy(p *formats.Plan) (*dataplane.Deployment, string, error) {
	d, err := dppard.FromPARDPlan(p)
	return d, pardsec.PlanOf(p).Policy, err
}

func (pardSystem) Policies() []dataplane.PolicySpec { return dppard.Policies() }

func (pardSystem) Sample(r *rand.Rand) *dataplane.Deployment { return dppard.Sample(r) }

func (pardSystem) Checker() planner.Checker { return Checker{} }

// Capacity: the autopilot sizes a plan solved with --fill by what its workers serve, and its
// re-solve fills each rung of the ladder; other plans report their rates.
func (pardSystem) Capacity(p *formats.Plan, _ *dataplane.Deployment) (map[string]float64, error) {
	return pard.AutopilotCapacity(p)
}

func (pardSystem) Exporters() []export.Exporter { return xpard.Exporters() }

func (pardSystem) Benches() []func() benchapi.Bench {
	return []func() benchapi.Bench{func() benchapi.Bench { return &pardbench.Command{} }}
}

// Planner provisions pipeline workloads: its options are pard.Flags, which the plan records.
type Planner struct {
	f      pard.Flags
	report []planner.Table
}

// Report implements planner.Reporter: the defaults the last solve took.
func (o *Planner) Report() []planner.Table { return o.report }

// Options implements planner.Planner.
func (o *Planner) Options() any { return &o.f }

// Solve implements planner.Planner.
func (o *Planner) Solve(ctx context.Context, in planner.Inputs, s planner.Settings) (*formats.Plan, error) {
	if s.SLO > 0 {
		return nil, &planner.InputError{Problems: []string{"--slo: PARD pipelines take their SLO from the workload (pipelines[].slo)"}}
	}
	pin := pard.Inputs{Workload: in.Workload, Cluster: in.Cluster, Refs: in.Refs}
	for _, p := range in.Profiles {
		pin.Profiles = append(pin.Profiles, *p)
	}
	plan, err := pard.Provision(ctx, pin, pard.Options{TimeLimit: s.TimeLimit, SLOFraction: o.f.SLOFraction, RateRPS: o.f.RateRPS,
		MaxBatch: o.f.MaxBatch, Policy: o.f.Policy, ToolVersion: s.ToolVersion, Objective: s.Objective, Fill: o.f.Fill})
	if err != nil && errors.Is(err, pard.ErrBadInput) && !errors.Is(err, planner.ErrInput) {
		return nil, inputError{err}
	}
	if err == nil && s.Deterministic {
		plan.Provenance.SolveMs = 0
	}
	o.report = nil
	if err == nil {
		// The defaults it took, printed as the deployment search prints its own and recorded.
		plan.Provenance.Defaults = defaultNotes(o.f, plan)
		o.report = planner.NoteTable(plan.Provenance.Defaults)
	}
	return plan, err
}

// Render prints the provisioning per module.
func Render(plan *formats.Plan) []planner.Table {
	t := planner.Table{Header: []string{"PIPELINE", "SLO", "RATE_RPS", "MODULE", "GPU", "BATCH", "WORKERS", "D(B)_MS"}}
	for _, a := range pardsec.PlanOf(plan).Apps {
		for _, m := range a.Modules {
			t.Rows = append(t.Rows, []string{a.Name, a.SLO.String(), fmt.Sprintf("%.1f", a.RateRPS), m.Name, m.GPU, strconv.Itoa(m.Batch), strconv.Itoa(m.Workers), fmt.Sprintf("%.1f", m.LatencyUs/1000)})
		}
	}
	return []planner.Table{t}
}

// Checker checks PARD plans.
type Checker struct{}

// Verify implements planner.Checker.
func (Checker) Verify(p *formats.Plan) ([]string, string) {
	n := 0
	for _, a := range pardsec.PlanOf(p).Apps {
		n += len(a.Modules)
	}
	return pard.Verify(p), fmt.Sprintf("pard plan, %d pipeline(s), %d module(s): models and profiled latencies, workers cover the rate, Σ2·d ≤ f·SLO on every path, GPUs per type", len(pardsec.PlanOf(p).Apps), n)
}

// Compare implements planner.Checker, per application: GPUs provisioned (fewer is the
// objective) and the rate covered.
func (Checker) Compare(got, ref *formats.Plan, tol float64) []planner.Check {
	if pardsec.PlanOf(ref) == nil {
		return []planner.Check{{Line: "reference is not a PARD plan"}}
	}
	name := func(a *pardsec.PARDApp) string { return a.Name }
	return planner.CompareByName("app", pardsec.PlanOf(got).Apps, pardsec.PlanOf(ref).Apps, name, func(g, r *pardsec.PARDApp) []planner.Check {
		gg, rg := pard.GPUs(*g), pard.GPUs(*r)
		return []planner.Check{
			planner.AtMost("gpus", r.Name, float64(gg), float64(rg), tol, 0,
				fmt.Sprintf("app %s: %d GPUs vs %d (tolerance %.2f%%)", r.Name, gg, rg, tol*100)),
			planner.AtLeast("rate_rps", r.Name, g.RateRPS, r.RateRPS, tol,
				fmt.Sprintf("app %s: provisioned for %.2f req/s vs %.2f (tolerance %.2f%%)", r.Name, g.RateRPS, r.RateRPS, tol*100)),
		}
	})
}

// Resolve implements planner.Checker.
func (Checker) Resolve(ctx context.Context, p *formats.Plan, timeLimit time.Duration) (*formats.Plan, error) {
	e := p.Provenance.Embedded
	if e == nil || e.Cluster == nil || e.Workload == nil {
		return nil, fmt.Errorf("provenance.embedded holds no inputs: cannot re-solve")
	}
	// Unrecorded options take Provision's defaults (zero values), as before they were typed.
	rec := pard.Flags{Policy: pardsec.PlanOf(p).Policy}
	if err := planner.ReadOptions(p.Provenance.Options, &rec); err != nil {
		return nil, &planner.InputError{Problems: []string{err.Error()}}
	}
	o := pard.Options{Policy: rec.Policy, Params: pardsec.PlanOf(p).Params, TimeLimit: timeLimit, SLOFraction: rec.SLOFraction,
		RateRPS: rec.RateRPS, MaxBatch: rec.MaxBatch, Objective: rec.Objective, Fill: rec.Fill}
	in := pard.Inputs{Workload: e.Workload, Cluster: e.Cluster, Profiles: e.Profiles}
	re, err := pard.Provision(ctx, in, o)
	if err == nil {
		re.Provenance.SolveMs = 0
	}
	return re, err
}

// inputError marks PARD's bad-input errors as planner.ErrInput without changing their text.
type inputError struct{ err error }

func (e inputError) Error() string   { return e.err.Error() }
func (e inputError) Unwrap() []error { return []error{planner.ErrInput, e.err} }
