package dyorcsec_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/sectiontest"
)

var (
	secs = intree.Sections() // the shared fixtures carry every system's section
	nan  = math.NaN()
	inf  = math.Inf(1)
)

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

func ms(d time.Duration) formats.Duration { return formats.Duration(d * time.Millisecond) }

func app(w *formats.Workload, name string) dyorcsec.App       { return dyorcsec.WorkflowsOf(w).Apps[name] }
func setApp(w *formats.Workload, name string, a dyorcsec.App) { dyorcsec.WorkflowsOf(w).Apps[name] = a }

// One bad-input case per rule of DyOrc's workload section (moved from formats' tests).
func TestValidateWorkflows(t *testing.T) {
	sectiontest.Run(t, secs, cases([]badCase{
		{"workflows empty", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { dyorcsec.SetWorkflows(w, &dyorcsec.Workflows{}) }), []string{
			`workload.yaml: workflows.services: must define at least one service`,
			`workload.yaml: workflows.apps: must define at least one app`}},
		{"service name", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { dyorcsec.WorkflowsOf(w).Services[""] = dyorcsec.Service{MaxBatch: 1} }), []string{`workload.yaml: workflows.services[""]: "": service name must not be empty`}},
		{"service weights", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			s := dyorcsec.WorkflowsOf(w).Services["vit"]
			s.WeightsGB = -1
			dyorcsec.WorkflowsOf(w).Services["vit"] = s
		}), []string{`workload.yaml: workflows.services.vit.weights_gb: -1: must be >= 0`}},
		{"service act", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			s := dyorcsec.WorkflowsOf(w).Services["vit"]
			s.ActGB = nan
			dyorcsec.WorkflowsOf(w).Services["vit"] = s
		}), []string{`workload.yaml: workflows.services.vit.act_gb: NaN: must be >= 0`}},
		{"service max_batch", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			s := dyorcsec.WorkflowsOf(w).Services["vit"]
			s.MaxBatch = 0
			dyorcsec.WorkflowsOf(w).Services["vit"] = s
		}), []string{`workload.yaml: workflows.services.vit.max_batch: 0: must be >= 1`}},
		{"service work_spread", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			s := dyorcsec.WorkflowsOf(w).Services["vit"]
			s.WorkSpread = 1
			dyorcsec.WorkflowsOf(w).Services["vit"] = s
		}), []string{`workload.yaml: workflows.services.vit.work_spread: 1: must be at least 0 and below 1 (a request's work is drawn from [1−s, 1+s] of the nominal)`}},
		{"service work_spread NaN", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			s := dyorcsec.WorkflowsOf(w).Services["vit"]
			s.WorkSpread = math.NaN()
			dyorcsec.WorkflowsOf(w).Services["vit"] = s
		}), []string{`workload.yaml: workflows.services.vit.work_spread: NaN: must be at least 0 and below 1 (a request's work is drawn from [1−s, 1+s] of the nominal)`}},
		{"service latency base", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { dyorcsec.WorkflowsOf(w).Services["vit"].Latency.BaseUs = -1 }), []string{`workload.yaml: workflows.services.vit.latency.base_us: -1: must be >= 0`}},
		{"service latency per item", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { dyorcsec.WorkflowsOf(w).Services["vit"].Latency.PerItemUs = -1 }), []string{`workload.yaml: workflows.services.vit.latency.per_item_us: -1: must be >= 0`}},
		{"service out", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			s := dyorcsec.WorkflowsOf(w).Services["vit"]
			s.OutKB = -1
			dyorcsec.WorkflowsOf(w).Services["vit"] = s
		}), []string{`workload.yaml: workflows.services.vit.out_kb: -1: must be >= 0`}},
		{"app name", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { setApp(w, "", app(w, "kc")) }), []string{`workload.yaml: workflows.apps[""]: "": app name must not be empty`}},
		{"app slo", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { a := app(w, "gill"); a.SLO = ms(-1); setApp(w, "gill", a) }), []string{`workload.yaml: workflows.apps.gill.slo: -1ms: must be > 0 (or omitted)`}},
		{"app steps and loop", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { a := app(w, "gill"); a.Loop = app(w, "debate").Loop; setApp(w, "gill", a) }), []string{`workload.yaml: workflows.apps.gill.loop: set steps or loop, not both`}},
		{"app neither", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { setApp(w, "gill", dyorcsec.App{}) }), []string{`workload.yaml: workflows.apps.gill: must set steps or loop`}},
		{"step id empty", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "gill").Steps[2].ID = "" }), []string{`workload.yaml: workflows.apps.gill.steps[2].id: "": must not be empty`}},
		{"step id duplicate", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "gill").Steps[2].ID = "enc" }), []string{`workload.yaml: workflows.apps.gill.steps[2].id: "enc": duplicate name (first at workflows.apps.gill.steps[0].id)`}},
		{"step svc and choice", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "kc").Steps[1].Service = "vit" }), []string{`workload.yaml: workflows.apps.kc.steps[1].choice: set svc or choice, not both`}},
		{"step neither", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "kc").Steps[0].Service = "" }), []string{`workload.yaml: workflows.apps.kc.steps[0]: must set svc or choice`}},
		{"step unknown service", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "kc").Steps[0].Service = "gpt4" }), []string{`workload.yaml: workflows.apps.kc.steps[0].svc: "gpt4": unknown service: not in workflows.services`}},
		{"choice unknown service", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "kc").Steps[1].Choice["card_med"] = 0.1 }), []string{`workload.yaml: workflows.apps.kc.steps[1].choice: 1.1: branch probabilities must sum to 1 (they sum to 1.1)`, `workload.yaml: workflows.apps.kc.steps[1].choice.card_med: "card_med": unknown service: not in workflows.services`}},
		{"choice weight", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "kc").Steps[1].Choice["card_law"] = 0 }), []string{`workload.yaml: workflows.apps.kc.steps[1].choice: 0.6: branch probabilities must sum to 1 (they sum to 0.6)`, `workload.yaml: workflows.apps.kc.steps[1].choice.card_law: 0: must be > 0`}},
		{"step p", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "kc").Steps[1].P = 1.5 }), []string{`workload.yaml: workflows.apps.kc.steps[1].p: 1.5: must be in [0, 1]`}},
		{"step p without when", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "kc").Steps[1].When = "" }), []string{`workload.yaml: workflows.apps.kc.steps[1].p: 0.6: p is the probability of the when guard: set when`}},
		{"step fanout", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "gill").Steps[0].Fanout = -2 }), []string{`workload.yaml: workflows.apps.gill.steps[0].fanout: -2: must be >= 1 (or omitted)`}},
		{"after empty", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "gill").Steps[1].After[0] = "?" }), []string{`workload.yaml: workflows.apps.gill.steps[1].after[0]: "?": must name a step, optionally with a ? or * suffix, or be $in`}},
		{"after self", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "gill").Steps[1].After[0] = "llm*" }), []string{`workload.yaml: workflows.apps.gill.steps[1].after[0]: "llm*": a step cannot depend on itself`}},
		{"after unknown", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "gill").Steps[1].After[1] = "in" }), []string{`workload.yaml: workflows.apps.gill.steps[1].after[1]: "in": unknown step: not a step of this app (use $in for the request input)`}},
		{"steps cycle", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "kc").Steps[0].After = []string{"ans"} }), []string{`workload.yaml: workflows.apps.kc.steps: steps form a cycle: ask -> card -> ans -> ask`}},
		{"loop id", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "debate").Loop.ID = "" }), []string{
			`workload.yaml: workflows.apps.debate.loop.id: "": must not be empty`,
			`workload.yaml: workflows.apps.debate.loop.body[0].after[0]: "round.prev*": unknown step: not a step of this app (use $in for the request input)`}},
		{"loop max_iter", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "debate").Loop.MaxIter = 0 }), []string{`workload.yaml: workflows.apps.debate.loop.max_iter: 0: unbounded loop: max_iter must be >= 1 (DyOrc loops are bounded)`}},
		{"guard syntax", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "kc").Steps[1].When = "ask.need >> 2" }), []string{`workload.yaml: workflows.apps.kc.steps[1].when: "ask.need >> 2": guard cannot be evaluated: right-hand side "> 2" of > is not a finite number`}},
		{"guard unknown step", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "kc").Steps[1].When = "ans.need" }), []string{`workload.yaml: workflows.apps.kc.steps[1].when: "ans.need": guard cannot be evaluated: "ans" is neither in (the request input) nor a step listed before this one`}},
		{"loop p_stop length", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "debate").Loop.MaxIter = 5 }), []string{`workload.yaml: workflows.apps.debate.loop.p_stop: 4: length must be max_iter = 5`}},
		{"loop p_stop value", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "debate").Loop.PStop[1] = 1.5 }), []string{`workload.yaml: workflows.apps.debate.loop.p_stop[1]: 1.5: must be in [0, 1]`}},
		{"loop body", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { app(w, "debate").Loop.Body = nil }), []string{`workload.yaml: workflows.apps.debate.loop.body: must list at least one step`}},
	}))
}

