package qlmsec_test

import (
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
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

// One bad-input case per rule of the plan section (moved from formats' tests).
func TestValidatePlan(t *testing.T) {
	sectiontest.Run(t, secs, cases([]badCase{
		{"qlm no instances", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { qlmsec.PlanOf(p).Instances = nil }), []string{`plan-sections.json: qlm.instances: must list at least one instance`}},
		{"qlm group duplicate", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { qlmsec.PlanOf(p).Groups[2].ID = "summ-0" }), []string{
			`plan-sections.json: qlm.groups[2].id: "summ-0": duplicate name (first at qlm.groups[1].id)`,
			`plan-sections.json: qlm.instances[1].queue[0]: "summ-1": unknown group: not in qlm.groups`}},
		{"qlm group model", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { qlmsec.PlanOf(p).Groups[2].Model = "" }), []string{`plan-sections.json: qlm.groups[2].model: "": must not be empty`}},
		{"qlm group slo", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { qlmsec.PlanOf(p).Groups[2].SLO = 0 }), []string{`plan-sections.json: qlm.groups[2].slo: 0s: must be > 0`}},
		{"qlm group requests", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { qlmsec.PlanOf(p).Groups[2].Requests = 0 }), []string{`plan-sections.json: qlm.groups[2].requests: 0: must be >= 1`}},
		{"qlm instance name", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[1].Name = "vllm-0" }), []string{`plan-sections.json: qlm.instances[1].name: "vllm-0": duplicate name (first at qlm.instances[0].name)`}},
		{"qlm instance gpu", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[1].GPU = "H100" }), []string{`plan-sections.json: qlm.instances[1].gpu: "H100": unknown GPU type: not in provenance.embedded.cluster.gpus (L4, P4)`}},
		{"qlm instance gpu_count", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[1].GPUCount = 0 }), []string{`plan-sections.json: qlm.instances[1].gpu_count: 0: must be >= 1`}},
		{"qlm instance gpus", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[1].GPUs = []int{1, 1} }),
			[]string{`plan-sections.json: qlm.instances[1].gpus: [1 1]: lists 2 GPUs for gpu_count 1`, `plan-sections.json: qlm.instances[1].gpus[1]: 1: must be a GPU index >= 0, each once`}},
		{"qlm queue unknown", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[1].Queue[0] = "chat-9" }), []string{`plan-sections.json: qlm.instances[1].queue[0]: "chat-9": unknown group: not in qlm.groups`}},
		{"qlm queued twice", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) {
			qlmsec.PlanOf(p).Instances[1].Queue = append(qlmsec.PlanOf(p).Instances[1].Queue, "chat-0")
		}), []string{`plan-sections.json: qlm.instances[1].queue[1]: "chat-0": group is already queued at qlm.instances[0].queue[0]`}},
		{"qlm role", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { qlmsec.PlanOf(p).Instances[1].Role = "both" }),
			[]string{`plan-sections.json: qlm.instances[1].role: "both": must be one of prefill, decode`}},
		{"qlm prefill without decode", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) {
			qlmsec.PlanOf(p).Instances[1].Role = llmspec.RolePrefill
			link := 50.0
			p.Provenance.Embedded.Cluster.KVLinkGBps = &link
		}), []string{`plan-sections.json: qlm.instances[1].role: "prefill": model "llama-3.2-1b" has 1 prefill instances and no decode instance`}},
		{"qlm decode without prefill", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) {
			qlmsec.PlanOf(p).Instances[0].Role = llmspec.RoleDecode
			link := 50.0
			p.Provenance.Embedded.Cluster.KVLinkGBps = &link
		}), []string{`plan-sections.json: qlm.instances[0].role: "decode": model "llama-3.1-8b" has 1 decode instances and no prefill instance`}},
		{"qlm roles beside aggregated", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) {
			in := qlmsec.PlanOf(p).Instances[0]
			in.Name, in.Queue, in.Role = "vllm-p", nil, llmspec.RolePrefill
			in2 := in
			in2.Name, in2.Role = "vllm-d", llmspec.RoleDecode
			qlmsec.PlanOf(p).Instances = append(qlmsec.PlanOf(p).Instances, in, in2)
			link := 50.0
			p.Provenance.Embedded.Cluster.KVLinkGBps = &link
		}), []string{`plan-sections.json: qlm.instances[0].role: "": model "llama-3.1-8b" has prefill and decode instances and 1 aggregated ones: give every instance of it a role`}},
		{"qlm roles without link", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) {
			qlmsec.PlanOf(p).Instances[0].Role = llmspec.RolePrefill
			in := qlmsec.PlanOf(p).Instances[0]
			in.Name, in.Queue, in.Role = "vllm-d", nil, llmspec.RoleDecode
			qlmsec.PlanOf(p).Instances = append(qlmsec.PlanOf(p).Instances, in)
		}), []string{`plan-sections.json: provenance.embedded.cluster.kv_link_gbps: missing: prefill instances move KV to decode instances over this link (GB/s)`}},
		{"qlm replan", "plan-sections.json", sectiontest.Plan(func(p *formats.Plan) { qlmsec.PlanOf(p).ReplanMs = -1 }), []string{`plan-sections.json: qlm.replan_ms: -1: must be >= 0`}},
	}))
}

