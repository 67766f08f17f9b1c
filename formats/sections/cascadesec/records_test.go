package cascadesec

import (
	"strings"
	"testing"
)

func TestImportValidation(t *testing.T) {
	tests := []struct {
		name, file, data, model string
		n                       int
		want                    []string
	}{
		{"json array", "v.json", `[{"sample":0,"model":"a","pred":"1","cert":0.5,"label":"1"}]`, "", 1, nil},
		{"json wrapped", "v.json", `{"apiVersion":"plan/v1","kind":"ValidationRecords","records":[{"sample":3,"model":"a","pred":"x","cert":0,"correct":true}]}`, "", 1, nil},
		{"jsonl", "v.jsonl", "{\"sample\":0,\"model\":\"a\",\"pred\":\"1\",\"cert\":0.5,\"label\":\"1\"}\n\n{\"sample\":1,\"model\":\"a\",\"pred\":\"0\",\"cert\":0.1,\"label\":\"1\"}\n", "", 2, nil},
		{"csv", "v.csv", "sample,model,pred,cert,label\n0,a,1,0.5,1\n1,a,0,0.25,1\n", "", 2, nil},
		{"csv artifact per-model", "tiny.csv", "pred,label,cert\n1,1,0.9\n0,1,0.1\n", "bert-tiny", 2, nil},
		{"csv correct", "v.csv", "sample,model,pred,cert,correct\n0,a,B,0.5,true\n", "", 1, nil},
		{"bad extension", "v.txt", ``, "", 0, []string{`v.txt: ".txt": validation records must be .json, .jsonl or .csv`}},
		{"cert above 1", "v.csv", "sample,model,pred,cert,label\n0,a,1,3.5,1\n", "", 0, []string{`v.csv: records[0].cert: 3.5: must be in [0, 1] (a certainty: top-1 minus top-2 normalized score; --certainty score for another scale)`}},
		{"cert negative jsonl", "v.jsonl", `{"sample":0,"model":"a","pred":"1","cert":-0.5,"label":"1"}`, "", 0, []string{`v.jsonl: records[0].cert: -0.5: must be in [0, 1] (a certainty: top-1 minus top-2 normalized score; --certainty score for another scale)`}},
		{"csv bad number", "v.csv", "sample,model,pred,cert,label\n0,a,1,high,1\n", "", 0, []string{`v.csv: line 2: cert: "high": must be a number`}},
		{"csv unknown column", "v.csv", "sample,model,pred,cert,label,score\n", "", 0, []string{`v.csv: line 1, column 6: "score": unknown column: must be one of sample, model, pred, cert, label, correct`}},
		{"csv no model", "v.csv", "pred,label,cert\n1,1,0.9\n", "", 0, []string{`v.csv: line 1: missing column model (or name the model the file holds)`}},
		{"csv no label", "v.csv", "sample,model,pred,cert\n0,a,1,0.5\n", "", 0, []string{`v.csv: records[0]: must set label or correct`}},
		{"jsonl unknown field", "v.jsonl", `{"sample":0,"model":"a","pred":"1","cert":0.5,"label":"1","logit":3}`, "", 0, []string{`v.jsonl: line 1: json: unknown field "logit"`}},
		{"empty", "v.json", `[]`, "", 0, []string{`v.json: no validation records`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := ImportValidation(tc.file, []byte(tc.data), tc.model)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if len(recs) != tc.n {
					t.Fatalf("got %d records, want %d", len(recs), tc.n)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			got := strings.Split(err.Error(), "\n")
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestImportValidationRoundTrip(t *testing.T) {
	c := true
	in := []ValidationRecord{{Sample: 0, Model: "a", Pred: "1", Cert: 0.25, Label: "1"}, {Sample: 1, Model: "a", Pred: "B", Cert: 1, Correct: &c}}
	b, err := ValidationRecordsJSON(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ImportValidation("r.json", b, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[1].Correct == nil || !*out[1].Correct || out[0].Cert != 0.25 {
		t.Fatalf("round trip: %+v", out)
	}
}

func FuzzImportValidation(f *testing.F) {
	f.Add("v.csv", "sample,model,pred,cert,label\n0,a,1,0.5,1\n")
	f.Add("v.jsonl", `{"sample":0,"model":"a","pred":"1","cert":0.5,"label":"1"}`)
	f.Add("v.json", `[{"sample":0,"model":"a","pred":"1","cert":0.5,"label":"1"}]`)
	f.Fuzz(func(t *testing.T, name, data string) {
		recs, err := ImportValidation(name, []byte(data), "m")
		if err != nil {
			return
		}
		for _, r := range recs {
			if r.Cert < 0 || r.Cert > 1 || r.Model == "" || r.Sample < 0 {
				t.Fatalf("accepted a bad record %+v", r)
			}
		}
	})
}

// TestJSONLNullRefused: a validation record whose number is null is refused naming its line
// and field (encoding/json read it as 0), and so is a key that differs only in case.
func TestJSONLNullRefused(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"null sample", `{"sample": null, "model": "a", "pred": "x", "cert": 0.5, "label": "x"}`, "v.jsonl: line 1: sample: null at byte 11 where a number is required"},
		{"null cert", `{"sample": 1, "model": "a", "pred": "x", "cert": null, "label": "x"}`, "v.jsonl: line 1: cert: null"},
		{"case variant", `{"sample": 1, "model": "a", "pred": "x", "cert": 0.5, "CERT": 0.9, "label": "x"}`, `v.jsonl: line 1: key "CERT" at byte 54 differs only in case from field "cert"`},
		{"duplicate", `{"sample": 1, "sample": 2, "model": "a", "pred": "x", "cert": 0.5, "label": "x"}`, `v.jsonl: line 1: duplicate key "sample"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ImportValidation("v.jsonl", []byte(c.in+"\n"), "")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant %q", err, c.want)
			}
		})
	}
}
