package ppipesec_test

import (
	"math"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
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
func res(p *formats.Plan) *formats.PPipeModelPlan { return &p.PPipe.Models[0] }

// yolov5s: 2 single-partition pipelines
func yol(p *formats.Plan) *formats.PPipeModelPlan    { return &p.PPipe.Models[1] }
func part(p *formats.Plan, k int) *formats.Partition { return &res(p).Pipelines[0].Partitions[k] }

// One bad-input case per rule of the workload section (moved from formats' tests).
func TestValidateModels(t *testing.T) {
	sectiontest.Run(t, secs, cases([]badCase{
		{"model name empty", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { w.Models[1].Name = "" }), []string{`workload.yaml: models[1].name: "": must not be empty`}},
		{"model name duplicate", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { w.Models[1].Name = "resnet50" }), []string{`workload.yaml: models[1].name: "resnet50": duplicate name (first at models[0].name)`}},
		{"model slo negative", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { w.Models[0].SLO = ms(-5) }), []string{`workload.yaml: models[0].slo: -5ms: must be >= 0 (0 = slo_scale x the fastest batch-1 latency)`}},
		{"model slo_scale", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { w.Models[1].SLOScale = 0.5 }), []string{`workload.yaml: models[1].slo_scale: 0.5: must be >= 1 (or omitted)`}},
		{"model slo and slo_scale", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { w.Models[0].SLOScale = 5 }), []string{`workload.yaml: models[0].slo_scale: 5: set slo or slo_scale, not both`}},
		{"model weight", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { w.Models[0].Weight = -1 }), []string{`workload.yaml: models[0].weight: -1: must be > 0 (or omitted)`}},
		{"model weight huge", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { w.Models[0].Weight = 1e308 }), []string{`workload.yaml: models[0].weight: 1e+308: must be in [1e-06, 1e+06] (weights are relative)`}},
		{"model weight tiny", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { w.Models[0].Weight = 1e-300 }), []string{`workload.yaml: models[0].weight: 1e-300: must be in [1e-06, 1e+06] (weights are relative)`}},
		{"model rate NaN", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { w.Models[0].RateRPS = nan }), []string{`workload.yaml: models[0].rate_rps: NaN: must be >= 0`}},
	}))
}

// One bad-input case per rule of the plan section (moved from formats' tests).
func TestValidatePlan(t *testing.T) {
	sectiontest.Run(t, secs, cases([]badCase{
		{"strategy", "plan.json", sectiontest.Plan(func(p *formats.Plan) { p.PPipe.Strategy = "greedy" }), []string{`plan.json: ppipe.strategy: "greedy": must be one of ppipe, np, dart-r`}},
		{"slo_margin", "plan.json", sectiontest.Plan(func(p *formats.Plan) { p.PPipe.SLOMargin = 1 }), []string{`plan.json: ppipe.slo_margin: 1: must be in [0, 1)`}},
		{"max_partitions", "plan.json", sectiontest.Plan(func(p *formats.Plan) { p.PPipe.MaxPartitions = 0 }), []string{`plan.json: ppipe.max_partitions: 0: must be >= 1`}},
		{"too many partitions", "plan.json", sectiontest.Plan(func(p *formats.Plan) { p.PPipe.MaxPartitions = 1 }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions: 2: more partitions than max_partitions = 1`}},
		{"no models", "plan.json", sectiontest.Plan(func(p *formats.Plan) { p.PPipe.Models = nil }), []string{`plan.json: ppipe.models: must list at least one model`}},
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
		{"gpus over capacity", "plan.json", sectiontest.Plan(func(p *formats.Plan) { yol(p).Pipelines[0].Partitions[0].Count = 4 }), []string{`plan.json: ppipe.models: "L4": pipelines use 5 GPUs of this type (pipeline rounding), cluster has 4`}},
		{"gpu_use gpu", "plan.json", sectiontest.Plan(func(p *formats.Plan) { p.PPipe.GPUUse[0].GPU = "T4" }), []string{`plan.json: ppipe.gpu_use[0].gpu: "T4": unknown GPU type: not in cluster.gpus (L4, P4)`}},
		{"gpu_use class", "plan.json", sectiontest.Plan(func(p *formats.Plan) { p.PPipe.GPUUse[0].Class = "top" }), []string{`plan.json: ppipe.gpu_use[0].class: "top": must be high or low`}},
		{"gpu_use used", "plan.json", sectiontest.Plan(func(p *formats.Plan) { p.PPipe.GPUUse[0].Used = -1 }), []string{`plan.json: ppipe.gpu_use[0].used: -1: must be >= 0`}},
		{"gpu_use total", "plan.json", sectiontest.Plan(func(p *formats.Plan) { p.PPipe.GPUUse[0].Total = -1 }), []string{`plan.json: ppipe.gpu_use[0].total: -1: must be >= 0`}},
		{"gpu_use above total", "plan.json", sectiontest.Plan(func(p *formats.Plan) { p.PPipe.GPUUse[0].Used = 4.5 }), []string{`plan.json: ppipe.gpu_use[0].used: 4.5: must be <= total (4)`}},
	}))
}
