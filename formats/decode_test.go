package formats

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const clusterYAML = `apiVersion: plan/v1
kind: Cluster
metadata: {name: c}
gpus:
  - {type: L4, count: 4, per_server: 4}
  - {type: P4, count: 12, per_server: 4}
nic_gbps: 10
`

func messages(err error) []string {
	var out []string
	for _, e := range Problems(err) {
		out = append(out, e.Error())
	}
	return out
}

// TestDecodeErrors: bad input gives one clear message per problem, with path and value, and
// the right sentinel.
func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name  string
		input string
		want  []string
		is    error
	}{
		{"valid", clusterYAML, nil, nil},
		{"negative count", strings.Replace(clusterYAML, "count: 12", "count: -3", 1),
			[]string{`cluster.yaml: gpus[1].count: -3: must be >= 0`}, ErrInvalid},
		{"NaN via YAML", strings.Replace(clusterYAML, "nic_gbps: 10", "nic_gbps: .nan", 1),
			[]string{`cluster.yaml: nic_gbps: NaN: must be a finite number`}, ErrDecode},
		{"Inf via YAML", strings.Replace(clusterYAML, "nic_gbps: 10", "nic_gbps: -.inf", 1),
			[]string{`cluster.yaml: nic_gbps: -Inf: must be a finite number`}, ErrDecode},
		{"NaN in an integer field", strings.Replace(clusterYAML, "count: 12", "count: .nan", 1),
			[]string{`cluster.yaml: gpus[1].count: NaN: must be a finite integer`}, ErrDecode},
		{"huge number", strings.Replace(clusterYAML, "nic_gbps: 10", "nic_gbps: 1e400", 1),
			[]string{`cluster.yaml: nic_gbps: "1e400": must be a number`}, ErrDecode},
		{"fraction for integer", strings.Replace(clusterYAML, "count: 12", "count: 1.5", 1),
			[]string{`cluster.yaml: gpus[1].count: 1.5: must be an integer`}, ErrDecode},
		{"integer overflow", strings.Replace(clusterYAML, "count: 12", "count: 99999999999999999999", 1),
			[]string{`cluster.yaml: gpus[1].count: 1e+20: must be an integer`}, ErrDecode},
		{"string for number", strings.Replace(clusterYAML, "count: 12", `count: "12"`, 1),
			[]string{`cluster.yaml: gpus[1].count: "12": must be an integer`}, ErrDecode},
		{"unknown field with path", strings.Replace(clusterYAML, "count: 12", "cuont: 12", 1), []string{
			`cluster.yaml: gpus[1].cuont: unknown field (did you mean count?)`}, ErrDecode},
		{"unknown field, wrong case", strings.Replace(clusterYAML, "nic_gbps", "NIC_Gbps", 1), []string{
			`cluster.yaml: NIC_Gbps: unknown field (did you mean nic_gbps?)`}, ErrDecode},
		{"missing required field", strings.Replace(clusterYAML, "{type: P4, count: 12, per_server: 4}", "{type: P4, per_server: 4}", 1), []string{
			`cluster.yaml: gpus[1].count: missing required field`}, ErrDecode},
		{"unknown field next to the one it resembles", strings.Replace(clusterYAML, "count: 12", "count: 12, counts: 3", 1), []string{
			`cluster.yaml: gpus[1].counts: unknown field (did you mean count?)`}, ErrDecode},
		{"every unknown field", clusterYAML + "zones: 3\nmetadata2: {}\n", []string{
			`cluster.yaml: metadata2: unknown field (did you mean metadata?)`,
			`cluster.yaml: zones: unknown field`}, ErrDecode},
		{"null for a struct", strings.Replace(clusterYAML, "metadata: {name: c}", "metadata:", 1),
			[]string{`cluster.yaml: metadata: null: must be an object`}, ErrDecode},
		{"object for a list", strings.Replace(clusterYAML, "nic_gbps: 10", "nic_gbps: 10\nservers: {a: 1}", 1),
			[]string{`cluster.yaml: servers: {...}: must be an array`}, ErrDecode},
		{"unreadable YAML", "apiVersion: plan/v1\nkind: Cluster\ngpus: [\n", []string{
			`cluster.yaml: invalid YAML: line 3: did not find expected node content`}, ErrDecode},
		{"tab indentation", "apiVersion: plan/v1\nkind: Cluster\ngpus:\n\t- type: L4\n", []string{
			`cluster.yaml: invalid YAML: line 4: found character that cannot start any token`}, ErrDecode},
		{"duplicate YAML key", clusterYAML + "nic_gbps: 20\n", []string{
			`cluster.yaml: invalid YAML: line 8: duplicate key "nic_gbps"`}, ErrDecode},
		{"two YAML documents", clusterYAML + "---\n" + clusterYAML, []string{
			`cluster.yaml: invalid YAML: more than one document in the file`}, ErrDecode},
		{"unreadable JSON", "{\"apiVersion\": \"plan/v1\",\n \"kind\": \"Cluster\",\n \"gpus\": [}", []string{
			`cluster.yaml: invalid JSON at line 3, column 11: invalid character '}' looking for beginning of value`}, ErrDecode},
		{"truncated JSON", `{"apiVersion": "plan/v1", "kind": "Cluster"`, []string{
			`cluster.yaml: invalid JSON: unexpected end of input`}, ErrDecode},
		{"trailing JSON", `{"apiVersion": "plan/v1", "kind": "Cluster"} {}`, []string{
			`cluster.yaml: invalid JSON: trailing data after the document`}, ErrDecode},
		{"empty file", "  \n", []string{`cluster.yaml: empty file`}, ErrDecode},
		{"comments only", "# nothing\n", []string{`cluster.yaml: empty file`}, ErrDecode},
		{"top-level list", "- a\n- b\n", []string{`cluster.yaml: top level must be a mapping with apiVersion and kind`}, ErrDecode},
		{"top-level scalar", "hello\n", []string{`cluster.yaml: top level must be a mapping with apiVersion and kind`}, ErrDecode},
		{"wrong apiVersion", strings.Replace(clusterYAML, "plan/v1", "plan/v2", 1),
			[]string{`cluster.yaml: apiVersion: "plan/v2": must be plan/v1`}, ErrDecode},
		{"missing apiVersion", strings.Replace(clusterYAML, "apiVersion: plan/v1\n", "", 1),
			[]string{`cluster.yaml: apiVersion: null: must be plan/v1`}, ErrDecode},
		{"unknown kind", strings.Replace(clusterYAML, "kind: Cluster", "kind: Fleet", 1),
			[]string{`cluster.yaml: kind: "Fleet": must be one of Profile, Cluster, Workload, Plan, Trace`}, ErrUnknownKind},
		{"kind not a string", strings.Replace(clusterYAML, "kind: Cluster", "kind: [Cluster]", 1),
			[]string{`cluster.yaml: kind: [...]: must be one of Profile, Cluster, Workload, Plan, Trace`}, ErrUnknownKind},
		{"bad duration", "apiVersion: plan/v1\nkind: Trace\nmetadata: {}\ncounts: {interval: 5 minutes, counts: [1]}\n",
			[]string{`cluster.yaml: counts.interval: "5 minutes": must be a duration such as "200ms" or "1.5s"`}, ErrDecode},
		{"bare number duration", "apiVersion: plan/v1\nkind: Trace\nmetadata: {}\ncounts: {interval: 60, counts: [1]}\n",
			[]string{`cluster.yaml: counts.interval: 60: must be a duration string such as "200ms"`}, ErrDecode},
		{"map key with a dot", "apiVersion: plan/v1\nkind: Cluster\nmetadata: {labels: {a.b: 1}}\ngpus: [{type: L4, count: 1, per_server: 1}]\nnic_gbps: 1\n",
			[]string{`cluster.yaml: metadata.labels["a.b"]: 1: must be a string`}, ErrDecode},
		{"recursive alias", "apiVersion: plan/v1\nkind: Cluster\nmetadata: &m {labels: *m}\n", []string{
			`cluster.yaml: invalid YAML: line 3: recursive alias`}, ErrDecode},
		{"alias bomb", aliasBomb(), []string{`cluster.yaml: invalid YAML: aliases expand to too many nodes`}, ErrDecode},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, err := Decode("cluster.yaml", []byte(c.input), inTree)
			got := messages(err)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("got:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(c.want, "\n\t"))
			}
			if c.is == nil {
				if doc == nil {
					t.Fatal("no document")
				}
				return
			}
			if doc != nil {
				t.Error("a document came back with an error")
			}
			if !errors.Is(err, c.is) {
				t.Errorf("errors.Is(err, %v) = false", c.is)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("errors.Is(err, ErrInvalid) = false: every problem is a FieldError")
			}
		})
	}
}

