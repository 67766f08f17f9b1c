package cli

import (
	"slices"

	"github.com/spf13/cobra"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
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
			return runImport(app, o, args[1])
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

func runImport(app *App, o *importOptions, file string) error {
	if o.certainty != "probability" && o.certainty != "score" {
		return run.UsageErrorf("--certainty: %q: must be probability or score", o.certainty)
	}
	if o.as != "validation" && o.as != "test" {
		return run.UsageErrorf("--as: %q: must be validation or test", o.as)
	}
	if o.out != "" {
		if err := formats.CheckWritable(o.out); err != nil {
			return run.UsageErrorf("--out: %q: %v", o.out, err)
		}
	}
	data, err := formats.ReadBytes(file)
	if err != nil {
		return run.UsageError(err)
	}
	recs, err := formats.ImportValidationScale(file, data, o.model, o.certainty == "score")
	if err != nil {
		return run.UsageError(err)
	}
	var out []byte
	if o.workload == "" {
		if out, err = formats.ValidationRecordsJSON(recs); err != nil {
			return err
		}
		out = append(out, '\n')
	} else {
		w, err := formats.ReadIntoWith[*formats.Workload](o.workload, app.Systems.Sections())
		if err != nil {
			return run.UsageError(err)
		}
		i := slices.IndexFunc(w.Cascades, func(c formats.Cascade) bool { return c.Name == o.cascade })
		switch {
		case o.cascade == "" && len(w.Cascades) == 1:
			i = 0
		case o.cascade == "":
			return run.UsageErrorf("%s: cascades: %d cascades: name one with --cascade", o.workload, len(w.Cascades))
		case i < 0:
			return run.UsageErrorf("--cascade: %q: not a cascade of %s", o.cascade, o.workload)
		}
		c := &w.Cascades[i]
		if o.as == "test" {
			c.Test = recs
		} else {
			c.Validation, c.Candidates = recs, nil
		}
		if o.certainty == "score" {
			c.Certainty = "score"
		}
		// The records' problems are the workload's now (models it lacks, samples not
		// covered, a test set with models the validation set lacks): name both files.
		if errs := formats.ValidateWith(w, app.Systems.Sections()); len(errs) > 0 {
			return run.UsageError(errs.WithFile(o.workload))
		}
		if out, err = formats.Marshal(w); err != nil {
			return err
		}
	}
	if o.out == "" {
		_, err = app.Out.Write(out)
		return err
	}
	return formats.WriteAtomic(o.out, out)
}

// loadRecordFiles imports the record files a workload's cascades name (validation_file,
// test_file) and checks the workload with its records (exit 2 naming the files).
func loadRecordFiles(w *formats.Workload, path string, secs *formats.SectionSet) error {
	need := false
	for _, c := range w.Cascades {
		need = need || c.ValidationFile != "" || c.TestFile != ""
	}
	if !need {
		return nil
	}
	if err := formats.LoadCascadeFiles(w, path); err != nil {
		return run.UsageError(err)
	}
	if errs := formats.ValidateWith(w, secs); len(errs) > 0 {
		return run.UsageError(errs.WithFile(path))
	}
	return nil
}
