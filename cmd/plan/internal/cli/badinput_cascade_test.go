package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/plan-dev/plan/export"
	xcascade "github.com/plan-dev/plan/export/cascade"
	"github.com/plan-dev/plan/export/exporttest"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/formats/sections/intree"
)

// TestCascadeBadInput runs CascadeServe's bad inputs end to end through `plan solve` on the
// bundled example, each input broken one way: validation records that disagree in sample
// count across models, a certainty outside [0, 1], a cascade model no profile has, a model
// larger than any GPU, and SLOs no cascade meets (naming the best attainable). Each exits 2
// naming the file (or flag), the field and the value, and writes no plan.
func TestCascadeBadInput(t *testing.T) {
	repoRoot(t)
	const (
		w = "testdata/cascade/workload.yaml"
		p = "testdata/cascade/profile.json"
		c = "testdata/cascade/cluster.yaml"
	)
	dir := t.TempDir()
	wl, err := os.ReadFile(w)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	var lines []string
	for _, ln := range strings.Split(string(wl), "\n") {
		if !strings.Contains(ln, "{sample: 3, model: bert-base,") {
			lines = append(lines, ln)
		}
	}
	count := write("count.yaml", strings.Join(lines, "\n"))
	if !strings.Contains(string(wl), "cert: 0.884911,") {
		t.Fatal("the example's first record changed: update this test")
	}
	cert := write("cert.yaml", strings.Replace(string(wl), "cert: 0.884911,", "cert: 1.884911,", 1))
	profile := func(name string, edit func(ms []map[string]any) []map[string]any) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		var ms []map[string]any
		for _, m := range doc["models"].([]any) {
			ms = append(ms, m.(map[string]any))
		}
		doc["models"] = edit(ms)
		out, _ := json.Marshal(doc)
		return write(name, string(out))
	}
	unprofiled := profile("unprofiled.json", func(ms []map[string]any) []map[string]any { return ms[:2] })
	huge := profile("huge.json", func(ms []map[string]any) []map[string]any { ms[2]["memory_bytes"] = 40e9; return ms })
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"sample count differs", []string{"--workload", count, "--profile", p},
			count + `: cascades[0].validation: "bert-base": no records for samples 3: every model must cover the same samples`},
		{"certainty above 1", []string{"--workload", cert, "--profile", p},
			cert + `: cascades[0].validation[0].cert: 1.884911: must be in [0, 1]`},
		{"unprofiled model", []string{"--workload", w, "--profile", unprofiled},
			w + `: cascades[0].models[2]: "bert-base": model not found in any profile`},
		{"model larger than any GPU", []string{"--workload", w, "--profile", huge},
			huge + `: models[2].memory_bytes: 40000000000: model bert-base is larger than any GPU: a V100 holds 32500000000 bytes`},
		{"latency SLO unattainable", []string{"--workload", w, "--profile", p, "--slo", "2ms"},
			`--slo 2ms: SLO cannot be met: no cascade serves 1750 QPS within p95 ≤ 2ms on 2 GPU(s): the best attainable is 3 ms (cascade bert-tiny)`},
		{"accuracy SLO unattainable", []string{"--workload", w, "--profile", p, "--accuracy", "0.99"},
			`--accuracy 0.99: SLO cannot be met: accuracy 0.99: the most accurate cascade reaches 0.8550`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
			args := append([]string{"solve", "--cluster", c, "-o", out}, tc.args...)
			code, _, stderr := rootRun(t, args...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Fatal("a plan was written")
			}
		})
	}
}

// TestCascadeExport: `plan export` finds the cascade exporters through the registry; the
// written files read back to the plan's gear table.
func TestCascadeExport(t *testing.T) {
	repoRoot(t)
	const plan = "testdata/cascade/golden-plan.json"
	p, err := formats.ReadInto[*formats.Plan](plan, intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range export.Targets {
		t.Run(target, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			code, out, stderr := rootRun(t, "export", plan, "--to", target, "-o", dir, "-O", "json")
			if code != 0 || !strings.Contains(out, `"system": "cascade"`) {
				t.Fatalf("exit %d: %s%s", code, out, stderr)
			}
			files, err := exporttest.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := xcascade.ReadBack(target, files)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, cascadesec.PlanOf(p)) {
				t.Errorf("read back %+v, plan %+v", got, cascadesec.PlanOf(p))
			}
		})
	}
}
