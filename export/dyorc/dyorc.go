// Package dyorc exports DyOrc plans to Triton, KServe and Ray Serve (following
// export/ppipe, export/pard and export/cascade). A DyOrc plan is a warm service placement
// (which GPU holds which workflow services at start: DyOrc schedules online, so a plan only
// seeds it) plus the workflows it serves; the speculative scheduler (DyOrc §5: Markov
// prediction, the DP placement of every ready task, proactive loading with LRU eviction) is
// what no target can express, so every export keeps the placement and the batching natively
// and describes each workflow for a driver of the user's:
//
//   - Triton: one model per service deployment with one instance_group per GPU that holds the
//     service (named g<gpu>, pinned to it), dynamic batching up to the service's max batch; and
//     one BLS model per application (backend "python") whose parameters carry the workflow
//     (dyorc.workflow: the steps with guards, choices, fan-out and the bounded loop) and the
//     services it calls. Its model.py walks the DAG, calling the next service each answer names.
//   - KServe: one InferenceService per service deployment (replicas = GPUs holding it), and one
//     InferenceGraph per application: a root Sequence with a step per workflow step (a bounded
//     loop unrolled into its max_iter rounds); a step that may not run (a guard, a choice, a loop
//     round after the first) is a Switch node whose steps match the previous service's "next"
//     output against the workflow node they call, and a fan-out step is an Ensemble node of its
//     copies. Each service answers, as the v2 output tensor "next", the node the request goes to
//     (what `plan serve` reports as the branch).
//   - Ray Serve: one deployment per service deployment (num_replicas, one GPU each) and a
//     workflow driver deployment whose user_config holds every workflow and the services' names.
//
// Every file records what ReadBack needs to recover the plan's deployments, the placement per
// GPU, the policy and parameters, and each application's workflow; the round-trip tests
// compare them with the plan, cross-checking each target's own fields (instance groups,
// replicas, batch sizes).
package dyorc

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/export/targets"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
)

// Parameter keys (Triton parameters, KServe annotations under plan.dev/, Ray user_config).
const (
	// ParamGPUs lists the GPU indices (cluster order) holding a service at start: "0,2,3".
	ParamGPUs = "dyorc.gpus"
	// ParamIndex is a deployment's position in the plan's dyorc.deployments.
	ParamIndex = "dyorc.index"
	// ParamPlan is the plan-level record (JSON of Record) on every coordinator / graph / driver.
	ParamPlan = "dyorc.plan"
	// ParamApp and ParamWorkflow name an application and hold its workflow (JSON of
	// dyorcsec.App).
	ParamApp      = "dyorc.app"
	ParamWorkflow = "dyorc.workflow"
	// ParamServices maps the workflow's services to their exported units: "svc=unit;…".
	ParamServices = "dyorc.services"
	// ParamNext names the output tensor carrying the node a request goes to next.
	ParamNext = "dyorc.next_output"
)

// NextOutput is the response tensor naming the workflow node a request goes to next (a step
// id, "step:service" for a choice, "" when the workflow ends).
const NextOutput = "next"

// Unsupported is what no target can express, named in every export.
const Unsupported = "DyOrc's speculative scheduling (Markov workflow prediction, the DP placement of each ready task, " +
	"proactive loading and LRU eviction, DyOrc paper §5): services stay where the plan puts them at start"

// Record is the plan-level part of an export: the scheduler's policy and knobs, the cluster's
// GPU count, and whether the plan gave the placement (false: the deployer spread the replicas).
type Record struct {
	Policy    string             `json:"policy,omitempty"`
	Params    map[string]float64 `json:"params,omitempty"`
	GPUs      int                `json:"gpus"`
	Placement bool               `json:"placement"`
}

// Exporters returns DyOrc's exporters for every target.
func Exporters() []export.Exporter {
	return export.Layout[*layout]{Build: build, Own: map[string]func(*layout) (export.Files, error){
		export.Triton: tritonFiles, export.KServe: kserveFiles, export.Ray: rayFiles}}.Exporters(targets.Registry())
}

