package ppipesec_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
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

func ms(d time.Duration) formats.Duration { return formats.Duration(d * time.Millisecond) }

var nan = math.NaN()
var inf = math.Inf(1)

// resnet50: 2 partitions L4 v2 + P4
func res(p *formats.Plan) *ppipesec.PPipeModelPlan { return &ppipesec.PlanOf(p).Models[0] }

// yolov5s: 2 single-partition pipelines
func yol(p *formats.Plan) *ppipesec.PPipeModelPlan    { return &ppipesec.PlanOf(p).Models[1] }
func part(p *formats.Plan, k int) *ppipesec.Partition { return &res(p).Pipelines[0].Partitions[k] }

// One bad-input case per rule of the workload section (moved from formats' tests).
func TestValidateModels(t *testing.T) {
	sectiontest.Run(t, secs, cases([]badCase{
		{"model name empty", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { ppipesec.ModelsOf(w)[1].Name = "" }), []string{`workload.yaml: models[1].name: "": must not be empty`}},
		{"model name duplicate", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { ppipesec.ModelsOf(w)[1].Name = "resnet50" }), []string{`workload.yaml: models[1].name: "resnet50": duplicate name (first at models[0].name)`}},
		{"model slo negative", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { ppipesec.ModelsOf(w)[0].SLO = ms(-5) }), []string{`workload.yaml: models[0].slo: -5ms: must be >= 0 (0 = slo_scale x the fastest batch-1 latency)`}},
		{"model slo_scale", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { ppipesec.ModelsOf(w)[1].SLOScale = 0.5 }), []string{`workload.yaml: models[1].slo_scale: 0.5: must be >= 1 (or omitted)`}},
		{"model slo and slo_scale", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { ppipesec.ModelsOf(w)[0].SLOScale = 5 }), []string{`workload.yaml: models[0].slo_scale: 5: set slo or slo_scale, not both`}},
		{"model weight", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { ppipesec.ModelsOf(w)[0].Weight = -1 }), []string{`workload.yaml: models[0].weight: -1: must be > 0 (or omitted)`}},
		{"model weight huge", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { ppipesec.ModelsOf(w)[0].Weight = 1e308 }), []string{`workload.yaml: models[0].weight: 1e+308: must be in [1e-06, 1e+06] (weights are relative)`}},
		{"model weight tiny", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { ppipesec.ModelsOf(w)[0].Weight = 1e-300 }), []string{`workload.yaml: models[0].weight: 1e-300: must be in [1e-06, 1e+06] (weights are relative)`}},
		{"model rate NaN", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { ppipesec.ModelsOf(w)[0].RateRPS = nan }), []string{`workload.yaml: models[0].rate_rps: NaN: must be >= 0`}},
	}))
}

