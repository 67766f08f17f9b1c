package formats

import (
	"encoding/json"
	"testing"
)

func TestValidatePlan(t *testing.T) {
	const f, s = "plan.json", "plan-sections.json"
	runBad(t, []badCase{
		{"kind", f, pl(func(p *Plan) { p.Kind = "Profile" }), []string{`plan.json: kind: "Profile": must be Plan`}},
		// provenance
		{"tool", f, pl(func(p *Plan) { p.Provenance.Tool = "" }), []string{`plan.json: provenance.tool: "": must not be empty`}},
		{"tool_version", f, pl(func(p *Plan) { p.Provenance.ToolVersion = "" }), []string{`plan.json: provenance.tool_version: "": must not be empty`}},
		{"input_digest", f, pl(func(p *Plan) { p.Provenance.InputDigest = "md5:abc" }), []string{`plan.json: provenance.input_digest: "md5:abc": must be sha256:<64 hex digits>`}},
		{"input kind", f, pl(func(p *Plan) { p.Provenance.Inputs[1].Kind = "Model" }), []string{`plan.json: provenance.inputs[1].kind: "Model": must be one of Profile, Cluster, Workload, Plan, Trace`}},
		{"input path", f, pl(func(p *Plan) { p.Provenance.Inputs[1].Path = "" }), []string{`plan.json: provenance.inputs[1].path: "": must not be empty`}},
		{"input digest", f, pl(func(p *Plan) { p.Provenance.Inputs[1].Digest = "" }), []string{`plan.json: provenance.inputs[1].digest: "": must be sha256:<64 hex digits>`}},
		{"option name", f, pl(func(p *Plan) { p.Provenance.Options = json.RawMessage(`{"": "x"}`) }), []string{`plan.json: provenance.options[""]: "": option name must not be empty`}},
		{"status", f, pl(func(p *Plan) { p.Provenance.Status = "done" }), []string{`plan.json: provenance.status: "done": must be one of optimal, time-limit, heuristic, infeasible, unbounded, error`}},
		{"objective NaN", f, pl(func(p *Plan) { p.Provenance.Objective = nan }), []string{`plan.json: provenance.objective: NaN: must be a finite number`}},
		{"bound Inf", f, pl(func(p *Plan) { p.Provenance.Bound = &inf }), []string{`plan.json: provenance.bound: +Inf: must be a finite number`}},
		{"gap", f, pl(func(p *Plan) { p.Provenance.Gap = Proven(-0.1) }), []string{`plan.json: provenance.gap: -0.1: must be >= 0`}},
		{"no bound, time-limit", f, pl(func(p *Plan) { p.Provenance.Status, p.Provenance.Bound, p.Provenance.Gap = "time-limit", nil, nil }), nil},
		{"no bound, optimal", f, pl(func(p *Plan) { p.Provenance.Bound, p.Provenance.Gap = nil, nil }), []string{`plan.json: provenance.bound: must be present: an optimal solve proves its bound (a plan with no proof is heuristic)`}},
		{"no bound, optimal, no solver", f, pl(func(p *Plan) { p.Provenance.Solver, p.Provenance.Bound, p.Provenance.Gap = "", nil, nil }), []string{`plan.json: provenance.bound: must be present: an optimal solve proves its bound (a plan with no proof is heuristic)`}},
		{"no bound, heuristic, no solver", f, pl(func(p *Plan) {
			p.Provenance.Solver, p.Provenance.Status, p.Provenance.Bound, p.Provenance.Gap = "", "heuristic", nil, nil
		}), nil},
		{"gap without bound", f, pl(func(p *Plan) { p.Provenance.Status, p.Provenance.Bound = "time-limit", nil }), []string{`plan.json: provenance.gap: 0: must be absent when no bound is recorded`}},
		{"solve_ms", f, pl(func(p *Plan) { p.Provenance.SolveMs = -1 }), []string{`plan.json: provenance.solve_ms: -1: must be >= 0`}},
		{"nodes", f, pl(func(p *Plan) { p.Provenance.Nodes = -1 }), []string{`plan.json: provenance.nodes: -1: must be >= 0`}},
		{"embedded cluster", s, pl(func(p *Plan) { p.Provenance.Embedded.Cluster.GPUs[0].PerServer = 0 }), []string{`plan-sections.json: provenance.embedded.cluster.gpus[0].per_server: 0: must be >= 1`}},
		{"embedded workload", s, pl(func(p *Plan) {
			p.Provenance.Embedded.Workload = &Workload{TypeMeta: TypeMeta{APIVersion, KindWorkload}}
		}), []string{
			`plan-sections.json: provenance.embedded.workload: must describe at least one of models, pipelines, cascades, llm_classes or workflows`}},
		{"embedded profile", s, pl(func(p *Plan) { p.Provenance.Embedded.Profiles = []Profile{{TypeMeta: TypeMeta{APIVersion, "Profile"}}} }), []string{
			`plan-sections.json: provenance.embedded.profiles[0].models: must list at least one model (models or llms)`}},
		{"plan cluster", f, pl(func(p *Plan) { p.Cluster.NICGbps = 0 }), []string{`plan.json: cluster.nic_gbps: 0: must be > 0`}},
		{"no sections", f, pl(func(p *Plan) { delete(p.Sections, "ppipe") }), []string{`plan.json: must have at least one of ppipe, pard, cascade, qlm or dyorc (status is optimal)`}},
	})
}

// A plan that records an infeasible solve may have no sections; one without a cluster cannot
// have its GPU types checked, and that is not an error.
func TestValidatePlanAllowed(t *testing.T) {
	p := loadGood(t, "plan.json").(*Plan)
	delete(p.Sections, "ppipe")
	p.Provenance.Status = "infeasible"
	if errs := p.Validate(inTree); len(errs) > 0 {
		t.Errorf("infeasible plan without sections: %v", errs)
	}
	if got := loadGood(t, "plan-sections.json").(*Plan).TargetCluster(); got == nil || got.Metadata.Name != "l4-p4" {
		t.Errorf("TargetCluster of plan-sections.json = %v, want the embedded cluster", got)
	}
	if got := loadGood(t, "plan.json").(*Plan).GPUTypes(inTree); len(got) != 2 || got[0] != "L4" || got[1] != "P4" {
		t.Errorf("GPUTypes = %v, want [L4 P4]", got)
	}
}
