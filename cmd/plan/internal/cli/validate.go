package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run/validate"
)

type validateOptions struct {
	schema string
	// use is --for: what the profiles are checked for (formats.ProfileUse).
	use string
}

func newValidateCmd(app *App) *cobra.Command {
	o := &validateOptions{}
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check profile, cluster, workload, plan and trace files",
		Long: `validate decodes each file by its kind (apiVersion plan/v1; YAML or JSON), strictly:
unknown fields, missing required fields, wrong types and NaN or infinite numbers are errors.
It then checks every semantic rule of the kind, and, across all the files given together,
that they agree: workloads name profiled models, profiles have latencies for the cluster's
GPU types, plans use the cluster's GPU types and the profiles' models and blocks, traces
target the workload's models and applications.

Every problem is printed to stderr, one per line, as FILE: FIELD.PATH: VALUE: RULE. Good
files are listed on stdout as FILE: ok (KIND), or, with --output json, every file as
{file, kind, ok, errors[]}. The exit status is 0 when every file is good and 2 otherwise.
Nothing is written. FILE "-" reads standard input.

Besides the documents, validate reads every other file plan writes, strictly, as its
writer wrote it: a schedule (solve --window), validation records (import validation),
simulation, schedule and autopilot reports (simulate --report, load --report), request
logs (simulate --requests-out), the frontier (frontier --output json) and each bench's
bench.json.

--for says what the profiles are for: plan (the default: plan solve, whose planner reads
every field of an LLM profile) or replay (plan simulate --llm: one engine, which reads its
iteration curves, KV capacity and engine block; the planner-only fields may be left out).

--schema KIND prints the JSON Schema (draft 2020-12) of a kind instead; the same schemas
are published in the repository's schema/ folder.`,
		Example: `  plan validate cluster.yaml
  plan validate cluster.yaml profile.json workload.yaml plan.json
  plan validate plan.json --output json | jq '.[] | select(.ok | not)'
  plan validate --for replay engine-profile.json    # a profile only replayed (plan simulate --llm)
  cat workload.yaml | plan validate -
  plan validate --schema Workload > workload.schema.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return validate.Run(cmd.Context(), validate.Args{Files: args, Schema: o.schema, Use: o.use, Systems: app.Systems, ToolBenches: toolBenches}, &app.IO)
		},
	}
	cmd.Flags().StringVar(&o.schema, "schema", "", "print the JSON Schema of a kind ("+strings.Join(formats.Kinds, ", ")+") and exit")
	cmd.Flags().StringVar(&o.use, "for", string(formats.UsePlan), "what profiles are checked for: plan (every field a planner reads) or replay (one engine: plan simulate --llm)")
	return cmd
}
