package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/formats/sections/intree"
)

// recordsCSV writes workload-small's validation records as a headered CSV; edit changes
// record i before it is written.
func recordsCSV(t *testing.T, path string, edit func(i int, r *cascadesec.ValidationRecord)) {
	t.Helper()
	w, err := formats.ReadInto[*formats.Workload]("testdata/cascade/workload-small.yaml", intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("sample,model,pred,cert,label\n")
	for i, r := range cascadesec.CascadesOf(w)[0].Validation {
		if edit != nil {
			edit(i, &r)
		}
		fmt.Fprintf(&b, "%d,%s,%s,%g,%s\n", r.Sample, r.Model, r.Pred, r.Cert, r.Label)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestImportValidation: `plan import validation` reaches the importer, alone or into a
// workload as validation or held-out test records; bad records exit 2 naming file, field
// and value, with nothing written.
func TestImportValidation(t *testing.T) {
	t.Chdir(filepath.Join("..", "..", "..", ".."))
	dir := t.TempDir()
	good, scores, bad, stranger := filepath.Join(dir, "good.csv"), filepath.Join(dir, "scores.csv"), filepath.Join(dir, "bad.csv"), filepath.Join(dir, "stranger.csv")
	recordsCSV(t, good, nil)
	recordsCSV(t, scores, func(i int, r *cascadesec.ValidationRecord) { r.Cert = 4*r.Cert - 2 })
	recordsCSV(t, bad, func(i int, r *cascadesec.ValidationRecord) {
		if i == 4 {
			r.Cert = 3.5
		}
	})
	recordsCSV(t, stranger, func(i int, r *cascadesec.ValidationRecord) {
		if i == 2 {
			r.Model = "gpt"
		}
	})
	wl := "testdata/cascade/workload-small.yaml"
	out := filepath.Join(dir, "out.json")
	tests := []struct {
		name string
		args []string
		code int
		want string // in stdout (code 0) or stderr
	}{
		{"records alone", []string{"import", "validation", good}, 0, `"kind": "ValidationRecords"`},
		{"into a workload as test", []string{"import", "validation", good, "--workload", wl, "--as", "test", "-o", out}, 0, ""},
		{"logit scores", []string{"import", "validation", scores, "--workload", wl, "--certainty", "score", "-o", out}, 0, ""},
		{"scores without --certainty score", []string{"import", "validation", scores}, 2, "scores.csv: records[0].cert: 1.539644: must be in [0, 1]"},
		{"cert above 1", []string{"import", "validation", bad, "-o", out}, 2, "bad.csv: records[4].cert: 3.5: must be in [0, 1]"},
		{"test set with a model the validation set lacks", []string{"import", "validation", stranger, "--workload", wl, "--as", "test", "-o", out}, 2,
			`workload-small.yaml: cascades[0].test[2].model: "gpt": a model the validation set lacks: not in cascades[0].models`},
		{"unknown --as", []string{"import", "validation", good, "--workload", wl, "--as", "train"}, 2, `--as: "train": must be validation or test`},
		{"not validation", []string{"import", "profile", good}, 2, "usage: plan import validation FILE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(out)
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			got := stdout
			if tc.code != 0 {
				got = stderr
				if _, err := os.Stat(out); err == nil {
					t.Errorf("wrote %s on bad input", out)
				}
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, got)
			}
		})
	}
}

// TestSimulateCascadeAccuracy: `plan simulate` of a cascade plan reports accuracy over the
// answered requests, on the held-out test records when the workload has them, else on the
// validation records, and says which.
func TestSimulateCascadeAccuracy(t *testing.T) {
	t.Chdir(filepath.Join("..", "..", "..", ".."))
	dir := t.TempDir()
	test := filepath.Join(dir, "test.csv")
	// the held-out set: every answer of bert-base wrong, so its accuracy differs
	recordsCSV(t, test, func(i int, r *cascadesec.ValidationRecord) {
		if r.Model == "bert-base" {
			r.Pred = "wrong"
		}
	})
	wt := filepath.Join(dir, "workload-test.json")
	if code, _, stderr := runCLI(t, "import", "validation", test, "--workload", "testdata/cascade/workload-small.yaml", "--as", "test", "-o", wt); code != 0 {
		t.Fatal(stderr)
	}
	acc := map[string]string{}
	for _, w := range []string{"testdata/cascade/workload-small.yaml", wt} {
		plan := filepath.Join(dir, filepath.Base(w)+".plan.json")
		code, _, stderr := runCLI(t, "solve", "--profile", "testdata/cascade/profile.json", "--cluster", "testdata/cascade/cluster.yaml", "--workload", w, "-o", plan)
		skipWithoutHiGHS(t, stderr)
		if code != 0 {
			t.Fatalf("solve %s: exit %d: %s", w, code, stderr)
		}
		code, stdout, stderr := runCLI(t, "simulate", plan, "--load", "0.3", "--duration", "3s")
		if code != 0 {
			t.Fatalf("simulate: exit %d: %s", code, stderr)
		}
		i := strings.Index(stdout, "accuracy (answered requests, on the ")
		if i < 0 {
			t.Fatalf("no accuracy line:\n%s", stdout)
		}
		acc[w] = strings.TrimSpace(strings.SplitN(stdout[i:], "\n", 2)[0])
	}
	if v := acc["testdata/cascade/workload-small.yaml"]; !strings.Contains(v, "on the validation records") {
		t.Errorf("without test records: %q", v)
	}
	if v := acc[wt]; !strings.Contains(v, "on the test records") {
		t.Errorf("with test records: %q", v)
	}
	if acc[wt][strings.Index(acc[wt], ":"):] == acc["testdata/cascade/workload-small.yaml"][strings.Index(acc["testdata/cascade/workload-small.yaml"], ":"):] {
		t.Errorf("the test records' accuracy equals the validation records': %q", acc[wt])
	}
	t.Log(acc)
}

// TestCandidatesWorkflow: a workload giving a candidates table (cascades evaluated
// elsewhere) instead of records solves, checks and simulates.
func TestCandidatesWorkflow(t *testing.T) {
	t.Chdir(filepath.Join("..", "..", "..", ".."))
	dir := t.TempDir()
	w, err := formats.ReadInto[*formats.Workload]("testdata/cascade/workload-small.yaml", intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	c := &cascadesec.CascadesOf(w)[0]
	// the table a team would bring: singles and two-stage cascades with measured numbers
	c.Candidates = []cascadesec.CascadeCandidate{
		{Models: []string{"bert-tiny"}, Accuracy: 0.80, Reach: []float64{1}},
		{Models: []string{"bert-small"}, Accuracy: 0.82, Reach: []float64{1}},
		{Models: []string{"bert-base"}, Accuracy: 0.85, Reach: []float64{1}},
		{Models: []string{"bert-tiny", "bert-base"}, Thresholds: []float64{0.4}, Accuracy: 0.845, Reach: []float64{1, 0.3}},
		{Models: []string{"bert-tiny", "bert-base"}, Thresholds: []float64{0.7}, Accuracy: 0.852, Reach: []float64{1, 0.55}},
		{Models: []string{"bert-small", "bert-base"}, Thresholds: []float64{0.5}, Accuracy: 0.849, Reach: []float64{1, 0.35}},
	}
	c.Validation = nil
	wf := filepath.Join(dir, "workload.json")
	if err := formats.WriteFile(wf, w, intree.Sections()); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "plan.json")
	code, _, stderr := runCLI(t, "solve", "--profile", "testdata/cascade/profile.json", "--cluster", "testdata/cascade/cluster.yaml", "--workload", wf, "-o", plan)
	skipWithoutHiGHS(t, stderr)
	if code != 0 {
		t.Fatalf("solve: exit %d: %s", code, stderr)
	}
	if code, stdout, stderr := runCLI(t, "check", plan); code != 0 {
		t.Fatalf("check: exit %d: %s%s", code, stdout, stderr)
	}
	code, stdout, stderr := runCLI(t, "simulate", plan, "--load", "0.3", "--duration", "3s")
	if code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, "accuracy (answered") {
		t.Errorf("a candidates table without test records is not judged:\n%s", stdout)
	}
}

