package solve

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/fleet"
)

// ObjectiveDefault is --objective's default: the planner's own objective (throughput for
// PPipe, GPU count for PARD and CascadeServe --min-gpus, load for QLM and DyOrc); the other
// value is planner.ObjectiveCost.
const ObjectiveDefault = "default"

// ApplyObjective checks --objective and, for cost, that every GPU type of the cluster has a
// price (its own or a default list price), then sets it in the settings; with spot (--spot
// SHARE, nil = not given) it prices the cluster's spot share. cluster is the cluster file
// ("" = the embedded demo cluster).
func ApplyObjective(io *run.IO, objective string, spot *float64, cluster string, in planner.Inputs, s *planner.Settings) error {
	switch objective {
	case ObjectiveDefault, "":
		return applySpot(io, objective, spot, in.Cluster) // refuses --spot without cost
	case planner.ObjectiveCost:
	default:
		return run.UsageErrorf("--objective %q: must be default or cost", objective)
	}
	_, defaulted, err := in.Cluster.Prices()
	if err != nil {
		name := cluster
		if name == "" {
			name = "demo cluster"
		}
		return run.UsageErrorf("%s: %s", name, strings.TrimPrefix(err.Error(), "cluster: "))
	}
	if len(defaulted) > 0 {
		// Said whether or not the fleet ends up using them: they priced the choice.
		fmt.Fprintln(io.Err, formats.DefaultPriceNote(defaulted))
	}
	s.Objective = planner.ObjectiveCost
	return applySpot(io, objective, spot, in.Cluster)
}

// applySpot sets --spot on the cluster the planner prices (formats.Cluster.SpotShare) after
// ApplyObjective chose cost, and says on stderr which types have no spot price and so stay
// on-demand, and the rule.
func applySpot(io *run.IO, objective string, spot *float64, c *formats.Cluster) error {
	if spot == nil {
		return nil
	}
	if objective != "cost" {
		return run.UsageErrorf("--spot %s: needs --objective cost (spot prices only change what a cost objective pays)", strconv.FormatFloat(*spot, 'g', -1, 64))
	}
	share := *spot
	c.SpotShare = &share
	if none := c.NoSpotPrice(); len(none) > 0 {
		fmt.Fprintf(io.Err, "plan: --spot %g: no spot_price_per_hour for %s in the cluster: priced and run on-demand\n", share, strings.Join(none, ", "))
	}
	io.Infof("spot: at most %g of each GPU type's GPUs on spot, at least %g on-demand (rounded up to whole GPUs)", share, 1-share)
	return nil
}

// reportFleet says on stderr the fleet a cost plan chose.
func reportFleet(io *run.IO, plan *formats.Plan) {
	f := plan.Fleet
	if f == nil {
		return
	}
	io.Infof("fleet: %s", fleet.Describe(f))
}

// reportPlanner prints the tables a planner reports of its last solve (planner.Reporter: the
// deployment search's candidates, comparison fleets and engine flags) on stderr, where they
// stay out of --output json's document; --quiet leaves them out.
func reportPlanner(io *run.IO, pl planner.Planner) {
	r, ok := pl.(planner.Reporter)
	if !ok || io.Quiet {
		return
	}
	for _, t := range r.Report() {
		fmt.Fprintln(io.Err)
		run.WriteTable(io.Err, t.Header, t.Rows)
	}
}
