package cascadesec

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats"
)

// ImportValidation reads CascadeServe per-sample validation records (App. C.1: sample,
// model, pred, cert, and label or correct) from the file called name, by its extension:
//
//   - .json: a JSON array of records, or an object with a "records" array (an
//     apiVersion/kind wrapper is accepted and ignored);
//   - .jsonl / .ndjson: one record object per line (blank lines skipped);
//   - .csv: a header row naming the columns (sample, model, pred, cert, label, correct;
//     extra columns are errors), then one record per row. The artifact's row-aligned
//     per-model CSVs (pred,label,cert, no sample or model column) import when model is
//     given: the row number becomes the sample.
//
// model, when not empty, fills records without a model. Every problem is reported with the
// file, the line (or array index) and the field; the records are not validated across
// models here: the workload's cascades validation does that (Cascade.Validation).
func ImportValidation(name string, data []byte, model string) ([]ValidationRecord, error) {
	return ImportValidationScale(name, data, model, false)
}

// ImportValidationScale is ImportValidation for certainties on any real scale when score is
// set (a cascade's certainty: score, e.g. logit gaps); otherwise they must be in [0, 1].
func ImportValidationScale(name string, data []byte, model string, score bool) ([]ValidationRecord, error) {
	var recs []ValidationRecord
	var errs formats.ErrorList
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json":
		recs, errs = importJSON(data)
	case ".jsonl", ".ndjson":
		recs, errs = importJSONL(data)
	case ".csv":
		recs, errs = importCSV(data, model)
	default:
		return nil, formats.ErrorList{{File: name, Value: fmt.Sprintf("%q", filepath.Ext(name)), Rule: "validation records must be .json, .jsonl or .csv"}}.Tagged(formats.ErrDecode)
	}
	if len(errs) == 0 {
		for i := range recs {
			if recs[i].Model == "" {
				recs[i].Model = model
			}
			errs = append(errs, checkRecord(&recs[i], fmt.Sprintf("records[%d]", i), score)...)
		}
		if len(recs) == 0 {
			errs = append(errs, &formats.FieldError{Rule: "no validation records"})
		}
	}
	if len(errs) > 0 {
		if len(errs) > 20 {
			errs = append(errs[:20], &formats.FieldError{Rule: fmt.Sprintf("... and %d more problems", len(errs)-20)})
		}
		return nil, errs.WithFile(name).Tagged(formats.ErrDecode)
	}
	return recs, nil
}

