package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/internal/run"
	runworkload "github.com/plan-dev/plan/internal/run/workload"
)

// workloadOptions are `plan workload from-trace`'s flags.
type workloadOptions struct {
	profile, model, rate, name, out string
	window, slo                     time.Duration
	sloScale                        float64
}

func newWorkloadCmd(app *App) *cobra.Command {
	o := &workloadOptions{}
	cmd := &cobra.Command{
		Use:   "workload from-trace TRACE",
		Short: "Write the workload file a trace describes (rates, token-length mix, suggested SLOs)",
		Long: `workload from-trace reads a trace (a plan Trace document of requests or counts, or an
Azure LLM inference CSV) and writes the workload it describes, which 'plan solve' takes as is:

  - requests with token counts become LLM classes, one per trace class (or per target when
    requests carry no class): the class's rate, its prompt and output lengths (mean, std,
    max; p50/p90/p99 in the description and on stderr), and its SLOs: --slo as given, or
    --slo-scale × the unloaded latency of the class's p99 request (prefill of the p99 prompt
    then its p99 output's decode steps) on the fastest GPU of --profile for its model, with a
    TTFT SLO of --slo-scale × that prefill;
  - requests without token counts, and counts series, become models with their rates (their
    SLO is the planner's rule: 5 × the batch-1 latency, or edit slo in the file).

rate_rps is each class's peak rate (--rate peak: the most arrivals in any --window, per
second, as capacity planners size for the busiest window) or its mean over the trace
(--rate mean); both are printed and kept in the workload's description. Requests whose trace
entry names no model take --model. A trace with nothing to classify (no requests, no
timestamps, LLM and DNN requests mixed) is refused naming the field; nothing is written.`,
		Example: `  plan workload from-trace trace.json --profile profile.json -o workload.json
  plan workload from-trace azure_conv.csv --model mistral-7b --profile profile.json -o w.json
  plan workload from-trace counts.json --rate mean -o w.json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 || args[0] != "from-trace" {
				return run.UsageErrorf("usage: plan workload from-trace TRACE (got %q)", args)
			}
			return runworkload.Run(cmd.Context(), runworkload.Args{Trace: args[1], Profile: o.profile, Model: o.model, Rate: o.rate,
				Window: o.window, SLO: o.slo, SLOScale: o.sloScale, Name: o.name, Out: o.out, Systems: app.Systems}, &app.IO)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.profile, "profile", "", "LLM profile to suggest SLOs from (the fastest GPU of each class's model)")
	f.StringVar(&o.model, "model", "", "model of requests whose trace entry names none (the Azure CSVs)")
	f.StringVar(&o.rate, "rate", "peak", "rate_rps written: peak (busiest --window) or mean (over the trace)")
	f.DurationVar(&o.window, "window", time.Minute, "window the peak rate is measured over")
	f.DurationVar(&o.slo, "slo", 0, "end-to-end SLO of every LLM class (default: suggested from --profile)")
	f.Float64Var(&o.sloScale, "slo-scale", 5, "suggested SLO = this × the class's p99 request's unloaded latency")
	f.StringVar(&o.name, "name", "", "the workload's metadata.name (default: from-trace)")
	f.StringVarP(&o.out, "out", "o", "", "where to write (default: standard output, JSON)")
	return cmd
}
