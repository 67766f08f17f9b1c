package systems

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/system"
)

// badPlans are the plans under testdata/ that break their system's verifier on purpose:
// each is the input of a test that expects the refusal. Plans under a bad/ folder are
// skipped too. A fixture not listed here is one that `plan serve` and `plan simulate` accept
// given directly, so a test that runs it runs a plan users could have written.
var badPlans = map[string]string{
	// Each breaks one PPipe constraint of good-plan.json (planner/ppipe: TestFixturePlans).
	"ppipe/broken/batch.json":             "planner/ppipe TestFixturePlans",
	"ppipe/broken/budget.json":            "planner/ppipe TestFixturePlans",
	"ppipe/broken/contiguity.json":        "planner/ppipe TestFixturePlans",
	"ppipe/broken/count.json":             "planner/ppipe TestFixturePlans",
	"ppipe/broken/gpu.json":               "planner/ppipe TestFixturePlans",
	"ppipe/broken/latency-sum.json":       "planner/ppipe TestFixturePlans",
	"ppipe/broken/latency.json":           "planner/ppipe TestFixturePlans",
	"ppipe/broken/slo-budget.json":        "planner/ppipe TestFixturePlans",
	"ppipe/broken/stage-latency.json":     "planner/ppipe TestFixturePlans",
	"ppipe/broken/throughput-sum.json":    "planner/ppipe TestFixturePlans",
	"ppipe/broken/throughput.json":        "planner/ppipe TestFixturePlans",
	"ppipe/broken/transfer.json":          "planner/ppipe TestFixturePlans",
	"ppipe/broken/vgpu.json":              "planner/ppipe TestFixturePlans",
	"badinput/dyorc-unknown-service.json": "cmd/plan/internal/cli: a deployment of a service the workflow lacks",
	"badinput/plan-duplicate-key.json":    "cmd/plan/internal/cli, formats: a duplicate JSON key",
	// formats' schema fixtures: one plan with every system's section (no system's plan) and
	// a PPipe plan without embedded inputs; formats' cross-file checks read them.
	"formats/good/plan.json":            "formats: schema fixture, no single system's verifiable plan",
	"formats/golden/plan.json":          "formats: schema fixture, no single system's verifiable plan",
	"formats/good/plan-sections.json":   "formats: schema fixture, no single system's verifiable plan",
	"formats/golden/plan-sections.json": "formats: schema fixture, no single system's verifiable plan",
}

// TestTestdataPlansVerify: every file under testdata/ that decodes as a Plan passes the
// verifier of its system (VerifyPlan: the checks serve and simulate refuse a plan on), except
// the deliberately bad ones (badPlans, bad/ folders). Hand-written fixtures whose stage
// throughputs did not follow PPipe's arithmetic (§4: a stage carries X·count) tested paths no
// real plan reaches.
func TestTestdataPlansVerify(t *testing.T) {
	root := filepath.Join("..", "..", "..", "testdata")
	reg := Default()
	seen := map[string]bool{}
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		if d.IsDir() {
			if d.Name() == "bad" {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Ext(path) != ".json" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var tm formats.TypeMeta
		if json.Unmarshal(b, &tm) != nil || tm.Kind != formats.KindPlan {
			return nil
		}
		if _, ok := badPlans[rel]; ok {
			seen[rel] = true
			return nil
		}
		p, err := formats.DecodeInto[*formats.Plan](rel, b, reg.Sections())
		if err != nil {
			t.Errorf("%s: kind Plan but does not decode (list it in badPlans if a test needs it so): %v", rel, err)
			return nil
		}
		n++
		s, err := reg.ForPlan(p)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		for _, c := range VerifyPlan(system.CheckerOf(s), p) {
			if !c.OK {
				t.Errorf("%s: %s: %s", rel, s.Name(), c.Line)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no plan under testdata/: the test checks nothing")
	}
	for rel := range badPlans {
		if !seen[rel] {
			t.Errorf("badPlans: %s is no plan under testdata/ any more: drop it from the list", rel)
		}
	}
}

// TestVerifyPlanHoldsClaims: a cost plan whose bound lies above the cost it bounds fails
// verification (so `plan check` fails it and serve refuses it), naming the field; the plan
// as solved passes, as does an objective that is not the cost (CascadeServe's accuracy).
func TestVerifyPlanHoldsClaims(t *testing.T) {
	reg := Default()
	for _, tc := range []struct {
		name, file string
		edit       func(p *formats.Plan)
		want       string
	}{
		{"throughput plan as solved", "golden/pard-4apps.json", func(*formats.Plan) {}, ""},
		{"cost objective not the cost", "golden/qlm-cost.json", func(p *formats.Plan) { p.Provenance.Objective = 0.8; b := 0.9; p.Provenance.Bound = &b }, ""},
		{"cost plan as solved", "golden/qlm-cost.json", func(*formats.Plan) {}, ""},
		{"cost bound above it", "golden/qlm-cost.json", func(p *formats.Plan) { b := p.Provenance.Objective * 1.01; p.Provenance.Bound = &b }, "provenance.bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "..", "testdata", tc.file), reg.Sections())
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(p)
			s, err := reg.ForPlan(p)
			if err != nil {
				t.Fatal(err)
			}
			var failed []string
			for _, c := range VerifyPlan(system.CheckerOf(s), p) {
				if !c.OK {
					failed = append(failed, c.Line)
				}
			}
			got := strings.Join(failed, "\n")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("failed checks %q, want one naming %q", got, tc.want)
			}
		})
	}
}
