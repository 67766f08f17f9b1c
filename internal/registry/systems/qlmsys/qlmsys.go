// Package qlmsys assembles QLM for the registry (Patke et al., "QLM"): the initial
// placement planner (planner/qlm), the LLM-instance data plane with QLM and its baselines
// (dataplane/qlm), the plan checker, `plan bench qlm`, the exporters (export/qlm) and the
// OpenAI-compatible endpoint of `plan serve` (serve/openai).
package qlmsys

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/plan-dev/plan/bench/qlmbench"
	"github.com/plan-dev/plan/dataplane"
	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/export"
	xqlm "github.com/plan-dev/plan/export/qlm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/llmdeploy"
	pq "github.com/plan-dev/plan/planner/qlm"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/serve/openai"
)

// New returns the QLM system (system.Factory), its planner and checker sizing with the
// handle's simulator (system.Handle.Point, sim.PoissonPoint in the registry): the planner
// sizes instances and checks its plans by simulation (planner/qlm's simcap.go). Required: a
// planner built without it fails its solves (pq.ErrNoSimulator). The instances' capacity
// probes run the handle's Probe where it gives one (sim.PoissonProbe: Point stopped once a
// class is certain to miss, the same verdicts sooner). It implements every
// extension point but ONNXCutting (each instance runs a whole model).
func New(h system.Handle) system.Plugin { return qlmSystem{sim: h.Point, probe: h.Probe} }

type qlmSystem struct {
	// sim is the simulator every solve, re-solve and capacity probe runs (Handle.Point).
	sim pq.PointSimulator
	// probe is the capacity probes' simulator (Handle.Probe; nil: sim).
	probe pq.PointSimulator
}

func (qlmSystem) Name() string { return "qlm" }

func (qlmSystem) Doc() string {
	return "QLM: LLM serving with request groups, virtual queues, an RCT estimator and a stochastic plan generator over continuous-batching instances"
}

// Sections: QLM's plan section (formats/sections/qlmsec); it plans the LLM classes, the
// registry's shared vocabulary (systems.Vocabulary), which it does not own.
func (qlmSystem) Sections() system.Sections {
	return system.Sections{Plan: qlmsec.PlanSection, Shared: []string{llmspec.WorkloadKey}}
}

func (qlmSystem) DefaultWorkload() bool { return false }

func (qlmSystem) Strategies() []string { return pq.Strategies }

func (s qlmSystem) NewPlanner() planner.Planner {
	return &Planner{f: pq.DefaultFlags(), sim: s.sim, probe: s.probe}
}

func (qlmSystem) Render(p *formats.Plan) []planner.Table { return Render(p) }

func (qlmSystem) Deploy(p *formats.Plan) (*dataplane.Deployment, string, error) {
	d, err := dq.FromPlan(p)
	return d, dq.PolicyQLM, err
}

func (qlmSystem) Policies() []dataplane.PolicySpec { return dq.Policies() }

func (qlmSystem) Sample(r *rand.Rand) *dataplane.Deployment { return dq.Sample(r) }

func (s qlmSystem) Checker() planner.Checker { return Checker{Sim: s.sim, Probe: s.probe} }

// Capacity: the autopilot sizes QLM plans by what their instances serve (planner/qlm
// capacity.go), not by the workload's rates the plan states.
func (qlmSystem) Capacity(p *formats.Plan, _ *dataplane.Deployment) (map[string]float64, error) {
	return pq.PlanCapacity(p)
}

func (qlmSystem) Benches() []func() benchapi.Bench {
	return []func() benchapi.Bench{func() benchapi.Bench { return &qlmbench.Command{} }}
}

// Exporters: Triton, KServe and Ray Serve files (export/qlm).
func (qlmSystem) Exporters() []export.Exporter { return xqlm.Exporters() }

// Frontends: the OpenAI-compatible API and the durable batch queue (serve/openai).
func (qlmSystem) Frontends() []serve.Frontend { return []serve.Frontend{openai.New(dq.Kind)} }

// Planner plans llm_classes workloads: its options are the --min-gpus and --search of
// pq.Flags (the strategy is plan solve's --strategy).
type Planner struct {
	f pq.Flags
	// sim is the simulator the solve sizes with (system.Handle.Point).
	sim pq.PointSimulator
	// probe is the capacity probes' simulator (system.Handle.Probe; nil: sim).
	probe pq.PointSimulator
	// report is the last solve's tables (Report).
	report []planner.Table
}

