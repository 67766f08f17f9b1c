package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	ap "github.com/plan-dev/plan/dataplane/autopilot"
	runap "github.com/plan-dev/plan/internal/run/autopilot"
	pap "github.com/plan-dev/plan/planner/autopilot"
)

// autopilotFlags are the --autopilot flags of `plan serve` and `plan simulate`: the options
// of internal/run/autopilot, bound by addAutopilotFlags.
type autopilotFlags struct{ runap.Flags }

func addAutopilotFlags(f *pflag.FlagSet, a *autopilotFlags) {
	f.StringVar(&a.Mode, "autopilot", "", "re-plan as the load moves: on (switch plans) or advise (only recommend); off when not given")
	f.Lookup("autopilot").NoOptDefVal = "on"
	f.DurationVar(&a.Window, "autopilot-window", 10*time.Second, "autopilot: observation window (one forecast step)")
	f.IntVar(&a.History, "autopilot-history", ap.DefaultHistory, "autopilot: windows of history kept")
	f.IntVar(&a.Period, "autopilot-period", 0, "autopilot: season in windows for Holt-Winters (0 = Holt's linear trend, the default); at most --autopilot-history")
	f.DurationVar(&a.MinInterval, "autopilot-min-interval", 60*time.Second, "autopilot: least time between two plan switches")
	f.DurationVar(&a.LoadTime, "autopilot-load-time", 5*time.Second, "autopilot (simulate): model load time of a new placement; the old plan serves until it passes")
	f.Float64Var(&a.Headroom, "autopilot-headroom", ap.DefaultHeadroom, "autopilot: share above the forecast a new plan must serve")
	f.Float64Var(&a.Burst, "autopilot-burst", ap.DefaultBurst, "autopilot: quantile of the windows' peak tenth over what Poisson arrivals at their rate would reach, sizing the plan for the bursts a window hides (forecast × it); 0 = follow each window's peak")
	f.IntVar(&a.Budget, "autopilot-gpu-budget", 0, "autopilot: most GPUs a new plan may take (0 = the plan's cluster); below what the load needs, the best plan within it is served and the status says so")
	f.IntVar(&a.Steps, "autopilot-steps", pap.DefaultSteps, "autopilot: rungs of the cluster ladder the re-solve picks from")
	f.StringVar(&a.Objective, "autopilot-objective", "", "autopilot: what a re-solve optimises: throughput (the plan's own objective on the fewest GPUs of a cluster ladder) or cost (the least-cost fleet for the forecast rates: plans solved with --objective cost); default: the plan's own")
	f.DurationVar(&a.SolveLimit, "autopilot-solve-limit", 30*time.Second, "autopilot: time limit of one re-solve")
	f.StringVar(&a.ResolveDelay, "autopilot-resolve-delay", "0s", "autopilot (simulate): how long a re-solve takes before its plan is switched to: a duration, or measured (each re-solve's wall time here; not deterministic); 0 because plan serve pre-solves the rungs next to the served plan, so a step up usually finds its plan solved")
}

// givenFlags lists the flags set on cmd's command line (Changed), in the order pflag visits
// them: the run packages' cross-checks read it (Args.Given).
func givenFlags(cmd *cobra.Command) []string {
	var names []string
	cmd.Flags().Visit(func(f *pflag.Flag) { names = append(names, f.Name) })
	return names
}

// cmdContext is cmd's context, or the background one for a command run without one.
func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// enabled reports whether --autopilot was given.
func (a *autopilotFlags) enabled() bool { return a.Enabled() }

// checkFlagsUsed refuses an --autopilot-* flag given without --autopilot (Flags.CheckGiven).
func (a *autopilotFlags) checkFlagsUsed(cmd *cobra.Command, serving bool) error {
	return a.CheckGiven(givenFlags(cmd), serving)
}

// runSimulateAutopilot is `plan simulate PLAN --autopilot` (internal/run/autopilot).
func runSimulateAutopilot(cmd *cobra.Command, app *App, o *simulateOptions, args []string) error {
	return runap.Run(cmdContext(cmd), runap.Args{Systems: app.Systems, PlanArgs: args, Trace: o.trace, Load: o.load,
		Duration: o.duration, Seed: o.seed, Jitter: o.jitter, Policy: o.policy, Params: o.params, Report: o.report,
		Autopilot: o.autopilot.Flags, Given: givenFlags(cmd)}, &app.IO)
}
