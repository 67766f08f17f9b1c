package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/internal/run/check"
)

// TestCheckBadInputIsExit2: plan check exited 1 — a failed check — on
// files that plan validate rejects. Bad input is exit 2 for both, with the same message.
func TestCheckBadInputIsExit2(t *testing.T) {
	repoRoot(t)
	good, err := formats.ReadInto[*formats.Plan]("testdata/ppipe/good-plan.json", intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	part := func(p *formats.Plan) *ppipesec.Partition {
		return &ppipesec.PlanOf(p).Models[0].Pipelines[0].Partitions[0]
	}
	cases := []struct {
		name   string
		mutate func(p *formats.Plan)
		want   string
	}{
		{"gpu count -5", func(p *formats.Plan) { part(p).Count = -5 }, "partitions[0].count: -5: must be >= 1"},
		{"gpu count 0", func(p *formats.Plan) { part(p).Count = 0 }, "partitions[0].count: 0: must be >= 1"},
		{"latency -5", func(p *formats.Plan) { part(p).StageLatencyUs = -5 }, "partitions[0].stage_latency_us: -5: must be >= 0"},
		{"throughput -5", func(p *formats.Plan) { ppipesec.PlanOf(p).Models[0].ThroughputRPS = -5 }, "ppipe.models[0].throughput_rps: -5: must be >= 0"},
		{"latency 1e308", func(p *formats.Plan) { part(p).StageLatencyUs = 1e308 }, "partitions[0].stage_latency_us: 1e+308: must be <= "},
		{"unknown gpu type", func(p *formats.Plan) { part(p).GPU = "X9" }, `partitions[0].gpu: "X9": unknown GPU type`},
		{"cluster count -5", func(p *formats.Plan) { p.Cluster.GPUs[0].Count = -5 }, "cluster.gpus[0].count: -5: must be >= 0"},
		{"no pipelines", func(p *formats.Plan) { ppipesec.PlanOf(p).Models[0].Pipelines = nil }, "ppipe.models[0].pipelines: must list at least one pipeline"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw, _ := formats.Marshal(good)
			doc, err := formats.Parse("plan.json", raw, intree.Sections())
			if err != nil {
				t.Fatal(err)
			}
			p := doc.(*formats.Plan)
			c.mutate(p)
			data, _ := formats.Marshal(p)
			file := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
			if err := os.WriteFile(file, data, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"validate", file}, {"check", file}, {"check", file, "-O", "json"}} {
				code, stdout, stderr := runCLI(t, args...)
				if code != ExitUsage {
					t.Errorf("%v: exit %d, want 2\n%s%s", args[0], code, stdout, stderr)
				}
				if !strings.Contains(stderr, c.want) {
					t.Errorf("%v: stderr lacks %q:\n%s", args, c.want, stderr)
				}
			}
		})
	}
}

// TestCheckJSON: plan check -O json printed text; it prints one JSON object.
func TestCheckJSON(t *testing.T) {
	repoRoot(t)
	for _, c := range []struct {
		file   string
		code   int
		ok     bool
		failed int
	}{
		{"testdata/ppipe/good-plan.json", ExitOK, true, 0},
		{"testdata/ppipe/broken/latency.json", ExitFailure, false, 1},
	} {
		code, stdout, stderr := runCLI(t, "check", c.file, "-O", "json")
		if code != c.code {
			t.Fatalf("%s: exit %d, want %d\n%s%s", c.file, code, c.code, stdout, stderr)
		}
		var rep check.Report
		dec := json.NewDecoder(strings.NewReader(stdout))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rep); err != nil || dec.More() {
			t.Fatalf("%s: stdout is not one JSON report (%v):\n%s", c.file, err, stdout)
		}
		if rep.OK != c.ok || rep.Failed != c.failed || len(rep.Checks) == 0 || rep.Plan == "" {
			t.Errorf("%s: report %+v", c.file, rep)
		}
	}
}

// TestCheckVerifySummaryComplete: every system's verify summary is a whole sentence; DyOrc's
// stopped at "max_batch within the service's".
func TestCheckVerifySummaryComplete(t *testing.T) {
	repoRoot(t)
	for _, c := range []struct {
		file string
		want string
	}{
		{"testdata/golden/dyorc-small.json", "max_batch within the service's max_batch\n"},
	} {
		code, stdout, stderr := runCLI(t, "check", c.file)
		if code != ExitOK {
			t.Fatalf("%s: exit %d\n%s%s", c.file, code, stdout, stderr)
		}
		if !strings.Contains(stdout, c.want) {
			t.Errorf("%s: verify summary lacks %q:\n%s", c.file, c.want, stdout)
		}
	}
}

// TestCheckJSONFields: every check in `plan check --output json` names what
// it checked and, for a golden comparison, the model/application it concerns, the measured
// value and the limit, so a CI script need not parse the message.
func TestCheckJSONFields(t *testing.T) {
	repoRoot(t)
	for _, c := range []struct {
		file    string
		name    string // a golden check's name
		subject string // and its subject
	}{
		{"testdata/golden/demo-ppipe.json", "throughput_rps", ""},
		{"testdata/golden/pard-4apps.json", "gpus", "da"},
		{"testdata/golden/cascade-sentiment.json", "weighted_accuracy", ""},
		{"testdata/golden/qlm-3classes.json", "decode_load_per_instance", ""},
		{"testdata/golden/dyorc-small.json", "busiest_service_load_per_replica", ""},
	} {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "check", c.file, "--golden", c.file, "-O", "json")
			if code != ExitOK {
				t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
			}
			var rep check.Report
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatalf("%v:\n%s", err, stdout)
			}
			found := false
			for _, ck := range rep.Checks {
				if ck.Name == "" || ck.Stage == "" || !strings.HasPrefix(ck.Message, strings.ReplaceAll(ck.Stage, "_", " ")) {
					t.Errorf("check without name or stage: %+v", ck)
				}
				if ck.Stage != "golden" {
					continue
				}
				if ck.Value == nil || ck.Limit == nil {
					t.Errorf("golden check without value or limit: %+v", ck)
				}
				if ck.Name == c.name && (c.subject == "" || ck.Subject == c.subject) {
					found = true
				}
			}
			if !found {
				t.Errorf("no golden check %q of %q in:\n%s", c.name, c.subject, stdout)
			}
		})
	}
}