// One bad-input case per rule of the plan section (moved from formats' tests).
func TestValidatePlan(t *testing.T) {
	sectiontest.Run(t, secs, cases([]badCase{
		{"strategy", "plan.json", sectiontest.Plan(func(p *formats.Plan) { ppipesec.PlanOf(p).Strategy = "greedy" }), []string{`plan.json: ppipe.strategy: "greedy": must be one of ppipe, np, dart-r`}},
		{"slo_margin", "plan.json", sectiontest.Plan(func(p *formats.Plan) { ppipesec.PlanOf(p).SLOMargin = 1 }), []string{`plan.json: ppipe.slo_margin: 1: must be in [0, 1)`}},
		{"max_partitions", "plan.json", sectiontest.Plan(func(p *formats.Plan) { ppipesec.PlanOf(p).MaxPartitions = 0 }), []string{`plan.json: ppipe.max_partitions: 0: must be >= 1`}},
		{"too many partitions", "plan.json", sectiontest.Plan(func(p *formats.Plan) { ppipesec.PlanOf(p).MaxPartitions = 1 }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions: 2: more partitions than max_partitions = 1`}},
		{"no models", "plan.json", sectiontest.Plan(func(p *formats.Plan) { ppipesec.PlanOf(p).Models = nil }), []string{`plan.json: ppipe.models: must list at least one model`}},
		{"model duplicate", "plan.json", sectiontest.Plan(func(p *formats.Plan) { yol(p).Model = "resnet50" }), []string{`plan.json: ppipe.models[1].model: "resnet50": duplicate name (first at ppipe.models[0].model)`}},
		{"model slo", "plan.json", sectiontest.Plan(func(p *formats.Plan) { yol(p).SLO = 0 }), []string{`plan.json: ppipe.models[1].slo: 0s: must be > 0`}},
		{"model weight", "plan.json", sectiontest.Plan(func(p *formats.Plan) { yol(p).Weight = 0 }), []string{`plan.json: ppipe.models[1].weight: 0: must be > 0`}},
		{"budget", "plan.json", sectiontest.Plan(func(p *formats.Plan) { yol(p).BudgetUs = 0 }), []string{`plan.json: ppipe.models[1].budget_us: 0: must be > 0`}},
		{"budget above slo", "plan.json", sectiontest.Plan(func(p *formats.Plan) { yol(p).BudgetUs = 9000 }), []string{`plan.json: ppipe.models[1].budget_us: 9000: must be <= slo (8000 us)`}},
		{"model throughput", "plan.json", sectiontest.Plan(func(p *formats.Plan) { yol(p).ThroughputRPS = -1 }), []string{`plan.json: ppipe.models[1].throughput_rps: -1: must be >= 0`}},
		{"pipeline batch", "plan.json", sectiontest.Plan(func(p *formats.Plan) { yol(p).Pipelines[1].Batch = 0 }), []string{`plan.json: ppipe.models[1].pipelines[1].batch: 0: must be >= 1`}},
		{"pipeline throughput", "plan.json", sectiontest.Plan(func(p *formats.Plan) { yol(p).Pipelines[1].ThroughputRPS = nan }), []string{`plan.json: ppipe.models[1].pipelines[1].throughput_rps: NaN: must be >= 0`}},
		{"pipeline latency", "plan.json", sectiontest.Plan(func(p *formats.Plan) { yol(p).Pipelines[1].LatencyUs = -1 }), []string{`plan.json: ppipe.models[1].pipelines[1].latency_us: -1: must be >= 0`}},
		{"batch formation", "plan.json", sectiontest.Plan(func(p *formats.Plan) { yol(p).Pipelines[1].BatchFormationUs = -1 }), []string{`plan.json: ppipe.models[1].pipelines[1].batch_formation_us: -1: must be >= 0`}},
		{"batch formation above latency", "plan.json", sectiontest.Plan(func(p *formats.Plan) { yol(p).Pipelines[1].BatchFormationUs = 6000 }), []string{`plan.json: ppipe.models[1].pipelines[1].batch_formation_us: 6000: must be <= latency_us (5670), which includes it`}},
		{"no pipelines", "plan.json", sectiontest.Plan(func(p *formats.Plan) { yol(p).Pipelines = nil }), []string{`plan.json: ppipe.models[1].pipelines: must list at least one pipeline`}},
		{"no partitions", "plan.json", sectiontest.Plan(func(p *formats.Plan) { yol(p).Pipelines[1].Partitions = nil }), []string{`plan.json: ppipe.models[1].pipelines[1].partitions: must list at least one partition`}},
		{"partitions start", "plan.json", sectiontest.Plan(func(p *formats.Plan) { part(p, 0).FirstBlock = 1 }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[0].first_block: 1: must be 0: partitions must start at block 0`}},
		{"partitions contiguous", "plan.json", sectiontest.Plan(func(p *formats.Plan) { part(p, 1).FirstBlock = 2 }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[1].first_block: 2: must equal partitions[0].end_block (3): partitions must be contiguous`}},
		{"partition empty", "plan.json", sectiontest.Plan(func(p *formats.Plan) { part(p, 1).EndBlock = 3 }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[1].end_block: 3: must be > first_block (3)`}},
		{"partition gpu empty", "plan.json", sectiontest.Plan(func(p *formats.Plan) { part(p, 1).GPU = "" }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[1].gpu: "": must not be empty`}},
		{"partition gpu unknown", "plan.json", sectiontest.Plan(func(p *formats.Plan) { part(p, 1).GPU = "A100" }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[1].gpu: "A100": unknown GPU type: not in cluster.gpus (L4, P4)`}},
		{"partition vgpu", "plan.json", sectiontest.Plan(func(p *formats.Plan) { part(p, 0).VGPU = 5 }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[0].vgpu: 5: must be in 1..4`}},
		{"partition vgpu not allowed", "plan.json", sectiontest.Plan(func(p *formats.Plan) { part(p, 1).VGPU = 2 }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[1].vgpu: 2: level not allowed for GPU type P4 in cluster (vgpu: [1])`}},
		{"partition count", "plan.json", sectiontest.Plan(func(p *formats.Plan) { part(p, 1).Count = 0 }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[1].count: 0: must be >= 1`}},
		{"partition stage latency", "plan.json", sectiontest.Plan(func(p *formats.Plan) { part(p, 1).StageLatencyUs = -1 }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[1].stage_latency_us: -1: must be >= 0`}},
		{"partition transfer", "plan.json", sectiontest.Plan(func(p *formats.Plan) { part(p, 0).TransferUs = inf }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[0].transfer_us: +Inf: must be >= 0`}},
		{"partition throughput", "plan.json", sectiontest.Plan(func(p *formats.Plan) { part(p, 0).ThroughputRPS = -1 }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[0].throughput_rps: -1: must be >= 0`}},
		{"gpus over capacity", "plan.json", sectiontest.Plan(func(p *formats.Plan) { yol(p).Pipelines[0].Partitions[0].Count = 4 }), []string{`plan.json: ppipe.models: "L4": pipelines use 5 GPUs of this type (pipeline rounding), cluster has 4; the pools on it: models[0].pipelines[0].partitions[0] (count 2, vgpu 2), models[1].pipelines[0].partitions[0] (count 4, vgpu 1)`}},
		{"gpu_use gpu", "plan.json", sectiontest.Plan(func(p *formats.Plan) { ppipesec.PlanOf(p).GPUUse[0].GPU = "T4" }), []string{`plan.json: ppipe.gpu_use[0].gpu: "T4": unknown GPU type: not in cluster.gpus (L4, P4)`}},
		{"gpu_use class", "plan.json", sectiontest.Plan(func(p *formats.Plan) { ppipesec.PlanOf(p).GPUUse[0].Class = "top" }), []string{`plan.json: ppipe.gpu_use[0].class: "top": must be high or low`}},
		{"gpu_use used", "plan.json", sectiontest.Plan(func(p *formats.Plan) { ppipesec.PlanOf(p).GPUUse[0].Used = -1 }), []string{`plan.json: ppipe.gpu_use[0].used: -1: must be >= 0`}},
		{"gpu_use total", "plan.json", sectiontest.Plan(func(p *formats.Plan) { ppipesec.PlanOf(p).GPUUse[0].Total = -1 }), []string{`plan.json: ppipe.gpu_use[0].total: -1: must be >= 0`}},
		{"gpu_use above total", "plan.json", sectiontest.Plan(func(p *formats.Plan) { ppipesec.PlanOf(p).GPUUse[0].Used = 4.5 }), []string{`plan.json: ppipe.gpu_use[0].used: 4.5: must be <= total (4)`}},
	}))
}

