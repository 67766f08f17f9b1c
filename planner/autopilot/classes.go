package autopilot

// The autopilot's solvers for plans whose demand is LLM request classes (a QLM plan:
// workload.llm_classes, each class an application of the deployment) rather than
// workload.models (PPipe). Both objectives re-solve the plan's embedded inputs as for PPipe,
// with the classes' rate_rps where PPipe has the models':
//
//   - throughput (the ladder): QLM's planner places one instance per GPU slot of a rung's
//     cluster, models in proportion to their decode load, and refuses a placement whose
//     load per instance reaches 1 (planner/qlm overloaded). The plan's own rates would make
//     every small rung infeasible, so a rung is solved for its share of the workload (the
//     classes scaled by the rung's GPUs over the whole cluster's: the class mix, hence the
//     placement's proportions, unchanged); the system's capacity model (planner/qlm
//     PlanCapacity) then says what the rung serves.
//   - cost (the rate solver, NewRateSolver as for every system): each class's rate_rps set
//     to the forecast demand of its application, so QLM's least-cost solve (Mélange's
//     buckets × GPU types) sizes the fleet for it.

import (
	"context"
	"slices"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
)

// HasClasses reports whether plan p's demand is LLM classes: its embedded workload lists
// llm_classes (the autopilot's ladder then re-solves them with ClassResolve).
func HasClasses(p *formats.Plan) bool {
	e := p.Provenance.Embedded
	return e != nil && e.Workload != nil && len(llmspec.ClassesOf(e.Workload)) > 0
}

// ClassResolve wraps a system's re-solve for the ladder of base, a plan with llm_classes:
// a rung's cluster is planned for the rung's share of base's workload (every class's
// rate_rps times the rung's GPUs over base's cluster's), so the planner's feasibility check
// holds on a shrunken cluster whenever it held on the whole one.
func ClassResolve(base *formats.Plan, resolve func(context.Context, *formats.Plan) (*formats.Plan, error)) func(context.Context, *formats.Plan) (*formats.Plan, error) {
	full := clusterGPUs(base.Provenance.Embedded.Cluster)
	return func(ctx context.Context, p *formats.Plan) (*formats.Plan, error) {
		e := p.Provenance.Embedded
		if e == nil || e.Workload == nil || full <= 0 {
			return resolve(ctx, p)
		}
		share := float64(clusterGPUs(e.Cluster)) / float64(full)
		if share >= 1 {
			return resolve(ctx, p)
		}
		in := *p
		prov := in.Provenance
		emb := *e
		w := e.Workload.WithRates(func(_ string, rps float64) float64 { return rps * share })
		emb.Workload = w
		prov.Embedded = &emb
		in.Provenance = prov
		return resolve(ctx, &in)
	}
}

func clusterGPUs(c *formats.Cluster) int {
	n := 0
	if c != nil {
		for _, g := range c.GPUs {
			n += g.Count
		}
	}
	return n
}

// setRates sets the rate_rps of w's applications named by apps to rates (in apps' order),
// through each section's own RateTargeter, so every system's demand moves the same way.
func setRates(w *formats.Workload, apps []string, rates []float64) {
	*w = *w.WithRates(func(name string, rps float64) float64 {
		if k := slices.Index(apps, name); k >= 0 {
			return rates[k]
		}
		return rps
	})
}
