package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/internal/run/frontier"
)

type frontierOptions struct {
	solveOptions
	rate, slo, accuracy string
	csv, plot           string
	baseline            string
}

func newFrontierCmd(app *App) *cobra.Command {
	o := &frontierOptions{}
	cmd := &cobra.Command{
		Use:   "frontier",
		Short: "Sweep the rate, SLO or accuracy target and print the least-cost fleet at each point",
		Long: `frontier solves the workload with --objective cost at each point of a sweep and
prints the least cost per hour with its fleet mix beside the cheapest fleet of a
single GPU type (each type of the cluster alone) and the saving of the mix: the picture a
capacity review needs. Sweep one of:
  --rate      multipliers of every rate of the workload (models, pipelines, llm_classes and
              workflow apps rate_rps; cascades qps_max): LO:HI:STEP, a value or a comma list
  --slo       SLOs (plan solve --slo) as a comma list of durations
  --accuracy  accuracy targets (CascadeServe's --accuracy) as a comma list
Prices and availability come from the cluster (price_per_hour, available; default list
prices where none is given). --csv writes the table as CSV, --plot writes PATH.png and
PATH.svg, --output json prints the points as JSON.`,
		Example: `  plan frontier --profile testdata/ppipe/profile.json --cluster testdata/cost/cluster-priced.yaml --workload testdata/cost/workload.yaml --rate 0.5:2:0.5
  plan frontier --profile llm.json --cluster mixed.yaml --workload classes.yaml --rate 1,2,4 --csv frontier.csv --plot frontier`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runFrontier(cmd, app, o) },
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.profiles, "profile", nil, "profile file (repeatable; default: the embedded demo profile)")
	f.StringVar(&o.cluster, "cluster", "", "cluster file with prices and availability (default: the embedded demo cluster)")
	f.StringVar(&o.workload, "workload", "", "workload file; its sections pick the planner")
	f.StringVar(&o.strategy, "strategy", "", "the planner's algorithm (default: the system's own)")
	f.DurationVar(&o.timeLimit, "time-limit", 30*time.Second, "solver time limit per solve")
	f.Float64Var(&o.gap, "gap", 0.01, "relative MIP gap per solve")
	listVar(f, &o.rate, "rate", "", "rate multipliers to sweep: LO:HI:STEP, a value, or a comma list")
	listVar(f, &o.slo, "slo", "", "SLOs to sweep: a comma list of durations (200ms,400ms)")
	listVar(f, &o.accuracy, "accuracy", "", "accuracy targets to sweep (CascadeServe): a comma list")
	f.StringVar(&o.baseline, "baseline", "", "also cost the system's baseline strategy at each point (e.g. np for PPipe: no partitioning)")
	f.StringVar(&o.csv, "csv", "", "also write the points as CSV to this file")
	f.StringVar(&o.plot, "plot", "", "also plot cost against the swept value to PATH.png and PATH.svg")
	addSpotFlag(f, &o.spot, "")
	return cmd
}

func runFrontier(cmd *cobra.Command, app *App, o *frontierOptions) error {
	return frontier.Run(cmd.Context(), frontier.Args{
		Systems: app.Systems, Inputs: o.inputs(), Strategy: o.strategy, TimeLimit: o.timeLimit, Gap: o.gap,
		Rate: o.rate, SLO: o.slo, Accuracy: o.accuracy, Baseline: o.baseline, CSV: o.csv, Plot: o.plot,
		Spot: o.spot.share(), ToolVersion: buildVersion().Version,
	}, &app.IO)
}
