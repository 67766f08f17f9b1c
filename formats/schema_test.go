package formats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSchema fails when a committed schema/<kind>.schema.json differs from what the Go types
// generate. `go test ./formats -update` rewrites them.
func TestSchema(t *testing.T) {
	for _, kind := range Kinds {
		got, err := Schema(kind)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(got) {
			t.Fatalf("Schema(%s) is not valid JSON", kind)
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
	if _, err := Schema("Widget"); err == nil {
		t.Error("Schema(Widget): want an error for an unknown kind")
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
			_, decErr := Parse("x.json", []byte(c.js))
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

// schemaCheck validates JSON against the committed-or-generated schema of a kind. It supports
// exactly the keywords Schema emits: $ref, const, type, properties, required,
// additionalProperties, items, pattern, anyOf, minimum, maximum.
func schemaCheck(t testing.TB, kind string, js []byte) []string {
	t.Helper()
	raw, err := Schema(kind)
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	sv := &schemaValidator{root: schema}
	sv.check(schema, v, "$")
	return sv.errs
}

type schemaValidator struct {
	root map[string]any
	errs []string
}

func (sv *schemaValidator) fail(path, format string, args ...any) {
	sv.errs = append(sv.errs, path+": "+fmt.Sprintf(format, args...))
}

func (sv *schemaValidator) check(s map[string]any, v any, path string) {
	known := map[string]bool{"$schema": true, "$id": true, "title": true, "description": true, "$defs": true,
		"$ref": true, "const": true, "type": true, "properties": true, "required": true,
		"additionalProperties": true, "items": true, "pattern": true, "anyOf": true, "minimum": true, "maximum": true}
	for k := range s {
		if !known[k] {
			sv.fail(path, "schema uses keyword %s that the test validator does not know", k)
		}
	}
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		def, ok := sv.root["$defs"].(map[string]any)[name].(map[string]any)
		if !ok {
			sv.fail(path, "unresolvable $ref %s", ref)
			return
		}
		sv.check(def, v, path)
	}
	if c, ok := s["const"]; ok && fmt.Sprint(c) != fmt.Sprint(v) {
		sv.fail(path, "want const %v, got %v", c, v)
	}
	if ty, ok := s["type"]; ok {
		var types []string
		switch x := ty.(type) {
		case string:
			types = []string{x}
		case []any:
			for _, e := range x {
				types = append(types, e.(string))
			}
		}
		match := false
		for _, ty := range types {
			if jsonType(v, ty) {
				match = true
			}
		}
		if !match {
			sv.fail(path, "want type %v, got %T", types, v)
			return
		}
	}
	if anyOf, ok := s["anyOf"].([]any); ok {
		matched := false
		for _, alt := range anyOf {
			sub := &schemaValidator{root: sv.root}
			sub.check(alt.(map[string]any), v, path)
			if len(sub.errs) == 0 {
				matched = true
			}
		}
		if !matched {
			sv.fail(path, "matches no anyOf alternative")
		}
	}
	if p, ok := s["pattern"].(string); ok {
		if str, isStr := v.(string); isStr && !regexp.MustCompile(p).MatchString(str) {
			sv.fail(path, "%q does not match %s", str, p)
		}
	}
	if n, ok := v.(json.Number); ok {
		f, _ := n.Float64()
		if mn, ok := s["minimum"].(float64); ok && f < mn {
			sv.fail(path, "%v < minimum %v", f, mn)
		}
		if mx, ok := s["maximum"].(float64); ok && f > mx {
			sv.fail(path, "%v > maximum %v", f, mx)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, r := range asStrings(s["required"]) {
			if _, ok := x[r]; !ok {
				sv.fail(path, "missing required property %s", r)
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if ps, ok := props[k].(map[string]any); ok {
				sv.check(ps, x[k], path+"."+k)
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					sv.fail(path, "additional property %s", k)
				}
			case map[string]any:
				sv.check(ap, x[k], path+"."+k)
			}
		}
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range x {
				sv.check(items, e, fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
}

func asStrings(v any) []string {
	a, _ := v.([]any)
	out := make([]string, len(a))
	for i, e := range a {
		out[i] = e.(string)
	}
	return out
}

func jsonType(v any, ty string) bool {
	switch ty {
	case "null":
		return v == nil
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := strconv.ParseInt(string(n), 10, 64)
		return err == nil
	}
	return false
}