// Report implements planner.Reporter: the last deployment search's candidates, comparison
// fleets, engine flags and notes; without --search, the defaults the solve took.
func (o *Planner) Report() []planner.Table { return o.report }

// Options implements planner.Planner.
func (o *Planner) Options() any { return &o.f }

// Solve implements planner.Planner.
func (o *Planner) Solve(ctx context.Context, in planner.Inputs, s planner.Settings) (*formats.Plan, error) {
	// Only the cost solve replaces the classes' slo with --slo (pq.SolveCost); the
	// placement and the search plan for the workload's own SLOs, so a --slo there would be
	// taken and silently not used.
	if s.SLO > 0 && (s.Objective != planner.ObjectiveCost || o.f.Search) {
		return nil, &planner.InputError{Problems: []string{fmt.Sprintf(
			"--slo: %s: the qlm planner plans each class for its own slo (the workload's llm_classes[].slo, ttft_slo, tpot_slo); --slo replaces them only with --objective cost without --search: set slo in the workload, or leave --slo out", s.SLO)}}
	}
	if o.f.Quantizations != "" && !o.f.Search {
		return nil, &planner.InputError{Problems: []string{fmt.Sprintf("--search-quantization: %q: only with --search", o.f.Quantizations)}}
	}
	if o.f.Search {
		if s.Objective != planner.ObjectiveCost {
			return nil, &planner.InputError{Problems: []string{"--search: searches the least-cost fleet: give --objective cost"}}
		}
		// The search places instances itself (one model per instance, sized per model);
		// a placement strategy would be recorded but not used.
		if s.Strategy != "" && s.Strategy != pq.Strategies[0] {
			return nil, &planner.InputError{Problems: []string{fmt.Sprintf("--strategy: %q: not with --search, which places every model's instances itself", s.Strategy)}}
		}
		plan, tables, err := search(ctx, in, pq.Flags{Strategy: pq.Strategies[0], Objective: planner.ObjectiveCost, Search: true, Quantizations: o.f.Quantizations}, s.ToolVersion, s.Deterministic, s.Status)
		o.report = tables
		return plan, err
	}
	var plan *formats.Plan
	var err error
	if s.Objective == planner.ObjectiveCost {
		plan, err = pq.SolveCost(ctx, in, pq.Options{Flags: pq.Flags{SLO: formats.Duration(s.SLO)}, ToolVersion: s.ToolVersion, Sim: o.sim}, s.TimeLimit, cmp.Or(s.Gap, planner.DefaultGap))
		if err == nil && s.Deterministic {
			plan.Provenance.SolveMs = 0
		}
	} else {
		plan, err = pq.Solve(in, pq.Options{Flags: pq.Flags{Strategy: s.Strategy, MinGPUs: o.f.MinGPUs}, ToolVersion: s.ToolVersion, AcceptMiss: s.AcceptMiss, Status: s.Status, Sim: o.sim, Probe: o.probe})
	}
	o.report = nil
	if plan != nil {
		// The defaults it took, printed as the search prints its own (Report) and recorded.
		plan.Provenance.Defaults = defaultNotes(in, plan)
		o.report = planner.NoteTable(plan.Provenance.Defaults)
	}
	return plan, err
}

// Render prints the instances with their virtual queues, and the groups.
func Render(p *formats.Plan) []planner.Table {
	it := planner.Table{Header: []string{"INSTANCE", "GPU", "MODEL", "VIRTUAL QUEUE"}}
	for _, in := range qlmsec.PlanOf(p).Instances {
		gpu := in.GPU
		if in.GPUCount > 1 || len(in.GPUs) > 0 {
			gpu = pq.GPUSet(in) // tensor-parallel: the count and the GPUs
		}
		queue := fmt.Sprint(in.Queue)
		if len(in.Queue) == 0 {
			// No group placed offline: QLM's load balancing assigns request groups to the
			// virtual queues at every replan, so this queue fills online.
			queue = "[] (filled online at replan)"
		}
		it.Rows = append(it.Rows, []string{in.Name, gpu, in.Model, queue})
	}
	gt := planner.Table{Header: []string{"GROUP", "MODEL", "CLASS", "SLO", "REQUESTS"}}
	for _, g := range qlmsec.PlanOf(p).Groups {
		gt.Rows = append(gt.Rows, []string{g.ID, g.Model, g.Class, g.SLO.String(), strconv.Itoa(g.Requests)})
	}
	return []planner.Table{it, gt}
}