// One bad-input case per rule of DyOrc's plan section (moved from formats' tests).
func TestValidatePlan(t *testing.T) {
	sectiontest.Run(t, secs, cases([]badCase{
		{"dyorc none", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { dyorcsec.PlanOf(p).Deployments = nil }), []string{`plan-sections.json: dyorc.deployments: must list at least one deployment`}},
		{"dyorc service", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { dyorcsec.PlanOf(p).Deployments[1].Service = "" }), []string{`plan-sections.json: dyorc.deployments[1].service: "": must not be empty`}},
		{"dyorc gpu", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { dyorcsec.PlanOf(p).Deployments[1].GPU = "T4" }), []string{`plan-sections.json: dyorc.deployments[1].gpu: "T4": unknown GPU type: not in provenance.embedded.cluster.gpus (L4, P4)`}},
		{"dyorc replicas", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { dyorcsec.PlanOf(p).Deployments[1].Replicas = 0 }), []string{`plan-sections.json: dyorc.deployments[1].replicas: 0: must be >= 1`}},
		{"dyorc max_batch", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { dyorcsec.PlanOf(p).Deployments[1].MaxBatch = 0 }), []string{`plan-sections.json: dyorc.deployments[1].max_batch: 0: must be >= 1`}},
		{"dyorc duplicate", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { dyorcsec.PlanOf(p).Deployments[2].Service = "llm7b" }), []string{`plan-sections.json: dyorc.deployments[2]: (llm7b, L4): duplicate (service, gpu) deployment (first at dyorc.deployments[0])`}},
		{"dyorc params", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { dyorcsec.PlanOf(p).Params["beam"] = inf }), []string{`plan-sections.json: dyorc.params.beam: +Inf: must be a finite number`}},
	}))
}