func aliasBomb() string {
	var b strings.Builder
	b.WriteString("apiVersion: plan/v1\nkind: Cluster\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	return b.String()
}

func TestYAMLFeatures(t *testing.T) {
	// Anchors, aliases and merge keys work; explicit keys win over merged ones.
	in := `apiVersion: plan/v1
kind: Cluster
metadata: {name: c}
gpus:
  - &l4 {type: L4, count: 4, per_server: 4, vgpu: [1, 2]}
  - <<: *l4
    type: T4
    count: 2
nic_gbps: 10
`
	c, err := DecodeInto[*Cluster]("c.yaml", []byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := c.GPUs[1]; g.Type != "T4" || g.Count != 2 || g.PerServer != 4 || len(g.VGPU) != 2 {
		t.Fatalf("merged pool = %+v", g)
	}
	// JSON input, a YAML document marker and a BOM-free JSON body with whitespace.
	js := "\n  {\"apiVersion\":\"plan/v1\",\"kind\":\"Cluster\",\"metadata\":{},\"gpus\":[{\"type\":\"L4\",\"count\":1,\"per_server\":1}],\"nic_gbps\":1}\n"
	if _, err := DecodeInto[*Cluster]("c.json", []byte(js), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeInto[*Cluster]("c.yaml", []byte("---\n"+clusterYAML), nil); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeInto(t *testing.T) {
	plan := readFixture(t, filepath.Join(goodDir, "plan.json"))
	_, err := DecodeInto[*Cluster]("plan.json", plan, nil)
	if !errors.Is(err, ErrWrongKind) {
		t.Fatalf("err = %v, want ErrWrongKind", err)
	}
	if got, want := err.Error(), `plan.json: kind: "Plan": must be Cluster`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	// Wrong kind wins over the other kind's problems: only one message.
	bad := strings.Replace(string(plan), `"tool": "plan"`, `"tool": ""`, 1)
	if _, err := DecodeInto[*Cluster]("plan.json", []byte(bad), nil); len(Problems(err)) != 1 {
		t.Fatalf("want exactly the wrong-kind problem, got %v", err)
	}
	p, err := DecodeInto[*Plan]("plan.json", plan, inTree)
	if err != nil || p.Sections["ppipe"].Value == nil {
		t.Fatalf("DecodeInto[*Plan] = %v, %v", p, err)
	}
	// Semantic problems still come back from DecodeInto.
	if _, err := DecodeInto[*Cluster]("c.yaml", []byte(strings.Replace(clusterYAML, "count: 12", "count: -3", 1)), nil); !errors.Is(err, ErrInvalid) || errors.Is(err, ErrDecode) {
		t.Fatalf("err = %v, want ErrInvalid only", err)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	_, err := ReadFile(filepath.Join(dir, "missing.yaml"), inTree)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: err = %v, want fs.ErrNotExist", err)
	}
	if got, want := messages(err), filepath.Join(dir, "missing.yaml")+": cannot read: no such file"; len(got) != 1 || got[0] != want {
		t.Fatalf("missing file: got %q, want %q", got, want)
	}
	if _, err := ReadFile(dir, inTree); err == nil || !strings.Contains(err.Error(), "cannot read: ") {
		t.Fatalf("directory: err = %v", err)
	}
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(clusterYAML, "count: 4", "count: -1", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadFile(path, inTree)
	// The path as given, not its base name (golden/plan.json vs plan.json), so the user finds the file.
	if got := messages(err); len(got) != 1 || got[0] != path+": gpus[0].count: -1: must be >= 0" {
		t.Fatalf("ReadFile must name the file by its path as given: %q", got)
	}
	if _, err := ReadInto[*Trace](path, nil); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("ReadInto[*Trace] on a cluster: %v", err)
	}
	if _, err := ReadInto[*Trace](filepath.Join(dir, "nope"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadInto on a missing file: %v", err)
	}
	for _, f := range goodFixtures(t) {
		if _, err := ReadFile(f, inTree); err != nil {
			t.Errorf("ReadFile(%s, inTree): %v", f, err)
		}
	}
}

func TestProblems(t *testing.T) {
	if Problems(nil) != nil {
		t.Error("Problems(nil) != nil")
	}
	if got := Problems(errors.New("boom")); len(got) != 1 || got[0].Error() != "boom" {
		t.Errorf("plain error: %v", got)
	}
	l := ErrorList{{File: "f", Path: "p", Value: "1", Rule: "r"}}
	if got := Problems(l); len(got) != 1 || got[0].Error() != "f: p: 1: r" {
		t.Errorf("ErrorList: %v", got)
	}
	if got := Problems(l.tagged(ErrDecode)); len(got) != 1 {
		t.Errorf("tagged: %v", got)
	}
	if l.Err() == nil || ErrorList(nil).Err() != nil {
		t.Error("ErrorList.Err")
	}
}
