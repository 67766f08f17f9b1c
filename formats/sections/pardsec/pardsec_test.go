package pardsec_test

import (
	"math"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/pardsec"
	"github.com/plan-dev/plan/formats/sections/sectiontest"
)

// The in-tree set: the shared fixtures carry every system's section.
var secs = intree.Sections()

// badCase is a sectiontest.Case written positionally, as formats' tables were.
type badCase struct {
	name   string
	file   string
	mutate func(formats.Document)
	want   []string
}

func cases(bs []badCase) []sectiontest.Case {
	out := make([]sectiontest.Case, len(bs))
	for i, b := range bs {
		out[i] = sectiontest.Case{Name: b.name, File: b.file, Mutate: b.mutate, Want: b.want}
	}
	return out
}

var nan = math.NaN()

func pipe(w *formats.Workload) *pardsec.Pipeline { return &pardsec.PipelinesOf(w)[0] }

// One bad-input case per rule of the workload section (moved from formats' tests).
func TestValidatePipelines(t *testing.T) {
	sectiontest.Run(t, secs, cases([]badCase{
		{"pipeline name", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { pipe(w).Name = "" }), []string{`workload.yaml: pipelines[0].name: "": must not be empty`}},
		{"pipeline duplicate", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			pardsec.SetPipelines(w, append(pardsec.PipelinesOf(w), pardsec.PipelinesOf(w)[0]))
		}), []string{`workload.yaml: pipelines[1].name: "traffic": duplicate name (first at pipelines[0].name)`}},
		{"pipeline slo", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { pipe(w).SLO = 0 }), []string{`workload.yaml: pipelines[0].slo: 0s: must be > 0`}},
		{"pipeline rate", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { pipe(w).RateRPS = -1 }), []string{`workload.yaml: pipelines[0].rate_rps: -1: must be >= 0`}},
		{"pipeline no modules", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { pipe(w).Modules = nil }), []string{`workload.yaml: pipelines[0].modules: must list at least one module`}},
		{"module name duplicate", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { pipe(w).Modules[3].Name = "person" }), []string{`workload.yaml: pipelines[0].modules[3].name: "person": duplicate name (first at pipelines[0].modules[2].name)`}},
		{"module model", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { pipe(w).Modules[3].Model = "" }), []string{`workload.yaml: pipelines[0].modules[3].model: "": must not be empty`}},
		{"edge empty", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { pipe(w).Modules[3].After[0].Module = "" }), []string{`workload.yaml: pipelines[0].modules[3].after[0].module: "": must not be empty`}},
		{"edge self", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { pipe(w).Modules[3].After[0].Module = "plate" }), []string{`workload.yaml: pipelines[0].modules[3].after[0].module: "plate": a module cannot depend on itself`}},
		{"edge unknown", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { pipe(w).Modules[3].After[0].Module = "car" }), []string{`workload.yaml: pipelines[0].modules[3].after[0].module: "car": unknown module: not in pipelines[0].modules`}},
		{"edge duplicate", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			m := &pipe(w).Modules[3]
			m.After = append(m.After, pardsec.Edge{Module: "vehicle"})
		}), []string{`workload.yaml: pipelines[0].modules[3].after[1].module: "vehicle": duplicate edge (first at after[0])`}},
		{"edge probability", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { pipe(w).Modules[1].After[0].Probability = 1.5 }), []string{`workload.yaml: pipelines[0].modules[1].after[0].probability: 1.5: must be in (0, 1]`}},
		{"edge probability negative", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { pipe(w).Modules[1].After[0].Probability = -0.1 }), []string{`workload.yaml: pipelines[0].modules[1].after[0].probability: -0.1: must be in (0, 1]`}},
		{"cycle", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { pipe(w).Modules[0].After = []pardsec.Edge{{Module: "plate"}} }), []string{`workload.yaml: pipelines[0].modules: modules form a cycle: detect -> vehicle -> plate -> detect`}},
	}))
}