// DyOrc's checks against the other files given with its sections (formats.CheckSet runs
// them through the registered Sections), and CheckSet on empty sections does not panic.
func TestCrossCheck(t *testing.T) {
	all := intree.Sections()
	for _, tc := range []struct {
		name   string
		files  []string
		mutate func(map[string]formats.Document)
		want   string
	}{
		{"service without latency", []string{"profile.json", "workload.yaml"}, func(d map[string]formats.Document) {
			wf := dyorcsec.WorkflowsOf(d["workload.yaml"].(*formats.Workload))
			s := wf.Services["sd15"]
			s.Latency = nil
			wf.Services["sd15"] = s
		}, `workload.yaml: workflows.services.sd15: "sd15": no latency: none inline and not in any profile (profile.json)`},
		{"plan service not in the workflows", []string{"workload.yaml", "plan-sections.json"}, func(d map[string]formats.Document) {
			dyorcsec.PlanOf(d["plan-sections.json"].(*formats.Plan)).Deployments[2].Service = "whisper"
		}, `plan-sections.json: dyorc.deployments[2].service: "whisper": not a workflow service of workload.yaml`},
		{"GPU type not in the cluster", []string{"cluster.yaml", "plan-sections.json"}, func(d map[string]formats.Document) {
			dyorcsec.PlanOf(d["plan-sections.json"].(*formats.Plan)).Deployments[0].GPU = "H100"
		}, `plan-sections.json: dyorc.deployments[0].gpu: "H100": unknown GPU type: not in cluster.yaml`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs := map[string]formats.Document{}
			for _, f := range tc.files {
				docs[f] = sectiontest.Load(t, f, all)
			}
			if errs := formats.CheckSet(docs, all); len(errs) != 0 {
				t.Fatalf("good files: %v", errs)
			}
			tc.mutate(docs)
			var got []string
			for _, e := range formats.CheckSet(docs, all) {
				got = append(got, e.Error())
			}
			found := false
			for _, g := range got {
				found = found || strings.HasPrefix(g, tc.want)
			}
			if !found {
				t.Errorf("got %q, want one starting %q", got, tc.want)
			}
		})
	}
	empty := map[string]formats.Document{
		"w.yaml": dyorcsec.SetWorkflows(&formats.Workload{}, &dyorcsec.Workflows{}),
		"x.json": dyorcsec.SetPlan(&formats.Plan{}, &dyorcsec.DyOrcPlan{}),
		"c.yaml": &formats.Cluster{GPUs: []formats.GPUPool{{Type: "L4", Count: 1}}},
		"p.json": &formats.Profile{Models: []formats.ModelProfile{{Name: "m"}}},
	}
	_ = formats.CheckSet(empty, all)
}