// Checker checks QLM plans; Resolve re-solves with Sim (system.Handle.Point, required as for
// a solve).
type Checker struct {
	Sim pq.PointSimulator
	// Probe is the capacity probes' simulator (system.Handle.Probe; nil: Sim).
	Probe pq.PointSimulator
}

// Verify implements planner.Checker.
func (Checker) Verify(p *formats.Plan) ([]string, string) {
	return pq.Verify(p), fmt.Sprintf("qlm plan, %d instances, %d groups: profiles and memory per instance, class coverage, group classes, expected load", len(qlmsec.PlanOf(p).Instances), len(qlmsec.PlanOf(p).Groups))
}

// Compare implements planner.Checker: the load per instance (lower is better): the rate over
// the simulated capacity of an instance (planner/qlm InstanceRate; the metric keeps its
// older name).
func (Checker) Compare(got, ref *formats.Plan, tol float64) []planner.Check {
	if qlmsec.PlanOf(ref) == nil {
		return []planner.Check{{Line: "reference is not a qlm plan"}}
	}
	g, r := pq.Utilization(got), pq.Utilization(ref)
	return []planner.Check{planner.AtMost("decode_load_per_instance", "", g, r, tol, absTol, fmt.Sprintf("load per instance (rate / simulated capacity) %.4f vs %.4f (tolerance %.2f%%)", g, r, tol*100))}
}

// Resolve implements planner.Checker.
func (c Checker) Resolve(ctx context.Context, p *formats.Plan, timeLimit time.Duration) (*formats.Plan, error) {
	e := p.Provenance.Embedded
	if e == nil || e.Cluster == nil || e.Workload == nil {
		return nil, fmt.Errorf("provenance.embedded holds no inputs: cannot re-solve")
	}
	profs := make([]*formats.Profile, len(e.Profiles))
	for i := range e.Profiles {
		profs[i] = &e.Profiles[i]
	}
	rec := pq.Flags{Strategy: p.Provenance.Strategy}
	if err := planner.ReadOptions(p.Provenance.Options, &rec); err != nil {
		return nil, &planner.InputError{Problems: []string{err.Error()}}
	}
	in := planner.Inputs{Workload: e.Workload, Cluster: e.Cluster, Profiles: profs}
	if rec.Objective == planner.ObjectiveCost && rec.Search {
		re, _, err := search(ctx, in, rec, p.Provenance.ToolVersion, true, nil)
		return re, err
	}
	if rec.Objective == planner.ObjectiveCost {
		re, err := pq.SolveCost(ctx, in, pq.Options{Flags: rec, Sim: c.Sim}, timeLimit, planner.DefaultGap)
		if err == nil {
			re.Provenance.SolveMs = 0
		}
		return re, err
	}
	return pq.Solve(in, pq.Options{Flags: rec, Sim: c.Sim, Probe: c.Probe})
}

// search is the deployment search (planner/llmdeploy) as a QLM plan, recording rec as the
// plan's options, and its report tables. Candidates are simulated on every CPU.
func search(ctx context.Context, in planner.Inputs, rec pq.Flags, tool string, deterministic bool, status func(string)) (*formats.Plan, []planner.Table, error) {
	o := llmdeploy.Options{Workers: runtime.GOMAXPROCS(0)}
	for _, q := range strings.Split(rec.Quantizations, ",") {
		if q = strings.TrimSpace(q); q != "" {
			o.Quantizations = append(o.Quantizations, q)
		}
	}
	if status != nil {
		o.Progress = func(done, total int) {
			status(fmt.Sprintf("search: %d/%d candidates simulated", done, total))
		}
	}
	res, err := llmdeploy.Search(ctx, in, o)
	var tables []planner.Table
	if res != nil {
		tables = res.Tables()
	}
	if err != nil {
		return nil, tables, err
	}
	plan, err := res.Plan(in, llmdeploy.PlanOptions{ToolVersion: tool, Options: planner.RecordOptions(rec), Deterministic: deterministic})
	if plan != nil {
		plan.Provenance.Defaults = res.Defaults
	}
	return plan, tables, err
}
