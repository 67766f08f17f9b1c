package dyorc

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	dp "github.com/plan-dev/plan/dataplane/dyorc"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/planner"
)

func inputs(p *formats.Plan) (*dp.Workflow, dp.Cluster, error) {
	e := p.Provenance.Embedded
	if e == nil || e.Workload == nil || dyorcsec.WorkflowsOf(e.Workload) == nil {
		return nil, dp.Cluster{}, fmt.Errorf("provenance.embedded holds no workload with workflows")
	}
	cl := p.Cluster
	if cl == nil {
		cl = e.Cluster
	}
	if cl == nil {
		return nil, dp.Cluster{}, fmt.Errorf("the plan carries no cluster")
	}
	w, err := dp.Compile(dyorcsec.WorkflowsOf(e.Workload))
	if err != nil {
		return nil, dp.Cluster{}, err
	}
	c, err := dp.ClusterOf(cl)
	return w, c, err
}

// Verify re-derives every constraint of a dyorc plan independently of the MILP: placement
// GPUs exist and hold no more memory than they have, every workflow service is placed, the
// deployments' replica counts equal the placement, max_batch is within the service's max_batch.
func Verify(p *formats.Plan) []string {
	var out []string
	w, c, err := inputs(p)
	if err != nil {
		return []string{err.Error()}
	}
	count := make([]int, len(w.Services))
	for i, g := range dyorcsec.PlanOf(p).Placement {
		if g.GPU < 0 || g.GPU >= c.GPUs {
			out = append(out, fmt.Sprintf("dyorc.placement[%d].gpu: %d: the cluster has %d GPUs", i, g.GPU, c.GPUs))
			continue
		}
		var mem int64
		for _, s := range g.Services {
			sv, ok := w.SvcIndex[s]
			if !ok {
				out = append(out, fmt.Sprintf("dyorc.placement[%d]: service %q is not a workflow service", i, s))
				continue
			}
			count[sv]++
			mem += w.Services[sv].Bytes
		}
		if c.MemBytes > 0 && mem > c.MemBytes {
			out = append(out, fmt.Sprintf("dyorc.placement[%d]: GPU %d holds %.1f GB of services, it has %.1f GB", i, g.GPU, float64(mem)/1e9, float64(c.MemBytes)/1e9))
		}
	}
	if len(dyorcsec.PlanOf(p).Placement) > 0 {
		for s, n := range count {
			if n == 0 {
				out = append(out, fmt.Sprintf("service %s: placed on no GPU", w.Services[s].Name))
			}
		}
	}
	seen := map[string]bool{}
	for i, d := range dyorcsec.PlanOf(p).Deployments {
		sv, ok := w.SvcIndex[d.Service]
		if !ok {
			out = append(out, fmt.Sprintf("dyorc.deployments[%d].service: %q is not a workflow service", i, d.Service))
			continue
		}
		seen[d.Service] = true
		if len(dyorcsec.PlanOf(p).Placement) > 0 && d.Replicas != count[sv] {
			out = append(out, fmt.Sprintf("dyorc.deployments[%d]: %s has %d replicas, the placement holds %d", i, d.Service, d.Replicas, count[sv]))
		}
		if d.MaxBatch > w.Services[sv].MaxBatch {
			out = append(out, fmt.Sprintf("dyorc.deployments[%d].max_batch: %d: above the service's %d", i, d.MaxBatch, w.Services[sv].MaxBatch))
		}
	}
	for _, s := range w.Services {
		if !seen[s.Name] {
			out = append(out, fmt.Sprintf("service %s: no deployment", s.Name))
		}
	}
	return out
}

// AppLoad is each app's expected per-replica load: the largest, over the services it calls,
// of the service's expected load divided by its replicas (lower is better).
func AppLoad(p *formats.Plan) (map[string]float64, error) {
	w, _, err := inputs(p)
	if err != nil {
		return nil, err
	}
	load := Load(w)
	reps := make([]int, len(w.Services))
	for _, d := range dyorcsec.PlanOf(p).Deployments {
		if sv, ok := w.SvcIndex[d.Service]; ok {
			reps[sv] = d.Replicas
		}
	}
	out := map[string]float64{}
	for i := range w.Apps {
		a := &w.Apps[i]
		worst := 0.0
		for _, n := range a.Nodes {
			if r := reps[n.Svc]; r > 0 {
				worst = max(worst, load[n.Svc]/float64(r))
			} else {
				worst = max(worst, 1e9)
			}
		}
		out[a.Name] = worst
	}
	return out, nil
}

// Compare compares got with ref per application: the expected per-replica load of the app's
// busiest service may exceed ref's by at most tol.
func Compare(got, ref *formats.Plan, tol float64) []planner.Check {
	if dyorcsec.PlanOf(ref) == nil {
		return []planner.Check{{Line: "reference is not a dyorc plan"}}
	}
	g, err := AppLoad(got)
	if err != nil {
		return []planner.Check{{Line: "plan: " + err.Error()}}
	}
	r, err := AppLoad(ref)
	if err != nil {
		return []planner.Check{{Line: "reference: " + err.Error()}}
	}
	names := slices.Sorted(maps.Keys(r))
	var out []planner.Check
	for _, n := range names {
		gv, ok := g[n]
		if !ok {
			out = append(out, planner.Check{Line: fmt.Sprintf("app %s: missing from the plan", n), Name: "missing", Subject: n})
			continue
		}
		out = append(out, planner.AtMost("busiest_service_load_per_replica", n, gv, r[n], tol, absTol,
			fmt.Sprintf("app %s: busiest service load per replica %.4f vs %.4f (tolerance %.2f%%)", n, gv, r[n], tol*100)))
	}
	return out
}

// Resolve re-plans from the plan's embedded inputs and recorded options, checking rates
// with sim as the solve did (Options.Sim).
func Resolve(ctx context.Context, p *formats.Plan, timeLimit time.Duration, sim Simulator) (*formats.Plan, error) {
	e := p.Provenance.Embedded
	if e == nil || e.Workload == nil {
		return nil, fmt.Errorf("provenance.embedded holds no inputs: cannot re-solve")
	}
	cl := p.Cluster
	if cl == nil {
		cl = e.Cluster
	}
	rec := Flags{Policy: dyorcsec.PlanOf(p).Policy}
	if err := planner.ReadOptions(p.Provenance.Options, &rec); err != nil {
		return nil, &planner.InputError{Problems: []string{err.Error()}}
	}
	if timeLimit <= 0 {
		timeLimit = time.Duration(rec.TimeLimit) // the limit the plan was solved under, if any
	}
	o := Options{TimeLimit: timeLimit, Deterministic: true, Policy: rec.Policy, Gap: rec.Gap, Sim: sim}
	switch {
	case rec.Objective == planner.ObjectiveCost:
		return SolveCost(ctx, e.Workload, e.Cluster, p.Provenance.Inputs, o)
	case rec.MinGPUs:
		return SolveMinGPUs(ctx, e.Workload, e.Cluster, p.Provenance.Inputs, o)
	}
	return Solve(ctx, e.Workload, cl, p.Provenance.Inputs, o)
}