// layout is a DyOrc plan prepared for rendering.
type layout struct {
	o    export.Options
	rec  Record
	svcs []service // in plan order
	apps []app     // by name
	unit map[string]string
}

// service is one service deployment: its unit and the GPUs holding it.
type service struct {
	index int
	dep   dyorcsec.ServiceDeployment
	unit  string
	gpus  []int
	// timeoutUs is the longest SLO of the applications calling the service: a task queued
	// longer has missed its request's deadline. A batch never waits to fill (queue delay 0):
	// DyOrc runs a service's ready tasks as one batch as soon as a worker is free (DyOrc
	// §5.1, component-level batching).
	timeoutUs int64
}

type app struct {
	name  string
	unit  string
	sloUs int64
	wf    dyorcsec.App
}

func (l *layout) placement(s service) export.Placement {
	return export.Placement{Key: s.dep.Service + "/" + s.dep.GPU, GPU: s.dep.GPU, VGPU: 1, Count: s.dep.Replicas, Batch: s.dep.MaxBatch}
}

// params are a service's recorded parameters.
func (l *layout) params(s service) map[string]string {
	m := l.placement(s).Params()
	m[ParamGPUs] = export.JoinInts(s.gpus)
	m[ParamIndex] = strconv.Itoa(s.index)
	m[ParamNext] = NextOutput
	return m
}

// appParams are an application's recorded parameters.
func (l *layout) appParams(a app) map[string]string {
	used := map[string]bool{}
	for _, st := range steps(a.wf) {
		used[st.Service] = st.Service != ""
		for c := range st.Choice {
			used[c] = true
		}
	}
	var svcs []string
	for n, ok := range used {
		if ok {
			svcs = append(svcs, n+"="+l.unit[n])
		}
	}
	slices.Sort(svcs)
	return map[string]string{ParamPlan: export.MustJSON(l.rec), ParamApp: a.name, ParamWorkflow: export.MustJSON(a.wf),
		ParamServices: strings.Join(svcs, ";"), ParamNext: NextOutput}
}

// steps are an app's steps, or its loop body.
func steps(a dyorcsec.App) []dyorcsec.Step {
	if a.Loop != nil {
		return a.Loop.Body
	}
	return a.Steps
}