// The plan section against the profiles embedded in the plan (moved from formats' tests):
// formats' profile check runs the section's CheckProfiles.
func TestValidatePlanEmbeddedProfiles(t *testing.T) {
	const f = "plan.json"
	sectiontest.Run(t, secs, cases([]badCase{
		{"embedded profiles: unknown model", f, sectiontest.Plan(func(p *formats.Plan) {
			p.Provenance.Embedded = &formats.EmbeddedInputs{Profiles: []formats.Profile{*sectiontest.Load(t, "profile.json", secs).(*formats.Profile)}}
			yol(p).Model = "yolov8n"
		}), []string{`plan.json: ppipe.models[1].model: "yolov8n": model not found in provenance.embedded.profiles`}},
		{"embedded profiles: end block", f, sectiontest.Plan(func(p *formats.Plan) {
			p.Provenance.Embedded = &formats.EmbeddedInputs{Profiles: []formats.Profile{*sectiontest.Load(t, "profile.json", secs).(*formats.Profile)}}
			part(p, 1).EndBlock = 5
		}), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[1].end_block: 5: must equal the number of blocks of resnet50 (4)`}},
		{"embedded profiles: no latency entry", f, sectiontest.Plan(func(p *formats.Plan) {
			p.Provenance.Embedded = &formats.EmbeddedInputs{Profiles: []formats.Profile{*sectiontest.Load(t, "profile.json", secs).(*formats.Profile)}}
			res(p).Pipelines[0].Batch = 8
		}), []string{
			`plan.json: ppipe.models[0].pipelines[0].partitions[0]: (L4, vgpu 2, batch 8): no latency entry for model resnet50 in provenance.embedded.profiles`,
			`plan.json: ppipe.models[0].pipelines[0].partitions[1]: (P4, vgpu 1, batch 8): no latency entry for model resnet50 in provenance.embedded.profiles`}},
	}))
}

// Plan values at the engine clock's bounds (moved from formats' tests).
func TestValidateClockBounds(t *testing.T) {
	const f = "plan.json"
	part := func(p *formats.Plan) *ppipesec.Partition {
		return &ppipesec.PlanOf(p).Models[0].Pipelines[0].Partitions[0]
	}
	sectiontest.Run(t, secs, cases([]badCase{
		{"stage latency 1e308", f, sectiontest.Plan(func(p *formats.Plan) { part(p).StageLatencyUs = 1e308 }),
			[]string{`plan.json: ppipe.models[0].pipelines[0].partitions[0].stage_latency_us: 1e+308: must be <= 3.1536e+13 (8760h0m0s in µs, the engine clock's bound)`}},
		{"throughput 1e308", f, sectiontest.Plan(func(p *formats.Plan) { ppipesec.PlanOf(p).Models[0].ThroughputRPS = 1e308 }),
			[]string{`plan.json: ppipe.models[0].throughput_rps: 1e+308: must be 0 or in [3.17e-08, 1e+09] requests/s (the engine clock's bound)`}},
		{"slo beyond a year", f, sectiontest.Plan(func(p *formats.Plan) {
			ppipesec.PlanOf(p).Models[0].SLO = formats.Duration(formats.MaxDuration + time.Hour)
		}),
			[]string{`plan.json: ppipe.models[0].slo: 8761h0m0s: must be <= 8760h0m0s (the engine clock's bound)`}},
	}))
}

// A plan without a cluster cannot have its GPU types checked, and that is not an error.
func TestValidatePlanWithoutCluster(t *testing.T) {
	q := sectiontest.Load(t, "plan.json", secs).(*formats.Plan)
	q.Cluster = nil
	ppipesec.PlanOf(q).Models[0].Pipelines[0].Partitions[1].GPU = "A100"
	if errs := formats.Validate(q, secs); len(errs) > 0 {
		t.Errorf("plan without a cluster: %v", errs)
	}
	if got := (&ppipesec.Partition{VGPU: 4, Count: 5}).PhysicalGPUs(); got != 2 {
		t.Errorf("PhysicalGPUs(5 slices of 1/4) = %d, want 2", got)
	}
}

// The plan section against the other files given with it (moved from formats' CheckSet
// cases).
func TestCrossCheck(t *testing.T) {
	sectiontest.RunCross(t, secs, []sectiontest.CrossCase{
		{Name: "workload model not profiled", Files: []string{"profile.json", "workload.yaml"}, Mutate: func(d map[string]formats.Document) {
			w := d["workload.yaml"].(*formats.Workload)
			ppipesec.ModelsOf(w)[0].Name = "vgg16"
			ppipesec.ModelsOf(w)[1].Profile = "yolov8n"
		}, Want: []string{
			`workload.yaml: models[0].name: "vgg16": model not found in any profile (profile.json)`,
			`workload.yaml: models[1].profile: "yolov8n": model not found in any profile (profile.json)`}},
		{Name: "GPU type without latency, unused model", Files: []string{"cluster.yaml", "profile.json", "workload.yaml"}, Mutate: func(d map[string]formats.Document) {
			d["cluster.yaml"].(*formats.Cluster).GPUs[1].Type = "T4"
			w := d["workload.yaml"].(*formats.Workload)
			ppipesec.SetModels(w, ppipesec.ModelsOf(w)[:1]) // no more yolov5s model
			delete(w.Sections, "pipelines")                 // nor module
			d["trace-counts.json"] = nil                    // nil documents are ignored
		}, Want: []string{`profile.json: models[0].latency: "T4": no latency for GPU type T4 of cluster.yaml (model resnet50 is used)`}},
		{Name: "model not profiled", Files: []string{"profile.json", "plan.json"}, Mutate: func(d map[string]formats.Document) {
			ppipesec.PlanOf(d["plan.json"].(*formats.Plan)).Models[1].Model = "yolov8n"
		}, Want: []string{`plan.json: ppipe.models[1].model: "yolov8n": model not found in any profile (profile.json)`}},
		{Name: "partition blocks and latency", Files: []string{"profile.json", "plan.json"}, Mutate: func(d map[string]formats.Document) {
			pp := ppipesec.PlanOf(d["plan.json"].(*formats.Plan))
			pp.Models[0].Pipelines[0].Partitions[1].EndBlock = 5
			pp.Models[1].Pipelines[0].Partitions[0].VGPU = 3
		}, Want: []string{
			`plan.json: ppipe.models[0].pipelines[0].partitions[1].end_block: 5: must equal the number of blocks of resnet50 (4)`,
			`plan.json: ppipe.models[1].pipelines[0].partitions[0]: (L4, vgpu 3, batch 1): no latency entry for model yolov5s in any profile (profile.json)`}},
	})
	bad := map[string]formats.Document{"w.yaml": ppipesec.SetModels(&formats.Workload{}, []ppipesec.ModelWorkload{{Name: "m"}}), "x.json": ppipesec.SetPlan(&formats.Plan{}, &ppipesec.PPipePlan{Models: []ppipesec.PPipeModelPlan{{Model: "m", Pipelines: []ppipesec.PPipePipeline{{}}}}})}
	_ = formats.CheckSet(bad, secs)
}

// TestStageRounding: under ppipe.extra.rounding "stage" the pools at one
// (model, stage index, GPU type) share GPUs — slices of any level summed as fractions and
// rounded up once — and Validate must count them that way: it refused plans the solver made
// under --rounding stage ("pipelines use 76 GPUs of this type, cluster has 75").
func TestStageRounding(t *testing.T) {
	// Three pipelines of yolov5s whose head pools (a half and two quarters of an L4) share one
	// L4 under stage rounding and take three under pipeline rounding.
	twoPools := func(p *formats.Plan) {
		m := &ppipesec.PlanOf(p).Models[1]
		m.Pipelines[0].Partitions[0].VGPU, m.Pipelines[0].Partitions[0].Count = 2, 1
		m.Pipelines[1].Partitions[0].GPU, m.Pipelines[1].Partitions[0].VGPU, m.Pipelines[1].Partitions[0].Count = "L4", 4, 1
		m.Pipelines = append(m.Pipelines, m.Pipelines[1])
		m.Pipelines[2].Partitions = []ppipesec.Partition{m.Pipelines[1].Partitions[0]}
		m.Pipelines[2].Partitions[0].VGPU = 4
		p.Cluster.GPUs[0].Count = 2 // resnet50 takes one L4 (2 halves); yolov5s gets one
	}
	cases := []struct {
		rounding string
		used     int
		want     []string
	}{
		{"stage", 2, nil},
		{"", 4, []string{`plan.json: ppipe.models: "L4": pipelines use 4 GPUs of this type (pipeline rounding), cluster has 2; the pools on it: models[0].pipelines[0].partitions[0] (count 2, vgpu 2), models[1].pipelines[0].partitions[0] (count 1, vgpu 2), models[1].pipelines[1].partitions[0] (count 1, vgpu 4), models[1].pipelines[2].partitions[0] (count 1, vgpu 4)`}},
		{"pipeline", 4, []string{`plan.json: ppipe.models: "L4": pipelines use 4 GPUs of this type (pipeline rounding), cluster has 2; the pools on it: models[0].pipelines[0].partitions[0] (count 2, vgpu 2), models[1].pipelines[0].partitions[0] (count 1, vgpu 2), models[1].pipelines[1].partitions[0] (count 1, vgpu 4), models[1].pipelines[2].partitions[0] (count 1, vgpu 4)`}},
		{"per-gpu", 4, []string{`plan.json: ppipe.extra.rounding: "per-gpu": must be one of pipeline, stage`, `plan.json: ppipe.models: "L4": pipelines use 4 GPUs of this type (per-gpu rounding), cluster has 2; the pools on it: models[0].pipelines[0].partitions[0] (count 2, vgpu 2), models[1].pipelines[0].partitions[0] (count 1, vgpu 2), models[1].pipelines[1].partitions[0] (count 1, vgpu 4), models[1].pipelines[2].partitions[0] (count 1, vgpu 4)`}},
	}
	for _, c := range cases {
		t.Run(c.rounding, func(t *testing.T) {
			p := sectiontest.Load(t, "plan.json", secs).(*formats.Plan)
			twoPools(p)
			if c.rounding != "" {
				ppipesec.PlanOf(p).Extra = map[string]string{"rounding": c.rounding}
			}
			if _, used := ppipesec.PlanOf(p).PhysicalGPUs(); used["L4"] != c.used {
				t.Errorf("PhysicalGPUs: L4 %d, want %d", used["L4"], c.used)
			}
			var got []string
			for _, e := range formats.Validate(p, secs).WithFile("plan.json") {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("got:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(c.want, "\n\t"))
			}
		})
	}
}