// One bad-input case per rule of the plan section (moved from formats' tests).
func TestValidatePlan(t *testing.T) {
	sectiontest.Run(t, secs, cases([]badCase{
		{"pard policy", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { pardsec.PlanOf(p).Policy = "" }), []string{`plan-sections.json: pard.policy: "": must not be empty`}},
		{"pard params", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { pardsec.PlanOf(p).Params["drop_margin"] = nan }), []string{`plan-sections.json: pard.params.drop_margin: NaN: must be a finite number`}},
		{"pard no apps", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { pardsec.PlanOf(p).Apps = nil }), []string{`plan-sections.json: pard.apps: must list at least one app`}},
		{"pard app duplicate", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) {
			pardsec.PlanOf(p).Apps = append(pardsec.PlanOf(p).Apps, pardsec.PlanOf(p).Apps[0])
		}), []string{`plan-sections.json: pard.apps[1].name: "traffic": duplicate name (first at pard.apps[0].name)`}},
		{"pard slo", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { pardsec.PlanOf(p).Apps[0].SLO = 0 }), []string{`plan-sections.json: pard.apps[0].slo: 0s: must be > 0`}},
		{"pard rate", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { pardsec.PlanOf(p).Apps[0].RateRPS = -1 }), []string{`plan-sections.json: pard.apps[0].rate_rps: -1: must be >= 0`}},
		{"pard no modules", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { pardsec.PlanOf(p).Apps[0].Modules = nil }), []string{`plan-sections.json: pard.apps[0].modules: must list at least one module`}},
		{"pard module duplicate", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { pardsec.PlanOf(p).Apps[0].Modules[3].Name = "person" }), []string{`plan-sections.json: pard.apps[0].modules[3].name: "person": duplicate name (first at pard.apps[0].modules[2].name)`}},
		{"pard module model", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { pardsec.PlanOf(p).Apps[0].Modules[3].Model = "" }), []string{`plan-sections.json: pard.apps[0].modules[3].model: "": must not be empty`}},
		{"pard module gpu", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { pardsec.PlanOf(p).Apps[0].Modules[3].GPU = "V100" }), []string{`plan-sections.json: pard.apps[0].modules[3].gpu: "V100": unknown GPU type: not in provenance.embedded.cluster.gpus (L4, P4)`}},
		{"pard module batch", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { pardsec.PlanOf(p).Apps[0].Modules[3].Batch = 0 }), []string{`plan-sections.json: pard.apps[0].modules[3].batch: 0: must be >= 1`}},
		{"pard module workers", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { pardsec.PlanOf(p).Apps[0].Modules[3].Workers = 0 }), []string{`plan-sections.json: pard.apps[0].modules[3].workers: 0: must be >= 1`}},
		{"pard module latency", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { pardsec.PlanOf(p).Apps[0].Modules[3].LatencyUs = -1 }), []string{`plan-sections.json: pard.apps[0].modules[3].latency_us: -1: must be >= 0`}},
	}))
}

// The plan section against the other files given with it (moved from formats' CheckSet
// cases).
func TestCrossCheck(t *testing.T) {
	sectiontest.RunCross(t, secs, []sectiontest.CrossCase{
		{Name: "pipeline model not profiled", Files: []string{"profile.json", "workload.yaml"}, Mutate: func(d map[string]formats.Document) {
			pardsec.PipelinesOf(d["workload.yaml"].(*formats.Workload))[0].Modules[0].Model = "yolov8n"
		}, Want: []string{`workload.yaml: pipelines[0].modules[0].model: "yolov8n": model not found in any profile (profile.json)`}},
		{Name: "module model not profiled", Files: []string{"profile.json", "plan-sections.json"}, Mutate: func(d map[string]formats.Document) {
			pardsec.PlanOf(d["plan-sections.json"].(*formats.Plan)).Apps[0].Modules[0].Model = "yolov8n"
		}, Want: []string{`plan-sections.json: pard.apps[0].modules[0].model: "yolov8n": model not found in any profile (profile.json)`}},
		{Name: "app not in the workload", Files: []string{"workload.yaml", "plan-sections.json"}, Mutate: func(d map[string]formats.Document) {
			pardsec.PlanOf(d["plan-sections.json"].(*formats.Plan)).Apps[0].Name = "retail"
		}, Want: []string{`plan-sections.json: pard.apps[0].name: "retail": not a pipeline of workload.yaml`}},
	})
	empty := map[string]formats.Document{"x.json": pardsec.SetPlan(&formats.Plan{}, &pardsec.PARDPlan{Apps: []pardsec.PARDApp{{}}})}
	_ = formats.CheckSet(empty, secs)
}