// build checks the plan and lays it out. GPU indices follow the cluster's order (the plan's
// cluster, else the embedded one), as dataplane/dyorc.FromPlan reads them.
func build(p *formats.Plan, o export.Options) (*layout, error) {
	dp := dyorcsec.PlanOf(p)
	if dp == nil {
		return nil, fmt.Errorf("the plan has no dyorc section")
	}
	if o.Model != nil {
		return nil, fmt.Errorf("--model: a DyOrc plan serves whole services; there is no partition to cut")
	}
	e := p.Provenance.Embedded
	if e == nil || e.Workload == nil || dyorcsec.WorkflowsOf(e.Workload) == nil {
		return nil, fmt.Errorf("provenance.embedded.workload: missing: the workflows of a dyorc plan come from its embedded workload")
	}
	_, types, err := export.PlanGPUTypes(p, "a dyorc plan")
	if err != nil {
		return nil, err
	}
	wf := dyorcsec.WorkflowsOf(e.Workload)
	l := &layout{o: o, unit: map[string]string{}, rec: Record{Policy: dp.Policy, Params: dp.Params, GPUs: len(types), Placement: len(dp.Placement) > 0}}
	at := map[[2]string]int{}
	perSvc := map[string]int{}
	for i, d := range dp.Deployments {
		if _, ok := wf.Services[d.Service]; !ok {
			return nil, fmt.Errorf("dyorc.deployments[%d].service: %q: not a workflow service", i, d.Service)
		}
		if d.Replicas < 1 || d.MaxBatch < 1 {
			return nil, fmt.Errorf("dyorc.deployments[%d]: replicas %d, max_batch %d: both must be >= 1", i, d.Replicas, d.MaxBatch)
		}
		k := [2]string{d.Service, d.GPU}
		if _, dup := at[k]; dup {
			return nil, fmt.Errorf("dyorc.deployments[%d]: (%s, %s): duplicate deployment", i, d.Service, d.GPU)
		}
		at[k] = i
		perSvc[d.Service]++
		l.svcs = append(l.svcs, service{index: i, dep: d})
	}
	for i := range l.svcs {
		s := &l.svcs[i]
		s.unit = export.DNSLabel(o.Name + "-" + s.dep.Service)
		if perSvc[s.dep.Service] > 1 {
			s.unit = export.DNSLabel(o.Name + "-" + s.dep.Service + "-" + s.dep.GPU)
		} else {
			l.unit[s.dep.Service] = s.unit
		}
	}
	hold := func(g int, svc string, field string) error {
		if g < 0 || g >= len(types) {
			return fmt.Errorf("%s: GPU %d: the cluster has %d GPUs", field, g, len(types))
		}
		i, ok := at[[2]string{svc, types[g]}]
		if !ok {
			return fmt.Errorf("%s: %q on GPU %d (%s): no deployment of the service on %s", field, svc, g, types[g], types[g])
		}
		l.svcs[i].gpus = append(l.svcs[i].gpus, g)
		return nil
	}
	if l.rec.Placement {
		for i, pl := range dp.Placement {
			for j, svc := range pl.Services {
				if err := hold(pl.GPU, svc, fmt.Sprintf("dyorc.placement[%d].services[%d]", i, j)); err != nil {
					return nil, err
				}
			}
		}
	} else {
		// As dataplane/dyorc.FromPlan: each deployment's replicas spread over the GPUs in turn.
		g := 0
		for i, d := range dp.Deployments {
			for k := 0; k < d.Replicas; k++ {
				l.svcs[i].gpus = append(l.svcs[i].gpus, g%len(types))
				g++
			}
		}
	}
	for i, s := range l.svcs {
		slices.Sort(l.svcs[i].gpus)
		if len(s.gpus) != s.dep.Replicas {
			return nil, fmt.Errorf("dyorc.deployments[%d].replicas: %d, but dyorc.placement holds %s on %d GPU(s)", s.index, s.dep.Replicas, s.dep.Service, len(s.gpus))
		}
	}
	names := slices.Sorted(maps.Keys(wf.Apps))
	for _, n := range names {
		a := wf.Apps[n]
		for _, st := range steps(a) {
			svcs := []string{st.Service}
			if len(st.Choice) > 0 {
				svcs = svcs[:0]
				for c := range st.Choice {
					svcs = append(svcs, c)
				}
			}
			for _, c := range svcs {
				if l.unit[c] == "" {
					return nil, fmt.Errorf("workflows.apps.%s: step %s: service %q has no (single) deployment in dyorc.deployments", n, st.ID, c)
				}
			}
		}
		ap := app{name: n, unit: export.DNSLabel(o.Name + "-" + n), sloUs: int64(time.Duration(a.SLO) / time.Microsecond), wf: a}
		for i := range l.svcs {
			if s := &l.svcs[i]; calls(a, s.dep.Service) {
				s.timeoutUs = max(s.timeoutUs, ap.sloUs)
			}
		}
		l.apps = append(l.apps, ap)
	}
	return l, nil
}

// calls says whether the workflow calls service svc.
func calls(a dyorcsec.App, svc string) bool {
	for _, st := range steps(a) {
		if _, ok := st.Choice[svc]; ok || st.Service == svc {
			return true
		}
	}
	return false
}

// describe summarizes a workflow for comments: its steps in order.
func describe(a dyorcsec.App) string {
	var parts []string
	for _, st := range steps(a) {
		s := st.ID + "=" + st.Service
		if len(st.Choice) > 0 {
			cs := slices.Sorted(maps.Keys(st.Choice))
			s = st.ID + "=one of {" + strings.Join(cs, ",") + "}"
		}
		if st.Fanout > 1 {
			s += fmt.Sprintf("×%d", st.Fanout)
		}
		if st.When != "" {
			s += " when " + st.When
		}
		parts = append(parts, s)
	}
	out := strings.Join(parts, " → ")
	if a.Loop != nil {
		out = fmt.Sprintf("loop %s (at most %d rounds, until %s): %s", a.Loop.ID, a.Loop.MaxIter, a.Loop.Until, out)
	}
	return out
}
