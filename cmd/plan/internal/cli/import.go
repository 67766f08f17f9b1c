package cli

import (
	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/internal/run/importval"
)

type importOptions struct {
	model, certainty, workload, cascade, as, out string
}

func newImportCmd(app *App) *cobra.Command {
	o := &importOptions{}
	cmd := &cobra.Command{
		Use:   "import validation FILE",
		Short: "Import a cascade's per-sample validation (or test) records from CSV, JSONL or JSON",
		Long: `import validation reads CascadeServe per-sample records (one per model and sample:
sample, model, pred, cert, and label or correct) evaluated elsewhere, from FILE by its
extension: .csv with a header row (the authors' per-model pred,label,cert files import with
--model), .jsonl (one record a line) or .json (an array, or an object with "records").

Without --workload it writes the records as a ValidationRecords document. With
--workload it puts them into that workload's cascade (--cascade NAME when it has several)
as its validation records (--as validation, replacing a candidates table) or as the
held-out test records that 'plan simulate' replays and reports accuracy on (--as test),
checks the whole workload and writes it.

Certainties are probabilities in [0, 1] by default; --certainty score accepts any real
scale (logit gaps: the planner's threshold grid sits on quantiles of the scores) and sets
the cascade's certainty: score.

Every problem is printed as FILE: FIELD.PATH: VALUE: RULE, with exit status 2 and nothing
written.`,
		Example: `  plan import validation bert-tiny.csv --model bert-tiny -o tiny.json
  plan import validation records.jsonl --workload workload.yaml -o workload-imported.json
  plan import validation test.csv --workload workload.yaml --as test -o workload-test.json
  plan import validation logits.jsonl --certainty score --workload workload.yaml -o w.json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 || args[0] != "validation" {
				return run.UsageErrorf("usage: plan import validation FILE (got %q)", args)
			}
			return importval.Run(cmd.Context(), importval.Args{Systems: app.Systems, File: args[1], Model: o.model,
				Certainty: o.certainty, Workload: o.workload, Cascade: o.cascade, As: o.as, Out: o.out}, &app.IO)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.model, "model", "", "model of records without a model column (the authors' per-model CSVs)")
	f.StringVar(&o.certainty, "certainty", "probability", "certainty scale: probability (in [0, 1]) or score (any real scale)")
	f.StringVar(&o.workload, "workload", "", "workload to put the records into (default: write the records alone)")
	f.StringVar(&o.cascade, "cascade", "", "the workload's cascade to fill (default: its only one)")
	f.StringVar(&o.as, "as", "validation", "with --workload: validation (planning) or test (held out, for reported accuracy)")
	f.StringVarP(&o.out, "out", "o", "", "where to write (default: standard output)")
	return cmd
}
