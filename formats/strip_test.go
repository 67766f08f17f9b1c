package formats_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
)

// TestParseBeyondUnknown: a file with unknown fields and broken rules gives both at once
// (plan validate reports every problem in one run); a wrong type still stops the parse.
func TestParseBeyondUnknown(t *testing.T) {
	const f = "testdata/strip/workload-unknown-and-bad.yaml"
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	doc, unknown, err := formats.ParseBeyondUnknown(f, data, intree.Sections())
	if err != nil || doc == nil {
		t.Fatalf("err %v", err)
	}
	var got []string
	for _, e := range unknown {
		got = append(got, e.Path)
	}
	if want := []string{"llm_classes[0].bogus", "llm_classes[0].input_tokens.extra"}; !reflect.DeepEqual(got, want) {
		t.Errorf("unknown fields %v, want %v", got, want)
	}
	rules := formats.Validate(doc, intree.Sections()).Error()
	for _, w := range []string{"llm_classes[0].slo: -5s: must be > 0", "llm_classes[0].rate_rps: -3: must be >= 0"} {
		if !strings.Contains(rules, w) {
			t.Errorf("rules %q: want %q", rules, w)
		}
	}
	wrongType := strings.Replace(string(data), "rate_rps: -3", "rate_rps: fast", 1)
	if doc, _, err := formats.ParseBeyondUnknown(f, []byte(wrongType), intree.Sections()); err == nil || doc != nil {
		t.Errorf("a wrong type: doc %v, err %v: want the parse error alone", doc, err)
	}
}

// FuzzParseBeyondUnknown: no input makes the second pass panic, and a document it returns
// comes with the unknown fields that were removed.
func FuzzParseBeyondUnknown(f *testing.F) {
	data, err := os.ReadFile("testdata/strip/workload-unknown-and-bad.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"apiVersion":"plan/v1","kind":"Cluster","gpus":[{"type":"A100","count":1,"x":[1,{"y":2}]}],"z":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, unknown, err := formats.ParseBeyondUnknown("f.yaml", b, intree.Sections())
		if err == nil && doc == nil {
			t.Error("no document and no error")
		}
		if err != nil && (doc != nil || unknown != nil) {
			t.Error("an error with a document")
		}
	})
}
