package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/run/check"
)

type checkOptions struct {
	golden    string
	tolerance string
	resolve   bool
	timeLimit time.Duration
	arrivals  string
	allowMiss bool
}

func newCheckCmd(app *App) *cobra.Command {
	o := &checkOptions{}
	cmd := &cobra.Command{
		Use:   "check [PLAN]",
		Short: "Verify a plan, compare it with a golden plan, and re-solve it (CI regression gate)",
		Long: `check verifies a plan with its system's verifier, without the solver. PPipe/NP/DART-r:
every partition's stage latency and transfer against the embedded profile and NIC bandwidth,
each pipeline's latency against its planning budget T' = SLO − round(α·SLO), the throughput
arithmetic (stage = X·count, pipeline = slowest stage, model = Σ pipelines), contiguous cuts
covering all blocks, one profiled batch per pipeline, and the GPU budget with physical
rounding. PARD: every module's model and profiled latency, workers covering the rate, Σ2·d ≤
f·SLO on every path, and the GPUs per type. CascadeServe: every gear's models placed, memory
per GPU, shares summing to 1, gears covering [0, qps_max] contiguously, each gear's accuracy
and work against a replay of the validation records, and the latency or accuracy SLO. QLM:
every instance's model profiled on its GPU and fitting its memory, every class's model
hosted or hostable, queued groups naming known classes, expected decode load per instance
below 1. DyOrc: placement GPUs exist and hold their models' memory, every workflow service
placed, replica counts equal to the placement, batches within each service's max_batch. A
cost plan (--objective cost): its fleet record against its sections, cluster and prices.

Then (predict) it simulates the plan at its own rates, as plan solve did before writing it
(its runtime policy, the arrivals its prediction records: Poisson unless solved with
--arrivals, seed 1): every application must meet its target (99%, or its SLO's percentile)
at the rate the plan tells you to size by, in the run and in each replication (the verdict
rule, DESIGN.md "Evidence"): the workload's rate for a plan sized to rates, and for a plan
that states its throughput (PPipe, cascade) the rate it sustains within its target
(sustained_rps, bisected over the runs), not the stated capacity. An application that
misses there is a MISS line naming it, the rate and its attainment, and exit 1 — a miss
written with --accept-miss too; --allow-miss reports it without failing. A prediction the
plan records must be reproduced within its sampling error, and a sustained rate within
--tolerance; a plan that fails verification is not simulated.
--arrivals bursty:CV (or mmpp) asks whether the plan holds under other arrivals than it was
predicted under: every application must meet its target there, and the recorded prediction
is not compared.

--golden F compares per model (PPipe: every model's throughput, and the max-min objective of
multi-model plans) or per application (PARD: GPUs and provisioned rate) and fails on a loss
beyond --tolerance. --resolve re-solves from the inputs embedded in the plan (same strategy
and options) and fails if the new plan's objective or per-model results are worse by more than
--tolerance; with --golden, the re-solved plan is compared with the golden plan too.
Throughputs are compared, never timings. Exit 0 = all checks pass, 1 = a check failed,
2 = bad input: a plan or golden plan that cannot be read or that 'plan validate' rejects
(every problem is printed, as validate prints it). One line per check, fit for CI logs;
with --output json one object {plan, ok, failed, checks: [{ok, message, stage, name,
subject, value, limit}]}: stage is verify, predict, golden, resolve or resolve_vs_golden; name what
was checked (throughput_rps, gpus, ...); subject the model, application or task ("" = the
whole plan); value the measured number and limit the bound it was held to, the reference
with --tolerance applied (null where no number applies). PLAN defaults to ./plan.json, as
for simulate and serve.`,
		Example: `  plan check plan.json
  plan check plan.json --golden testdata/golden/demo-ppipe.json --tolerance 1%
  plan check testdata/golden/demo-ppipe.json --golden testdata/golden/demo-ppipe.json --resolve
  plan check testdata/golden/dyorc-small.json --arrivals bursty:2   # does it hold on bursty traffic?`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := run.ResolvePlanArg(args)
			if err != nil {
				return err
			}
			return runCheck(cmd, app, o, path)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.golden, "golden", "", "golden plan to compare per-model throughput with")
	f.StringVar(&o.tolerance, "tolerance", "1%", "allowed relative throughput drop: 1% or 0.01")
	f.BoolVar(&o.resolve, "resolve", false, "re-solve from the plan's embedded inputs and compare")
	f.DurationVar(&o.timeLimit, "time-limit", 0, "time limit of the re-solve (default: the plan's recorded limit)")
	f.StringVar(&o.arrivals, "arrivals", "", "arrival process of the predict stage: poisson, bursty[:CV] or mmpp (default: the one the plan's prediction records)")
	f.BoolVar(&o.allowMiss, "allow-miss", false, "report an application that misses its target at the rate to size by (MISS) without failing the check")
	return cmd
}

func runCheck(cmd *cobra.Command, app *App, o *checkOptions, path string) error {
	return check.Run(cmd.Context(), check.Args{Systems: app.Systems, Plan: path, Golden: o.golden,
		Tolerance: o.tolerance, Resolve: o.resolve, TimeLimit: o.timeLimit, Arrivals: o.arrivals, AllowMiss: o.allowMiss}, &app.IO)
}
