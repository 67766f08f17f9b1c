package formats

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestSchema fails when a committed schema/<kind>.schema.json differs from what the Go types
// generate. `go test ./formats -update` rewrites them.
func TestSchema(t *testing.T) {
	for _, kind := range Kinds {
		got, err := Schema(kind, inTree)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(got) {
			t.Fatalf("Schema(%s, inTree) is not valid JSON", kind)
		}
		path := filepath.Join(schemaDir, SchemaFile(kind))
		if *update {
			if err := os.MkdirAll(schemaDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := WriteAtomic(path, got); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v: run `go test ./formats -update` to generate the schemas", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("schema/%s is out of date with the Go types in formats: run `go test ./formats -update` and commit the result\n%s",
				SchemaFile(kind), firstDiff(got, want))
		}
	}
	if _, err := Schema("Widget", nil); err == nil {
		t.Error("Schema(Widget, nil): want an error for an unknown kind")
	}
}

// TestSchemaAcceptsGoodFixtures checks every good fixture (as JSON) against its kind's schema
// with a small validator for the keywords the generator emits.
func TestSchemaAcceptsGoodFixtures(t *testing.T) {
	for _, f := range goodFixtures(t) {
		doc := loadGood(t, filepath.Base(f))
		out, err := Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if errs := schemaCheck(t, doc.GetKind(), out); len(errs) > 0 {
			t.Errorf("%s does not match schema/%s:\n%s", f, SchemaFile(doc.GetKind()), strings.Join(errs, "\n"))
		}
	}
}

// TestSchemaAgreesWithDecoder: inputs the decoder rejects structurally, the schema rejects too.
func TestSchemaAgreesWithDecoder(t *testing.T) {
	cases := []struct{ name, js string }{
		{"unknown top-level field", `{"apiVersion":"plan/v1","kind":"Cluster","metadata":{},"gpus":[],"nic_gbps":1,"extra":1}`},
		{"unknown nested field", `{"apiVersion":"plan/v1","kind":"Cluster","metadata":{},"gpus":[{"type":"L4","count":1,"per_server":1,"cuont":2}],"nic_gbps":1}`},
		{"missing required", `{"apiVersion":"plan/v1","kind":"Cluster","metadata":{},"gpus":[]}`},
		{"wrong kind const", `{"apiVersion":"plan/v1","kind":"Plan","metadata":{},"gpus":[],"nic_gbps":1}`},
		{"wrong apiVersion", `{"apiVersion":"plan/v2","kind":"Cluster","metadata":{},"gpus":[],"nic_gbps":1}`},
		{"string for integer", `{"apiVersion":"plan/v1","kind":"Cluster","metadata":{},"gpus":[{"type":"L4","count":"4","per_server":1}],"nic_gbps":1}`},
		{"fraction for integer", `{"apiVersion":"plan/v1","kind":"Cluster","metadata":{},"gpus":[{"type":"L4","count":1.5,"per_server":1}],"nic_gbps":1}`},
		{"null struct", `{"apiVersion":"plan/v1","kind":"Cluster","metadata":null,"gpus":[],"nic_gbps":1}`},
		{"bad duration", `{"apiVersion":"plan/v1","kind":"Trace","metadata":{},"counts":{"interval":"5 minutes","counts":[1]}}`},
		{"number for duration", `{"apiVersion":"plan/v1","kind":"Trace","metadata":{},"counts":{"interval":60,"counts":[1]}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, decErr := Parse("x.json", []byte(c.js), inTree)
			if decErr == nil {
				t.Fatalf("decoder accepted %s", c.js)
			}
			var kind string
			if strings.Contains(c.js, `"kind":"Trace"`) {
				kind = KindTrace
			} else {
				kind = KindCluster
			}
			if errs := schemaCheck(t, kind, []byte(c.js)); len(errs) == 0 {
				t.Fatalf("schema accepted what the decoder rejects (%v)", decErr)
			}
		})
	}
}

func TestDurationPattern(t *testing.T) {
	re := regexp.MustCompile(DurationPattern)
	for _, s := range []string{"0", "0s", "200ms", "1.5s", "-5ms", "+3h", "1h2m3.5s", "1us", "1µs", "1μs", "3ns", ".5s", "5.s", "2562047h47m16.854775807s"} {
		if _, err := time.ParseDuration(s); err != nil {
			t.Fatalf("test case %q is not a Go duration: %v", s, err)
		}
		if !re.MatchString(s) {
			t.Errorf("pattern rejects %q, which time.ParseDuration accepts", s)
		}
	}
	for _, s := range []string{"", "5", "ms", "5 ms", "5sec", "1d", "-", ".s", "1e3s", "5s "} {
		if re.MatchString(s) {
			t.Errorf("pattern accepts %q", s)
		}
	}
	// Everything Duration marshals to matches.
	for _, d := range []time.Duration{0, 1, time.Microsecond, 1500 * time.Millisecond, -time.Hour, 1<<63 - 1} {
		b, _ := Duration(d).MarshalJSON()
		s, _ := strconv.Unquote(string(b))
		if !re.MatchString(s) {
			t.Errorf("pattern rejects the marshaled duration %q", s)
		}
	}
}

// schemaCheck validates JSON against the generated schema of a kind with a full JSON Schema
// implementation (santhosh-tekuri/jsonschema, draft 2020-12 as the schema declares), so a
// keyword the generator emits wrongly fails here as it would in a user's editor or CI.
func schemaCheck(t testing.TB, kind string, js []byte) []string {
	t.Helper()
	raw, err := Schema(kind, inTree)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	url := "mem:///" + SchemaFile(kind)
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile(url)
	if err != nil {
		t.Fatalf("schema/%s: %v", SchemaFile(kind), err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(v); err != nil {
		return strings.Split(err.Error(), "\n")
	}
	return nil
}

// TestSchemaAcceptsGoldenPlans: every golden plan of the repository (testdata/golden), as plan
// writes them, matches the published plan schema.
func TestSchemaAcceptsGoldenPlans(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "golden", "*.json"))
	legacy, _ := filepath.Glob(filepath.Join("..", "testdata", "golden", "legacy", "*.json"))
	files = append(files, legacy...)
	if len(files) == 0 {
		t.Fatal("no golden plans in ../testdata/golden")
	}
	for _, f := range files {
		js, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if errs := schemaCheck(t, KindPlan, js); len(errs) > 0 {
			t.Errorf("%s does not match schema/%s:\n%s", f, SchemaFile(KindPlan), strings.Join(errs, "\n"))
		}
	}
}
