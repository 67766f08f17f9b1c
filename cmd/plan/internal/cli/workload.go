package cli

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
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
			return runWorkloadFromTrace(app, o, args[1])
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

func runWorkloadFromTrace(app *App, o *workloadOptions, path string) error {
	if o.window <= 0 {
		return run.UsageErrorf("--window: %s: must be > 0", o.window)
	}
	if o.slo < 0 {
		return run.UsageErrorf("--slo: %s: must be >= 0", o.slo)
	}
	if !(o.sloScale > 0) {
		return run.UsageErrorf("--slo-scale: %g: must be > 0", o.sloScale)
	}
	if o.out != "" {
		if err := formats.CheckWritable(o.out); err != nil {
			return run.UsageErrorf("--out: %q: %v", o.out, err)
		}
	}
	tr, err := workload.ReadTraceDoc(path)
	if err != nil {
		return run.UsageError(err)
	}
	opt := workload.FromTraceOptions{Name: o.name, Model: o.model, Window: o.window, Basis: o.rate, SLO: o.slo, SLOScale: o.sloScale}
	if o.profile != "" {
		p, err := formats.ReadIntoWith[*formats.Profile](o.profile, app.Systems.Sections())
		if err != nil {
			return run.UsageError(err)
		}
		opt.Profiles = p.LLMs
	}
	w, sums, err := workload.FromTrace(path, tr, opt)
	if err != nil {
		return run.UsageError(err)
	}
	if errs := formats.ValidateWith(w, app.Systems.Sections()); len(errs) > 0 {
		return run.UsageErrorf("%s: the workload built from it does not validate: %v", path, errs)
	}
	out, err := formats.Marshal(w)
	if err != nil {
		return err
	}
	for _, s := range sums {
		line := fmt.Sprintf("%s (%s): %d requests, mean %s req/s, peak %s req/s (%v window)", s.Name, s.Model, s.Requests, sig3(s.MeanRPS), sig3(s.PeakRPS), o.window)
		if s.InP50 > 0 {
			line += fmt.Sprintf("; input p50/p90/p99 %d/%d/%d, output %d/%d/%d tokens", s.InP50, s.InP90, s.InP99, s.OutP50, s.OutP90, s.OutP99)
		}
		if s.PrefixTokens > 0 {
			line += fmt.Sprintf("; prefix_tokens %d (cached per request, were every block kept)", s.PrefixTokens)
		}
		if s.SLOFrom != "" {
			line += "; SLO from " + s.SLOFrom
		}
		app.Infof("%s", line)
	}
	if o.out == "" {
		_, err = app.Out.Write(out)
		return err
	}
	if err := formats.WriteAtomic(o.out, out); err != nil {
		return err
	}
	app.Infof("wrote %s", o.out)
	return nil
}

// sig3 is x to three significant figures, whole above 1000 (1000 req/s, not 1e+03).
func sig3(x float64) string {
	if x >= 1000 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}
