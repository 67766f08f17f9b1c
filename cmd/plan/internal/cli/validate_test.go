package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/run/validate"
)

const fixtures = "../../../../testdata/formats/good"

// inFixtureCopy copies the good fixtures into a temp dir, applies edits (file -> func of its
// text), changes into the dir and returns the fixture names.
func inFixtureCopy(t *testing.T, edits map[string]func(string) string) []string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(fixtures)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(fixtures, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		if f := edits[e.Name()]; f != nil {
			text = f(text)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, e.Name())
	}
	t.Chdir(dir)
	return names
}

func replace(old, new string) func(string) string {
	return func(s string) string {
		if !strings.Contains(s, old) {
			panic("fixture lacks " + old)
		}
		return strings.Replace(s, old, new, 1)
	}
}

func lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestValidateGood(t *testing.T) {
	names := inFixtureCopy(t, nil)
	code, out, errOut := rootRun(t, append([]string{"validate"}, names...)...)
	if code != ExitOK || errOut != "" {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	want := []string{
		"cluster.yaml: ok (Cluster)",
		"plan-sections.json: ok (Plan)",
		"plan.json: ok (Plan)",
		"profile.json: ok (Profile)",
		"trace-counts.json: ok (Trace)",
		"trace-prefix.json: ok (Trace)",
		"trace-requests.json: ok (Trace)",
		"workload.yaml: ok (Workload)",
	}
	if got := lines(out); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
	}
	// Each file alone is good too, and naming a file twice checks it once.
	for _, n := range names {
		if code, out, errOut := rootRun(t, "validate", n, n); code != ExitOK || len(lines(out)) != 1 {
			t.Errorf("%s alone: exit %d, stdout %q, stderr %q", n, code, out, errOut)
		}
	}
}

func TestValidateBad(t *testing.T) {
	tests := []struct {
		name   string
		edits  map[string]func(string) string
		files  []string
		stderr []string // exact problem lines, in order, before the summary
		ok     []string // files reported ok on stdout
	}{
		{"negative count",
			map[string]func(string) string{"cluster.yaml": replace("count: 12", "count: -3")},
			[]string{"cluster.yaml", "profile.json"},
			[]string{"cluster.yaml: gpus[1].count: -3: must be >= 0"},
			[]string{"profile.json: ok (Profile)"}},
		{"NaN",
			map[string]func(string) string{"cluster.yaml": replace("nic_gbps: 10", "nic_gbps: .nan")},
			[]string{"cluster.yaml"},
			[]string{"cluster.yaml: nic_gbps: NaN: must be a finite number"}, nil},
		{"missing file", nil,
			[]string{"missing.yaml", "cluster.yaml"},
			[]string{"missing.yaml: cannot read: no such file"},
			[]string{"cluster.yaml: ok (Cluster)"}},
		{"unreadable YAML",
			map[string]func(string) string{"workload.yaml": replace("models:\n", "models: [\n")},
			[]string{"workload.yaml"},
			[]string{"workload.yaml: invalid YAML: line 9: did not find expected node content"}, nil},
		{"unreadable JSON",
			map[string]func(string) string{"plan.json": replace(`"kind": "Plan",`, `"kind": "Plan"`)},
			[]string{"plan.json"},
			[]string{`plan.json: invalid JSON at line 4, column 3: invalid character '"' after object key:value pair`}, nil},
		{"unknown field",
			map[string]func(string) string{"workload.yaml": replace("rate_rps: 60", "rate_rsp: 60")},
			[]string{"workload.yaml"},
			[]string{"workload.yaml: pipelines[0].rate_rsp: unknown field (did you mean rate_rps?)"}, nil},
		{"unknown kind",
			map[string]func(string) string{"cluster.yaml": replace("kind: Cluster", "kind: Clustr")},
			[]string{"cluster.yaml"},
			[]string{`cluster.yaml: kind: "Clustr": must be one of Profile, Cluster, Workload, Plan, Trace`}, nil},
		{"unknown GPU type referenced",
			map[string]func(string) string{"plan.json": replace(`"end_block": 4,
                "gpu": "P4"`, `"end_block": 4,
                "gpu": "A100"`)},
			[]string{"cluster.yaml", "plan.json"},
			[]string{
				`plan.json: ppipe.models[0].pipelines[0].partitions[1].gpu: "A100": unknown GPU type: not in cluster.gpus (L4, P4)`,
				`plan.json: ppipe.models[0].pipelines[0].partitions[1].gpu: "A100": unknown GPU type: not in cluster.yaml (L4, P4)`},
			[]string{"cluster.yaml: ok (Cluster)"}},
		{"cross-file: model not profiled",
			map[string]func(string) string{"workload.yaml": replace("  - name: resnet50\n    slo: 100ms", "  - name: vgg16\n    slo: 100ms")},
			[]string{"profile.json", "workload.yaml"},
			[]string{`workload.yaml: models[0].name: "vgg16": model not found in any profile (profile.json)`},
			[]string{"profile.json: ok (Profile)"}},
		{"every problem of every file",
			map[string]func(string) string{
				"cluster.yaml": func(s string) string {
					return replace("per_server: 4\n    vgpu: [1, 2, 3, 4]", "per_server: 0\n    vgpu: [1, 2, 3, 5]")(s)
				},
				"trace-requests.json": replace(`"t_us": 4100`, `"t_us": 2000`),
			},
			[]string{"cluster.yaml", "trace-requests.json"},
			[]string{
				"cluster.yaml: gpus[0].per_server: 0: must be >= 1",
				"cluster.yaml: gpus[0].vgpu[3]: 5: must be in 1..4",
				"trace-requests.json: requests[4].t_us: 2000: must be >= requests[3].t_us (2500): timestamps must be non-decreasing"},
			nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			copied := inFixtureCopy(t, tc.edits)
			code, out, errOut := rootRun(t, append([]string{"validate"}, tc.files...)...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitUsage, errOut)
			}
			got := lines(errOut)
			if len(got) == 0 || !strings.HasPrefix(got[len(got)-1], "plan: validate: ") {
				t.Fatalf("stderr lacks the summary line:\n%s", errOut)
			}
			if strings.Join(got[:len(got)-1], "\n") != strings.Join(tc.stderr, "\n") {
				t.Errorf("stderr:\n%s\nwant:\n%s", errOut, strings.Join(tc.stderr, "\n"))
			}
			if strings.Join(lines(out), "\n") != strings.Join(tc.ok, "\n") {
				t.Errorf("stdout:\n%s\nwant:\n%s", out, strings.Join(tc.ok, "\n"))
			}
			// Nothing is written.
			entries, _ := os.ReadDir(".")
			if len(entries) != len(copied) {
				t.Errorf("validate changed the directory: %d entries", len(entries))
			}
		})
	}
}

