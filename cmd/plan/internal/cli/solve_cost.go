package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/fleet"
)

// Objectives `plan solve --objective` takes: the planner's own (throughput for PPipe, GPU
// count for PARD and CascadeServe --min-gpus, load for QLM and DyOrc) or cost.
const objectiveDefault = "default"

func addObjectiveFlag(f *pflag.FlagSet, dst *string) {
	f.StringVar(dst, "objective", objectiveDefault, "default (the planner's own objective on the cluster as given) or cost: the least-cost fleet of the cluster's GPU types (price_per_hour, within available) that serves the workload's rates within its SLOs")
}

// applyObjective checks --objective and, for cost, that every GPU type of the cluster has a
// price (its own or a default list price), then sets it in the settings.
func applyObjective(app *App, o *solveOptions, in planner.Inputs, s *planner.Settings) error {
	switch o.objective {
	case objectiveDefault, "":
		return applySpot(app, o, in.Cluster) // refuses --spot without cost
	case planner.ObjectiveCost:
	default:
		return run.UsageErrorf("--objective %q: must be default or cost", o.objective)
	}
	_, defaulted, err := in.Cluster.Prices()
	if err != nil {
		name := o.cluster
		if name == "" {
			name = "demo cluster"
		}
		return run.UsageErrorf("%s: %s", name, strings.TrimPrefix(err.Error(), "cluster: "))
	}
	if len(defaulted) > 0 {
		// Said whether or not the fleet ends up using them: they priced the choice.
		fmt.Fprintln(app.Err, formats.DefaultPriceNote(defaulted))
	}
	s.Objective = planner.ObjectiveCost
	return applySpot(app, o, in.Cluster)
}

// reportFleet says on stderr the fleet a cost plan chose.
func reportFleet(app *App, plan *formats.Plan) {
	f := plan.Fleet
	if f == nil {
		return
	}
	app.Infof("fleet: %s", fleet.Describe(f))
}

// withFleet adds the cost comparison to a system's golden or re-solve comparison when the
// reference is a cost plan: the cost per hour may not rise above the reference's by more
// than the tolerance (and a plan without a fleet against one with it fails).
func withFleet(cs []planner.Check, got, ref *formats.Plan, tol float64) []planner.Check {
	if ref.Fleet == nil {
		return cs
	}
	if got.Fleet == nil {
		return append(cs, planner.Check{Line: "fleet: the reference is a cost plan (fleet), this plan has none", Name: "cost_per_hour"})
	}
	g, r := got.Fleet.CostPerHour, ref.Fleet.CostPerHour
	return append(cs, planner.AtMost("cost_per_hour", "", g, r, tol, run.AbsTol,
		fmt.Sprintf("fleet cost %.4g %s/h vs %.4g (tolerance %.2f%%): %s", g, got.Fleet.Currency, r, tol*100, fleet.Describe(got.Fleet))))
}

// reportPlanner prints the tables a planner reports of its last solve (planner.Reporter: the
// deployment search's candidates, comparison fleets and engine flags) on stderr, where they
// stay out of --output json's document; --quiet leaves them out.
func reportPlanner(app *App, pl planner.Planner) {
	r, ok := pl.(planner.Reporter)
	if !ok || app.Quiet {
		return
	}
	for _, t := range r.Report() {
		fmt.Fprintln(app.Err)
		run.WriteTable(app.Err, t.Header, t.Rows)
	}
}