// QLM's plan section against the other files given with it (formats.CheckSet runs the
// checks through the registered Section): LLMs in the profiles, classes in the workload.
func TestCrossCheck(t *testing.T) {
	sectiontest.RunCross(t, secs, []sectiontest.CrossCase{
		{Name: "LLMs not profiled", Files: []string{"profile.json", "plan-sections.json"}, Mutate: func(d map[string]formats.Document) {
			q := qlmsec.PlanOf(d["plan-sections.json"].(*formats.Plan))
			q.Groups[0].Model = "resnet50"
			q.Instances[0].Model = "mistral-7b"
		}, Want: []string{
			`plan-sections.json: qlm.groups[0].model: "resnet50": LLM not found in any profile (profile.json)`,
			`plan-sections.json: qlm.instances[0].model: "mistral-7b": LLM not found in any profile (profile.json)`}},
		{Name: "class not in the workload", Files: []string{"workload.yaml", "plan-sections.json"}, Mutate: func(d map[string]formats.Document) {
			qlmsec.PlanOf(d["plan-sections.json"].(*formats.Plan)).Groups[1].Class = "batch"
		}, Want: []string{`plan-sections.json: qlm.groups[1].class: "batch": not an LLM class of workload.yaml`}},
	})
	empty := map[string]formats.Document{"x.json": qlmsec.SetPlan(&formats.Plan{}, &qlmsec.QLMPlan{})}
	_ = formats.CheckSet(empty, secs)
}

// TestServedModels: a QLM plan names the LLMs its instances serve through the plan-side
// ModelUser (formats.Plan.ServedModels), once per instance; a plan with no section that says
// reports it does not know rather than that it serves nothing.
func TestServedModels(t *testing.T) {
	p := qlmsec.SetPlan(&formats.Plan{}, &qlmsec.QLMPlan{Instances: []qlmsec.QLMInstance{
		{Name: "a", Model: "mistral-7b"}, {Name: "b", Model: "vicuna-13b"}, {Name: "c", Model: "mistral-7b"}}})
	dnn, llm, ok := p.ServedModels()
	if !ok || len(dnn) != 0 || len(llm) != 3 || llm[0] != "mistral-7b" || llm[1] != "vicuna-13b" {
		t.Errorf("ServedModels = %v, %v, %v; want the three instances' LLMs", dnn, llm, ok)
	}
	if _, _, ok := (&formats.Plan{}).ServedModels(); ok {
		t.Error("a plan with no sections says which models it serves")
	}
}
