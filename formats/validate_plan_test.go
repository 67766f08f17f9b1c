package formats

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValidatePlan(t *testing.T) {
	const f, s = "plan.json", "plan-sections.json"
	res := func(p *Plan) *PPipeModelPlan { return &p.PPipe.Models[0] } // resnet50: 2 partitions L4 v2 + P4
	yol := func(p *Plan) *PPipeModelPlan { return &p.PPipe.Models[1] } // yolov5s: 2 single-partition pipelines
	part := func(p *Plan, k int) *Partition { return &res(p).Pipelines[0].Partitions[k] }
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
		{"no bound, optimal", f, pl(func(p *Plan) { p.Provenance.Bound, p.Provenance.Gap = nil, nil }), []string{`plan.json: provenance.bound: must be present: an optimal solve proves its bound`}},
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
		{"no sections", f, pl(func(p *Plan) { p.PPipe = nil }), []string{`plan.json: must have at least one of ppipe, pard, cascade, qlm or dyorc (status is optimal)`}},
		// PPipe's partitions against the embedded profiles: formats' checkProfiles, shared by
		// every system's plan section.
		{"embedded profiles: unknown model", f, pl(func(p *Plan) {
			p.Provenance.Embedded = &EmbeddedInputs{Profiles: []Profile{*loadGood(t, "profile.json").(*Profile)}}
			yol(p).Model = "yolov8n"
		}), []string{`plan.json: ppipe.models[1].model: "yolov8n": model not found in provenance.embedded.profiles`}},
		{"embedded profiles: end block", f, pl(func(p *Plan) {
			p.Provenance.Embedded = &EmbeddedInputs{Profiles: []Profile{*loadGood(t, "profile.json").(*Profile)}}
			part(p, 1).EndBlock = 5
		}), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[1].end_block: 5: must equal the number of blocks of resnet50 (4)`}},
		{"embedded profiles: no latency entry", f, pl(func(p *Plan) {
			p.Provenance.Embedded = &EmbeddedInputs{Profiles: []Profile{*loadGood(t, "profile.json").(*Profile)}}
			res(p).Pipelines[0].Batch = 8
		}), []string{
			`plan.json: ppipe.models[0].pipelines[0].partitions[0]: (L4, vgpu 2, batch 8): no latency entry for model resnet50 in provenance.embedded.profiles`,
			`plan.json: ppipe.models[0].pipelines[0].partitions[1]: (P4, vgpu 1, batch 8): no latency entry for model resnet50 in provenance.embedded.profiles`}},
	})
}

// A plan that records an infeasible solve may have no sections; one without a cluster cannot
// have its GPU types checked, and that is not an error.
func TestValidatePlanAllowed(t *testing.T) {
	p := loadGood(t, "plan.json").(*Plan)
	p.PPipe, p.Provenance.Status = nil, "infeasible"
	if errs := p.Validate(inTree); len(errs) > 0 {
		t.Errorf("infeasible plan without sections: %v", errs)
	}
	q := loadGood(t, "plan.json").(*Plan)
	q.Cluster = nil
	q.PPipe.Models[0].Pipelines[0].Partitions[1].GPU = "A100"
	if errs := q.Validate(inTree); len(errs) > 0 {
		t.Errorf("plan without a cluster: %v", errs)
	}
	if got := loadGood(t, "plan-sections.json").(*Plan).TargetCluster(); got == nil || got.Metadata.Name != "l4-p4" {
		t.Errorf("TargetCluster of plan-sections.json = %v, want the embedded cluster", got)
	}
	if got := loadGood(t, "plan.json").(*Plan).GPUTypes(inTree); len(got) != 2 || got[0] != "L4" || got[1] != "P4" {
		t.Errorf("GPUTypes = %v, want [L4 P4]", got)
	}
	if got := (&Partition{VGPU: 4, Count: 5}).PhysicalGPUs(); got != 2 {
		t.Errorf("PhysicalGPUs(5 slices of 1/4) = %d, want 2", got)
	}
}

// TestStageRounding: under ppipe.extra.rounding "stage" the pools at one
// (model, stage index, GPU type) share GPUs — slices of any level summed as fractions and
// rounded up once — and Validate must count them that way: it refused plans the solver made
// under --rounding stage ("pipelines use 76 GPUs of this type, cluster has 75").
func TestStageRounding(t *testing.T) {
	// Three pipelines of yolov5s whose head pools (a half and two quarters of an L4) share one
	// L4 under stage rounding and take three under pipeline rounding.
	twoPools := func(p *Plan) {
		m := &p.PPipe.Models[1]
		m.Pipelines[0].Partitions[0].VGPU, m.Pipelines[0].Partitions[0].Count = 2, 1
		m.Pipelines[1].Partitions[0].GPU, m.Pipelines[1].Partitions[0].VGPU, m.Pipelines[1].Partitions[0].Count = "L4", 4, 1
		m.Pipelines = append(m.Pipelines, m.Pipelines[1])
		m.Pipelines[2].Partitions = []Partition{m.Pipelines[1].Partitions[0]}
		m.Pipelines[2].Partitions[0].VGPU = 4
		p.Cluster.GPUs[0].Count = 2 // resnet50 takes one L4 (2 halves); yolov5s gets one
	}
	cases := []struct {
		rounding string
		used     int
		want     []string
	}{
		{"stage", 2, nil},
		{"", 4, []string{`plan.json: ppipe.models: "L4": pipelines use 4 GPUs of this type (pipeline rounding), cluster has 2`}},
		{"pipeline", 4, []string{`plan.json: ppipe.models: "L4": pipelines use 4 GPUs of this type (pipeline rounding), cluster has 2`}},
		{"per-gpu", 4, []string{`plan.json: ppipe.extra.rounding: "per-gpu": must be one of pipeline, stage`, `plan.json: ppipe.models: "L4": pipelines use 4 GPUs of this type (per-gpu rounding), cluster has 2`}},
	}
	for _, c := range cases {
		t.Run(c.rounding, func(t *testing.T) {
			p := loadGood(t, "plan.json").(*Plan)
			twoPools(p)
			if c.rounding != "" {
				p.PPipe.Extra = map[string]string{"rounding": c.rounding}
			}
			if _, used := p.PPipe.PhysicalGPUs(); used["L4"] != c.used {
				t.Errorf("PhysicalGPUs: L4 %d, want %d", used["L4"], c.used)
			}
			var got []string
			for _, e := range p.Validate(inTree).WithFile("plan.json") {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("got:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(c.want, "\n\t"))
			}
		})
	}
}
