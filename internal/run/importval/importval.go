// Package importval is `plan import validation`: a cascade's per-sample validation (or test)
// records evaluated elsewhere, read from CSV, JSONL or JSON, written as a ValidationRecords
// document or put into a workload's cascade (CascadeServe's planner plans on the validation
// records; simulate replays the test records). It also loads the record files a workload's
// cascades name (LoadRecordFiles), which plan solve needs too.
package importval

import (
	"context"
	"slices"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/internal/registry/systems"
	"github.com/plan-dev/plan/internal/run"
)

// Args are `plan import validation FILE`'s inputs.
type Args struct {
	// Systems is the system registry (its sections check the workload).
	Systems *systems.Registry
	// File is the records file: .csv, .jsonl or .json.
	File string
	// Model is --model: the model of records without a model column ("" = none).
	Model string
	// Certainty is --certainty: probability (the default) or score.
	Certainty string
	// Workload is --workload: the workload to put the records into ("" = write the records
	// alone).
	Workload string
	// Cascade is --cascade: the workload's cascade to fill ("" = its only one).
	Cascade string
	// As is --as: validation (the default) or test.
	As string
	// Out is --out: where to write ("" = standard output).
	Out string
}

// Run imports the records and writes them, alone or in the workload.
func Run(_ context.Context, a Args, io *run.IO) error {
	if a.Certainty != "probability" && a.Certainty != "score" {
		return run.UsageErrorf("--certainty: %q: must be probability or score", a.Certainty)
	}
	if a.As != "validation" && a.As != "test" {
		return run.UsageErrorf("--as: %q: must be validation or test", a.As)
	}
	if a.Out != "" {
		if err := formats.CheckWritable(a.Out); err != nil {
			return run.UsageErrorf("--out: %q: %v", a.Out, err)
		}
	}
	data, err := formats.ReadBytes(a.File)
	if err != nil {
		return run.UsageError(err)
	}
	recs, err := cascadesec.ImportValidationScale(a.File, data, a.Model, a.Certainty == "score")
	if err != nil {
		return run.UsageError(err)
	}
	var out []byte
	if a.Workload == "" {
		if out, err = cascadesec.ValidationRecordsJSON(recs); err != nil {
			return err
		}
		out = append(out, '\n')
	} else if out, err = intoWorkload(a, recs); err != nil {
		return err
	}
	if a.Out == "" {
		_, err = io.Out.Write(out)
		return err
	}
	return formats.WriteAtomic(a.Out, out)
}

// intoWorkload puts recs into the workload's cascade as its validation or test records and
// returns the checked workload's document.
func intoWorkload(a Args, recs []cascadesec.ValidationRecord) ([]byte, error) {
	w, err := formats.ReadInto[*formats.Workload](a.Workload, a.Systems.Sections())
	if err != nil {
		return nil, run.UsageError(err)
	}
	i := slices.IndexFunc(cascadesec.CascadesOf(w), func(c cascadesec.Cascade) bool { return c.Name == a.Cascade })
	switch {
	case a.Cascade == "" && len(cascadesec.CascadesOf(w)) == 1:
		i = 0
	case a.Cascade == "":
		return nil, run.UsageErrorf("%s: cascades: %d cascades: name one with --cascade", a.Workload, len(cascadesec.CascadesOf(w)))
	case i < 0:
		return nil, run.UsageErrorf("--cascade: %q: not a cascade of %s", a.Cascade, a.Workload)
	}
	c := &cascadesec.CascadesOf(w)[i]
	if a.As == "test" {
		c.Test = recs
	} else {
		c.Validation, c.Candidates = recs, nil
	}
	if a.Certainty == "score" {
		c.Certainty = "score"
	}
	// The records' problems are the workload's now (models it lacks, samples not
	// covered, a test set with models the validation set lacks): name both files.
	if errs := formats.Validate(w, a.Systems.Sections()); len(errs) > 0 {
		return nil, run.UsageError(errs.WithFile(a.Workload))
	}
	return formats.Marshal(w)
}

// LoadRecordFiles imports the record files a workload's cascades name (validation_file,
// test_file) and checks the workload with its records (exit 2 naming the files).
func LoadRecordFiles(w *formats.Workload, path string, secs *formats.SectionSet) error {
	need := false
	for _, c := range cascadesec.CascadesOf(w) {
		need = need || c.ValidationFile != "" || c.TestFile != ""
	}
	if !need {
		return nil
	}
	if err := cascadesec.LoadCascadeFiles(w, path); err != nil {
		return run.UsageError(err)
	}
	if errs := formats.Validate(w, secs); len(errs) > 0 {
		return run.UsageError(errs.WithFile(path))
	}
	return nil
}