func TestValidateJSON(t *testing.T) {
	inFixtureCopy(t, map[string]func(string) string{"cluster.yaml": replace("count: 12", "count: -3")})
	code, out, errOut := rootRun(t, "validate", "--output", "json", "cluster.yaml", "workload.yaml", "missing.json")
	if code != ExitUsage {
		t.Fatalf("exit %d", code)
	}
	var res []validate.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if len(res) != 3 {
		t.Fatalf("%d results", len(res))
	}
	c, w, m := res[0], res[1], res[2]
	if c.File != "cluster.yaml" || c.Kind != "Cluster" || c.OK || len(c.Errors) != 1 {
		t.Errorf("cluster result %+v", c)
	} else if e := c.Errors[0]; e.Path != "gpus[1].count" || e.Value != "-3" || e.Rule != "must be >= 0" || e.Message != "cluster.yaml: gpus[1].count: -3: must be >= 0" {
		t.Errorf("cluster error %+v", e)
	}
	if w.Kind != "Workload" || !w.OK || w.Errors == nil || len(w.Errors) != 0 {
		t.Errorf("workload result %+v (errors must be [] not null)", w)
	}
	if m.Kind != "" || m.OK || len(m.Errors) != 1 || m.Errors[0].Rule != "cannot read: no such file" {
		t.Errorf("missing result %+v", m)
	}
	if !strings.Contains(errOut, "cluster.yaml: gpus[1].count: -3: must be >= 0\n") {
		t.Errorf("stderr lacks the problem: %q", errOut)
	}
}

func TestValidateStdin(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(fixtures, "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	code := Run([]string{"validate", "-"}, Streams{In: strings.NewReader(string(data)), Out: &out, Err: &errb})
	if code != ExitOK || out.String() != "<stdin>: ok (Cluster)\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	code = Run([]string{"validate", "-"}, Streams{In: strings.NewReader("kind: Cluster\n"), Out: &out, Err: &errb})
	if code != ExitUsage || !strings.Contains(errb.String(), `<stdin>: apiVersion: null: must be plan/v1`) {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

func TestValidateSchemaAndUsage(t *testing.T) {
	code, out, _ := rootRun(t, "validate", "--schema", "workload")
	want, _ := formats.Schema(formats.KindWorkload, intree.Sections())
	if code != ExitOK || out != string(want) {
		t.Fatalf("--schema workload: exit %d", code)
	}
	for _, args := range [][]string{
		{"validate"},
		{"validate", "--schema", "Widget"},
		{"validate", "--schema", "Cluster", "x.yaml"},
	} {
		code, out, errOut := rootRun(t, args...)
		if code != ExitUsage || out != "" || !strings.HasPrefix(errOut, "plan: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	code, out, _ = rootRun(t, "validate", "--help")
	if code != ExitOK || !strings.Contains(out, "plan validate cluster.yaml profile.json") {
		t.Errorf("help lacks examples:\n%s", out)
	}
}
