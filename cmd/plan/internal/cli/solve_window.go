package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/plan-dev/plan/internal/run/solve"
	"github.com/plan-dev/plan/planner/schedule"
)

// windowOptions are `plan solve --trace --window`'s flags.
type windowOptions struct {
	trace    string
	window   time.Duration
	quantile float64
	margin   float64
}

// windowSolveFlags join commonSolveFlags: every planner takes them.
var windowSolveFlags = []string{"trace", "window", "peak-quantile", "margin"}

func addWindowFlags(f *pflag.FlagSet, o *windowOptions) {
	f.StringVar(&o.trace, "trace", "", "with --objective cost and --window: a rate trace CSV (time_s then one column of requests/s per model, LLM class, pipeline or app); writes a schedule of one least-cost plan per window")
	f.DurationVar(&o.window, "window", 0, "with --trace: the schedule's window (e.g. 1h); each window is planned for its peak")
	f.Float64Var(&o.quantile, "peak-quantile", schedule.DefaultPeaks.Quantile, "with --trace: a window's peak is this quantile of its one-minute rates (1 = the highest)")
	f.Float64Var(&o.margin, "margin", schedule.DefaultPeaks.Margin, "with --trace: multiplies each window's peak quantile (headroom for bursts within a minute)")
}

// args are the window flags for solve.Args: any of them given makes solve write a schedule
// instead of a plan.
func (o *windowOptions) args(fl *pflag.FlagSet) solve.Window {
	given := false
	for _, n := range windowSolveFlags {
		given = given || fl.Changed(n)
	}
	return solve.Window{Given: given, Trace: o.trace, Window: o.window, WindowSet: fl.Changed("window"), PeakQuantile: o.quantile, Margin: o.margin}
}
