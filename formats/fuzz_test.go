package formats

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// fuzzSeeds adds every good fixture, golden file and a few broken inputs.
func fuzzSeeds(f *testing.F) {
	for _, dir := range []string{goodDir, goldenDir} {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, p := range files {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data)
			}
		}
	}
	for _, s := range []string{
		"", "{}", "[]", "null", "apiVersion: plan/v1\nkind: Cluster\n", clusterYAML,
		"apiVersion: plan/v1\nkind: Trace\nmetadata: {}\nrequests: [{t_us: 5}, {t_us: 1}]\n",
		"a: &a [*a]", "<<: {a: 1}", "x: .nan", `{"apiVersion":"plan/v1","kind":"Plan","metadata":{},"provenance":{}}`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzDecode: decoding never panics; whatever decodes marshals to JSON that decodes again to
// a document that marshals to the same bytes; validation and CheckSet never panic.
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if doc, err := Parse("fuzz", data, inTree); err == nil {
			_ = Validate(doc, inTree)
			_ = CheckSet(map[string]Document{"fuzz": doc}, inTree)
		}
		doc, err := Decode("fuzz", data, inTree)
		if err != nil {
			if len(Problems(err)) == 0 {
				t.Fatalf("error without problems: %v", err)
			}
			return
		}
		out, err := Marshal(doc)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		again, err := Decode("fuzz", out, inTree)
		if err != nil {
			t.Fatalf("re-decoding the marshaled document: %v\n%s", err, out)
		}
		out2, err := Marshal(again)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, out2) {
			t.Fatalf("round trip changed the document:\n%s\n---\n%s", out, out2)
		}
	})
}

// FuzzDuration: Duration decoding never panics and round-trips what it accepts.
func FuzzDuration(f *testing.F) {
	for _, s := range []string{`"200ms"`, `"1h2m3.5s"`, `"-5us"`, `"0"`, `5`, `"5"`, `null`, `"9999999999h"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Duration
		if err := json.Unmarshal(data, &d); err != nil {
			return
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var d2 Duration
		if err := json.Unmarshal(b, &d2); err != nil || d2 != d {
			t.Fatalf("%s -> %s -> %v (%v)", data, b, d2, err)
		}
	})
}
