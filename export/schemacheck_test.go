package export

import (
	"strings"
	"testing"
)

// TestSchemaErrors: a manifest that breaks its JSON Schema (schema/scaledobject.schema.json,
// evaluated by the jsonschema library) is refused with one line per failure, each naming the
// file, the field's path and, where there is one, the value and the rule.
func TestSchemaErrors(t *testing.T) {
	if errs := Classic.validateYAML("so.yaml", []byte(kedaDoc)); len(errs) != 0 {
		t.Fatalf("the valid document fails: %q", errs)
	}
	for _, tc := range []struct {
		name, old, new string
		want           []string
	}{
		{"unknown field", "pollingInterval: 15", "pollingInterval: 15\n  pollingIntervall: 15",
			[]string{"spec.pollingIntervall: unknown field"}},
		{"below minimum", "maxReplicaCount: 4", "maxReplicaCount: -1",
			[]string{"spec.maxReplicaCount: -1: must be >= 1"}},
		{"missing required", "  scaleTargetRef:\n    apiVersion: apps/v1\n    kind: Deployment\n    name: m\n", "",
			[]string{`spec: missing required field "scaleTargetRef"`}},
		{"wrong type", "cooldownPeriod: 300", "cooldownPeriod: soon",
			[]string{"spec.cooldownPeriod: must be of type integer, not string"}},
		{"item path", "    type: prometheus", "    type: prometheus\n    extra: 1",
			[]string{"spec.triggers[0].extra: unknown field"}},
		{"every failure", "maxReplicaCount: 4", "maxReplicaCount: -1\n  bogus: true",
			[]string{"spec.bogus: unknown field", "spec.maxReplicaCount: -1: must be >= 1"}},
		{"beyond int32", "maxReplicaCount: 4", "maxReplicaCount: 4294967296",
			[]string{"spec.maxReplicaCount: 4294967296: must be <= 2147483647"}},
		{"null values flag", `ignoreNullValues: "true"`, `ignoreNullValues: "yes"`,
			[]string{`spec.triggers[0].metadata.ignoreNullValues: "yes"`}},
		{"server address", "serverAddress: http://prometheus-operated.monitoring.svc:9090", "serverAddress: not a url",
			[]string{`spec.triggers[0].metadata.serverAddress: 'not a url' does not match pattern`}},
		{"duplicate key", "pollingInterval: 15", "pollingInterval: 15\n  pollingInterval: 30",
			[]string{"yaml: unmarshal errors:\n  line 10: key \"pollingInterval\" already set in map"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(kedaDoc, tc.old, tc.new, 1)
			if doc == kedaDoc {
				t.Fatalf("%q not in the document", tc.old)
			}
			got := Classic.validateYAML("so.yaml", []byte(doc))
			if len(got) != len(tc.want) || !strings.Contains(strings.Join(got, "\n"), strings.Join(tc.want, "\n")) {
				t.Fatalf("errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			err := Validate(Files{"deploy/so.yaml": []byte(doc)})
			if err == nil || !strings.Contains(err.Error(), "deploy/so.yaml: "+oneLine(tc.want[0])) {
				t.Fatalf("Validate: %v, want the file named beside %q", err, tc.want[0])
			}
		})
	}
}

// TestEverySchemaCompiles: each embedded schema is a valid JSON Schema to the library.
func TestEverySchemaCompiles(t *testing.T) {
	ents, err := schemaFS.ReadDir("schema")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if _, err := compiledSchema(e.Name()); err != nil {
			t.Errorf("%s: %v", e.Name(), err)
		}
	}
	if len(ents) < 9 {
		t.Errorf("%d schemas, want the 9 export kinds", len(ents))
	}
}

// FuzzValidate: any manifest, however broken, gets errors or passes; the schema evaluation and
// the rephrasing of its error tree never panic, and every line names the file.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(kedaDoc))
	f.Add([]byte("apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: -1}]}\n"))
	f.Add([]byte("kind: ScaledObject\nspec: {triggers: [{type: 1}], maxReplicaCount: 1e400}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Validate(Files{"deploy/so.yaml": data})
		if err == nil {
			return
		}
		for _, l := range strings.Split(err.Error(), "\n")[1:] {
			if !strings.HasPrefix(l, "deploy/so.yaml") {
				t.Fatalf("error line without the file: %q", l)
			}
		}
	})
}

// TestEmptyManifest: a manifest file with no document is refused by name, not passed.
func TestEmptyManifest(t *testing.T) {
	for _, body := range []string{"", "\n---\n\n"} {
		err := Validate(Files{"deploy/so.yaml": []byte(body)})
		if err == nil || !strings.Contains(err.Error(), "deploy/so.yaml: empty: no document") {
			t.Errorf("%q: %v", body, err)
		}
	}
}

// TestValidateCounts: the error's head counts the problems and the files they are in, a file
// of several documents once, whatever number of its documents fail.
func TestValidateCounts(t *testing.T) {
	bad := strings.Replace(kedaDoc, "maxReplicaCount: 4", "maxReplicaCount: -1", 1)
	worse := strings.Replace(bad, "pollingInterval: 15", "pollingInterval: 15\n  bogus: true", 1)
	for _, tc := range []struct {
		name  string
		files Files
		want  string
	}{
		{"one problem", Files{"deploy/so.yaml": []byte(bad)}, "export: 1 problem(s) in 1 file(s):\n"},
		{"two in one document", Files{"deploy/so.yaml": []byte(worse)}, "export: 2 problem(s) in 1 file(s):\n"},
		{"three documents of one file", Files{"deploy/so.yaml": []byte(bad + "\n---\n" + bad + "\n---\n" + worse)},
			"export: 4 problem(s) in 1 file(s):\n"},
		{"two files", Files{"deploy/a.yaml": []byte(bad), "deploy/b.yaml": []byte(worse)}, "export: 3 problem(s) in 2 file(s):\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.files)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("Validate: %v, want it to open %q", err, tc.want)
			}
		})
	}
}