// LoadCascadeFiles imports the record files the workload's cascades name (validation_file,
// test_file; relative to the directory of workloadPath) into their validation and test
// records, clearing the file fields, so that what is planned and embedded in the plan holds
// the records themselves. The caller validates the workload again afterwards (the
// cross-record rules: every model covering the same samples, test models known).
func LoadCascadeFiles(w *formats.Workload, workloadPath string) error {
	var errs formats.ErrorList
	cs := CascadesOf(w)
	for i := range cs {
		c := &cs[i]
		for _, f := range []struct {
			name  *string
			recs  *[]ValidationRecord
			field string
		}{{&c.ValidationFile, &c.Validation, "validation_file"}, {&c.TestFile, &c.Test, "test_file"}} {
			if *f.name == "" {
				continue
			}
			path := *f.name
			if !filepath.IsAbs(path) && workloadPath != "" && workloadPath != "-" {
				path = filepath.Join(filepath.Dir(workloadPath), path)
			}
			data, err := formats.ReadBytes(path)
			if err != nil {
				errs = append(errs, &formats.FieldError{File: workloadPath, Path: fmt.Sprintf("cascades[%d].%s", i, f.field), Value: fmt.Sprintf("%q", *f.name), Rule: "cannot read " + path})
				continue
			}
			if *f.recs, err = ImportValidationScale(path, data, "", c.Certainty == "score"); err != nil {
				return err // names the records file, line and field
			}
			*f.name = ""
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// checkRecord applies the per-record rules (the cross-record ones live in
// Cascade.validateRecords).
func checkRecord(r *ValidationRecord, p string, score bool) formats.ErrorList {
	var v formats.Checker
	v.AtLeast(formats.Field(p, "sample"), int64(r.Sample), 0)
	v.NotEmpty(formats.Field(p, "model"), r.Model)
	checkOutcome(&v, p, r, score, "--certainty score for another scale")
	return v.Errs()
}

func importJSON(data []byte) ([]ValidationRecord, formats.ErrorList) {
	data = bytes.TrimSpace(data)
	var recs []ValidationRecord
	if len(data) > 0 && data[0] == '{' {
		var wrap struct {
			APIVersion string             `json:"apiVersion"`
			Kind       string             `json:"kind"`
			Records    []ValidationRecord `json:"records"`
		}
		if err := formats.StrictUnmarshal(data, &wrap); err != nil {
			return nil, formats.ErrorList{{Rule: "not a validation-records document: " + err.Error()}}
		}
		return wrap.Records, nil
	}
	if err := formats.StrictUnmarshal(data, &recs); err != nil {
		return nil, formats.ErrorList{{Rule: "not a JSON array of validation records: " + err.Error()}}
	}
	return recs, nil
}

func importJSONL(data []byte) ([]ValidationRecord, formats.ErrorList) {
	var recs []ValidationRecord
	var errs formats.ErrorList
	at, err := formats.ScanLines(data, func(line int, b []byte) bool {
		var r ValidationRecord
		if err := formats.StrictUnmarshal(b, &r); err != nil {
			errs = append(errs, &formats.FieldError{Path: fmt.Sprintf("line %d", line), Rule: err.Error()})
		} else {
			recs = append(recs, r)
		}
		return true
	})
	if err != nil {
		errs = append(errs, &formats.FieldError{Path: fmt.Sprintf("line %d", at), Rule: err.Error()})
	}
	return recs, errs
}

func importCSV(data []byte, model string) ([]ValidationRecord, formats.ErrorList) {
	r := csv.NewReader(bytes.NewReader(data))
	r.TrimLeadingSpace = true
	header, err := r.Read()
	if err != nil {
		return nil, formats.ErrorList{{Path: "line 1", Rule: "a header row is required: " + csvErr(err)}}
	}
	col := map[string]int{}
	var errs formats.ErrorList
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		switch h {
		case "sample", "model", "pred", "cert", "label", "correct":
		default:
			errs = append(errs, &formats.FieldError{Path: fmt.Sprintf("line 1, column %d", i+1), Value: fmt.Sprintf("%q", h), Rule: "unknown column: must be one of sample, model, pred, cert, label, correct"})
			continue
		}
		if _, dup := col[h]; dup {
			errs = append(errs, &formats.FieldError{Path: fmt.Sprintf("line 1, column %d", i+1), Value: fmt.Sprintf("%q", h), Rule: "duplicate column"})
		}
		col[h] = i
	}
	for _, need := range []string{"pred", "cert"} {
		if _, ok := col[need]; !ok {
			errs = append(errs, &formats.FieldError{Path: "line 1", Rule: "missing column " + need})
		}
	}
	if _, ok := col["model"]; !ok && model == "" {
		errs = append(errs, &formats.FieldError{Path: "line 1", Rule: "missing column model (or name the model the file holds)"})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	var recs []ValidationRecord
	for row := 0; ; row++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// FieldPos needs a record; a failed read has none (it would panic), so the line
			// comes from the parse error itself.
			at := "line ?"
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				at = fmt.Sprintf("line %d", pe.Line)
			}
			errs = append(errs, &formats.FieldError{Path: at, Rule: csvErr(err)})
			if len(errs) > 20 {
				break
			}
			continue
		}
		line, _ := r.FieldPos(0)
		at := fmt.Sprintf("line %d", line)
		get := func(k string) (string, bool) {
			i, ok := col[k]
			if !ok || i >= len(rec) {
				return "", false
			}
			return strings.TrimSpace(rec[i]), true
		}
		v := ValidationRecord{Sample: row}
		if s, ok := get("sample"); ok {
			n, err := strconv.Atoi(s)
			if err != nil {
				errs = append(errs, &formats.FieldError{Path: at + ": sample", Value: fmt.Sprintf("%q", s), Rule: "must be an integer"})
			}
			v.Sample = n
		}
		v.Model, _ = get("model")
		v.Pred, _ = get("pred")
		if s, ok := get("cert"); ok {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				errs = append(errs, &formats.FieldError{Path: at + ": cert", Value: fmt.Sprintf("%q", s), Rule: "must be a number"})
			}
			v.Cert = f
		}
		v.Label, _ = get("label")
		if s, ok := get("correct"); ok && s != "" {
			b, err := strconv.ParseBool(s)
			if err != nil {
				errs = append(errs, &formats.FieldError{Path: at + ": correct", Value: fmt.Sprintf("%q", s), Rule: "must be true or false"})
			}
			v.Correct = &b
		}
		recs = append(recs, v)
	}
	return recs, errs
}

func csvErr(err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// ValidationRecordsJSON renders records in the importable JSON form.
// KindValidationRecords is the kind of the document ValidationRecordsJSON writes.
const KindValidationRecords = "ValidationRecords"

// IsValidationRecords says whether data is a ValidationRecords document (by its kind).
func IsValidationRecords(data []byte) bool {
	var head struct {
		Kind string `json:"kind"`
	}
	return json.Unmarshal(bytes.TrimSpace(data), &head) == nil && head.Kind == KindValidationRecords
}

func ValidationRecordsJSON(recs []ValidationRecord) ([]byte, error) {
	return json.MarshalIndent(struct {
		APIVersion string             `json:"apiVersion"`
		Kind       string             `json:"kind"`
		Records    []ValidationRecord `json:"records"`
	}{formats.APIVersion, KindValidationRecords, recs}, "", "  ")
}

// checkOutcome checks a record's certainty and outcome: a finite certainty, in [0, 1] unless
// score (certainties are top-1 minus top-2 scores of normalized outputs, CascadeServe App. B
// Eq. 5: outside [0, 1] they are a unit mistake, logits or percentages; other says how to
// declare another scale), and the outcome given one way, a label or correct.
func checkOutcome(c *formats.Checker, p string, r *ValidationRecord, score bool, other string) {
	switch {
	case !formats.Finite(r.Cert):
		c.Add(formats.Field(p, "cert"), r.Cert, "must be a finite number")
	case !score && (r.Cert < 0 || r.Cert > 1):
		c.Add(formats.Field(p, "cert"), r.Cert, "must be in [0, 1] (a certainty: top-1 minus top-2 normalized score; %s)", other)
	}
	switch {
	case r.Label != "" && r.Correct != nil:
		c.Add(formats.Field(p, "correct"), *r.Correct, "set label or correct, not both")
	case r.Label == "" && r.Correct == nil:
		c.Add(p, nil, "must set label or correct")
	}
}