// TestWorkloadRecordFiles: a cascade's validation_file and test_file (CSV/JSONL beside the
// workload) reach the importer when plan solve reads the workload; the plan embeds the
// records, so simulate reports accuracy on the test records; bad records exit 2.
func TestWorkloadRecordFiles(t *testing.T) {
	t.Chdir(filepath.Join("..", "..", "..", ".."))
	dir := t.TempDir()
	recordsCSV(t, filepath.Join(dir, "val.csv"), nil)
	recordsCSV(t, filepath.Join(dir, "test.csv"), func(i int, r *cascadesec.ValidationRecord) { r.Cert = 1 - r.Cert })
	recordsCSV(t, filepath.Join(dir, "bad.csv"), func(i int, r *cascadesec.ValidationRecord) {
		if i == 5 {
			r.Model = "gpt"
		}
	})
	workload := func(name, val, test string) string {
		w := fmt.Sprintf(`apiVersion: plan/v1
kind: Workload
metadata: {name: files}
cascades:
  - name: sentiment
    models: [bert-tiny, bert-small, bert-base]
    latency_slo: {percentile: 0.95, latency: 400ms}
    qps_max: 14000
    qps_ranges: 8
    validation_file: %s
    test_file: %s
`, val, test)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(w), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	solve := func(w string) (int, string) {
		code, _, stderr := runCLI(t, "solve", "--profile", "testdata/cascade/profile.json", "--cluster", "testdata/cascade/cluster.yaml", "--workload", w, "-o", filepath.Join(dir, "plan.json"))
		skipWithoutHiGHS(t, stderr)
		return code, stderr
	}
	if code, stderr := solve(workload("good.yaml", "val.csv", "test.csv")); code != 0 {
		t.Fatalf("solve: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, "simulate", filepath.Join(dir, "plan.json"), "--load", "0.3", "--duration", "2s")
	if code != 0 || !strings.Contains(stdout, "on the test records") {
		t.Fatalf("simulate: exit %d: %s%s", code, stdout, stderr)
	}
	bad := []struct{ name, val, test, want string }{
		{"missing file", "nope.csv", "test.csv", `missing.yaml: cascades[0].validation_file: "nope.csv": cannot read`},
		{"test model unknown", "val.csv", "bad.csv", `cascades[0].test[5].model: "gpt": a model the validation set lacks`},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			name := "missing.yaml"
			if tc.name != "missing file" {
				name = "badtest.yaml"
			}
			code, stderr := solve(workload(name, tc.val, tc.test))
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, want 2 with %q:\n%s", code, tc.want, stderr)
			}
		})
	}
}
