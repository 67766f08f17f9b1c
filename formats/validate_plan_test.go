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
	gear := func(p *Plan, i int) *Gear { return &p.Cascade.Gears[i] }
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
		{"bound Inf", f, pl(func(p *Plan) { p.Provenance.Bound = inf }), []string{`plan.json: provenance.bound: +Inf: must be a finite number`}},
		{"gap", f, pl(func(p *Plan) { p.Provenance.Gap = -0.1 }), []string{`plan.json: provenance.gap: -0.1: must be >= 0`}},
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
		// ppipe
		{"strategy", f, pl(func(p *Plan) { p.PPipe.Strategy = "greedy" }), []string{`plan.json: ppipe.strategy: "greedy": must be one of ppipe, np, dart-r`}},
		{"slo_margin", f, pl(func(p *Plan) { p.PPipe.SLOMargin = 1 }), []string{`plan.json: ppipe.slo_margin: 1: must be in [0, 1)`}},
		{"max_partitions", f, pl(func(p *Plan) { p.PPipe.MaxPartitions = 0 }), []string{`plan.json: ppipe.max_partitions: 0: must be >= 1`}},
		{"too many partitions", f, pl(func(p *Plan) { p.PPipe.MaxPartitions = 1 }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions: 2: more partitions than max_partitions = 1`}},
		{"no models", f, pl(func(p *Plan) { p.PPipe.Models = nil }), []string{`plan.json: ppipe.models: must list at least one model`}},
		{"model duplicate", f, pl(func(p *Plan) { yol(p).Model = "resnet50" }), []string{`plan.json: ppipe.models[1].model: "resnet50": duplicate name (first at ppipe.models[0].model)`}},
		{"model slo", f, pl(func(p *Plan) { yol(p).SLO = 0 }), []string{`plan.json: ppipe.models[1].slo: 0s: must be > 0`}},
		{"model weight", f, pl(func(p *Plan) { yol(p).Weight = 0 }), []string{`plan.json: ppipe.models[1].weight: 0: must be > 0`}},
		{"budget", f, pl(func(p *Plan) { yol(p).BudgetUs = 0 }), []string{`plan.json: ppipe.models[1].budget_us: 0: must be > 0`}},
		{"budget above slo", f, pl(func(p *Plan) { yol(p).BudgetUs = 9000 }), []string{`plan.json: ppipe.models[1].budget_us: 9000: must be <= slo (8000 us)`}},
		{"model throughput", f, pl(func(p *Plan) { yol(p).ThroughputRPS = -1 }), []string{`plan.json: ppipe.models[1].throughput_rps: -1: must be >= 0`}},
		{"pipeline batch", f, pl(func(p *Plan) { yol(p).Pipelines[1].Batch = 0 }), []string{`plan.json: ppipe.models[1].pipelines[1].batch: 0: must be >= 1`}},
		{"pipeline throughput", f, pl(func(p *Plan) { yol(p).Pipelines[1].ThroughputRPS = nan }), []string{`plan.json: ppipe.models[1].pipelines[1].throughput_rps: NaN: must be >= 0`}},
		{"pipeline latency", f, pl(func(p *Plan) { yol(p).Pipelines[1].LatencyUs = -1 }), []string{`plan.json: ppipe.models[1].pipelines[1].latency_us: -1: must be >= 0`}},
		{"batch formation", f, pl(func(p *Plan) { yol(p).Pipelines[1].BatchFormationUs = -1 }), []string{`plan.json: ppipe.models[1].pipelines[1].batch_formation_us: -1: must be >= 0`}},
		{"batch formation above latency", f, pl(func(p *Plan) { yol(p).Pipelines[1].BatchFormationUs = 6000 }), []string{`plan.json: ppipe.models[1].pipelines[1].batch_formation_us: 6000: must be <= latency_us (5670), which includes it`}},
		{"no pipelines", f, pl(func(p *Plan) { yol(p).Pipelines = nil }), []string{`plan.json: ppipe.models[1].pipelines: must list at least one pipeline`}},
		{"no partitions", f, pl(func(p *Plan) { yol(p).Pipelines[1].Partitions = nil }), []string{`plan.json: ppipe.models[1].pipelines[1].partitions: must list at least one partition`}},
		{"partitions start", f, pl(func(p *Plan) { part(p, 0).FirstBlock = 1 }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[0].first_block: 1: must be 0: partitions must start at block 0`}},
		{"partitions contiguous", f, pl(func(p *Plan) { part(p, 1).FirstBlock = 2 }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[1].first_block: 2: must equal partitions[0].end_block (3): partitions must be contiguous`}},
		{"partition empty", f, pl(func(p *Plan) { part(p, 1).EndBlock = 3 }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[1].end_block: 3: must be > first_block (3)`}},
		{"partition gpu empty", f, pl(func(p *Plan) { part(p, 1).GPU = "" }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[1].gpu: "": must not be empty`}},
		{"partition gpu unknown", f, pl(func(p *Plan) { part(p, 1).GPU = "A100" }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[1].gpu: "A100": unknown GPU type: not in cluster.gpus (L4, P4)`}},
		{"partition vgpu", f, pl(func(p *Plan) { part(p, 0).VGPU = 5 }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[0].vgpu: 5: must be in 1..4`}},
		{"partition vgpu not allowed", f, pl(func(p *Plan) { part(p, 1).VGPU = 2 }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[1].vgpu: 2: level not allowed for GPU type P4 in cluster (vgpu: [1])`}},
		{"partition count", f, pl(func(p *Plan) { part(p, 1).Count = 0 }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[1].count: 0: must be >= 1`}},
		{"partition stage latency", f, pl(func(p *Plan) { part(p, 1).StageLatencyUs = -1 }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[1].stage_latency_us: -1: must be >= 0`}},
		{"partition transfer", f, pl(func(p *Plan) { part(p, 0).TransferUs = inf }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[0].transfer_us: +Inf: must be >= 0`}},
		{"partition throughput", f, pl(func(p *Plan) { part(p, 0).ThroughputRPS = -1 }), []string{`plan.json: ppipe.models[0].pipelines[0].partitions[0].throughput_rps: -1: must be >= 0`}},
		{"gpus over capacity", f, pl(func(p *Plan) { yol(p).Pipelines[0].Partitions[0].Count = 4 }), []string{`plan.json: ppipe.models: "L4": pipelines use 5 GPUs of this type (pipeline rounding), cluster has 4`}},
		{"gpu_use gpu", f, pl(func(p *Plan) { p.PPipe.GPUUse[0].GPU = "T4" }), []string{`plan.json: ppipe.gpu_use[0].gpu: "T4": unknown GPU type: not in cluster.gpus (L4, P4)`}},
		{"gpu_use class", f, pl(func(p *Plan) { p.PPipe.GPUUse[0].Class = "top" }), []string{`plan.json: ppipe.gpu_use[0].class: "top": must be high or low`}},
		{"gpu_use used", f, pl(func(p *Plan) { p.PPipe.GPUUse[0].Used = -1 }), []string{`plan.json: ppipe.gpu_use[0].used: -1: must be >= 0`}},
		{"gpu_use total", f, pl(func(p *Plan) { p.PPipe.GPUUse[0].Total = -1 }), []string{`plan.json: ppipe.gpu_use[0].total: -1: must be >= 0`}},
		{"gpu_use above total", f, pl(func(p *Plan) { p.PPipe.GPUUse[0].Used = 4.5 }), []string{`plan.json: ppipe.gpu_use[0].used: 4.5: must be <= total (4)`}},
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
		// pard
		{"pard policy", s, pl(func(p *Plan) { p.PARD.Policy = "" }), []string{`plan-sections.json: pard.policy: "": must not be empty`}},
		{"pard params", s, pl(func(p *Plan) { p.PARD.Params["drop_margin"] = nan }), []string{`plan-sections.json: pard.params.drop_margin: NaN: must be a finite number`}},
		{"pard no apps", s, pl(func(p *Plan) { p.PARD.Apps = nil }), []string{`plan-sections.json: pard.apps: must list at least one app`}},
		{"pard app duplicate", s, pl(func(p *Plan) { p.PARD.Apps = append(p.PARD.Apps, p.PARD.Apps[0]) }), []string{`plan-sections.json: pard.apps[1].name: "traffic": duplicate name (first at pard.apps[0].name)`}},
		{"pard slo", s, pl(func(p *Plan) { p.PARD.Apps[0].SLO = 0 }), []string{`plan-sections.json: pard.apps[0].slo: 0s: must be > 0`}},
		{"pard rate", s, pl(func(p *Plan) { p.PARD.Apps[0].RateRPS = -1 }), []string{`plan-sections.json: pard.apps[0].rate_rps: -1: must be >= 0`}},
		{"pard no modules", s, pl(func(p *Plan) { p.PARD.Apps[0].Modules = nil }), []string{`plan-sections.json: pard.apps[0].modules: must list at least one module`}},
		{"pard module duplicate", s, pl(func(p *Plan) { p.PARD.Apps[0].Modules[3].Name = "person" }), []string{`plan-sections.json: pard.apps[0].modules[3].name: "person": duplicate name (first at pard.apps[0].modules[2].name)`}},
		{"pard module model", s, pl(func(p *Plan) { p.PARD.Apps[0].Modules[3].Model = "" }), []string{`plan-sections.json: pard.apps[0].modules[3].model: "": must not be empty`}},
		{"pard module gpu", s, pl(func(p *Plan) { p.PARD.Apps[0].Modules[3].GPU = "V100" }), []string{`plan-sections.json: pard.apps[0].modules[3].gpu: "V100": unknown GPU type: not in provenance.embedded.cluster.gpus (L4, P4)`}},
		{"pard module batch", s, pl(func(p *Plan) { p.PARD.Apps[0].Modules[3].Batch = 0 }), []string{`plan-sections.json: pard.apps[0].modules[3].batch: 0: must be >= 1`}},
		{"pard module workers", s, pl(func(p *Plan) { p.PARD.Apps[0].Modules[3].Workers = 0 }), []string{`plan-sections.json: pard.apps[0].modules[3].workers: 0: must be >= 1`}},
		{"pard module latency", s, pl(func(p *Plan) { p.PARD.Apps[0].Modules[3].LatencyUs = -1 }), []string{`plan-sections.json: pard.apps[0].modules[3].latency_us: -1: must be >= 0`}},
		// cascade
		{"cascade task", s, pl(func(p *Plan) { p.Cascade.Task = "" }), []string{`plan-sections.json: cascade.task: "": must not be empty`}},
		{"cascade no placement", s, pl(func(p *Plan) { p.Cascade.Placement, p.Cascade.Gears = nil, p.Cascade.Gears[:0] }), []string{
			`plan-sections.json: cascade.placement: must place at least one replica`,
			`plan-sections.json: cascade.gears: must list at least one gear`}},
		{"replica model", s, pl(func(p *Plan) { p.Cascade.Placement = append(p.Cascade.Placement, Replica{GPUs: []int{3}}) }), []string{`plan-sections.json: cascade.placement[3].model: "": must not be empty`}},
		{"replica gpus", s, pl(func(p *Plan) { p.Cascade.Placement[2].GPUs = nil }), []string{`plan-sections.json: cascade.placement[2].gpus: must list at least one GPU index`}},
		{"replica gpu negative", s, pl(func(p *Plan) { p.Cascade.Placement[2].GPUs = []int{-1} }), []string{`plan-sections.json: cascade.placement[2].gpus[0]: -1: must be >= 0`}},
		{"replica gpu out of range", s, pl(func(p *Plan) { p.Cascade.Placement[2].GPUs = []int{16} }), []string{`plan-sections.json: cascade.placement[2].gpus[0]: 16: must be < 16, the number of GPUs in provenance.embedded.cluster`}},
		{"replica gpu duplicate", s, pl(func(p *Plan) { p.Cascade.Placement[2].GPUs = []int{2, 2} }), []string{`plan-sections.json: cascade.placement[2].gpus[1]: 2: duplicate GPU index`}},
		{"gears start", s, pl(func(p *Plan) { gear(p, 0).QLo = 1 }), []string{`plan-sections.json: cascade.gears[0].q_lo: 1: must be 0: gears must start at QPS 0`}},
		{"gears contiguous", s, pl(func(p *Plan) { gear(p, 1).QLo = 2.5 }), []string{`plan-sections.json: cascade.gears[1].q_lo: 2.5: must equal gears[0].q_hi (2): gears must be contiguous`}},
		{"gear q_hi", s, pl(func(p *Plan) { gear(p, 2).QHi = 4 }), []string{`plan-sections.json: cascade.gears[2].q_hi: 4: must be > q_lo (4)`}},
		{"gear no models", s, pl(func(p *Plan) { g := gear(p, 0); g.Models, g.Share, g.Trigger = nil, nil, nil }), []string{`plan-sections.json: cascade.gears[0].models: must list at least one model`}},
		{"gear model empty", s, pl(func(p *Plan) { g := gear(p, 0); g.Models, g.Thr = append(g.Models, ""), []float64{0.2} }), []string{`plan-sections.json: cascade.gears[0].models[1]: "": must not be empty`}},
		{"gear model duplicate", s, pl(func(p *Plan) {
			g := gear(p, 1)
			g.Models, g.Thr = append(g.Models, "llama-3.2-1b"), []float64{0.3, 0.2}
		}), []string{`plan-sections.json: cascade.gears[1].models[2]: "llama-3.2-1b": duplicate model`}},
		{"gear model unplaced", s, pl(func(p *Plan) { p.Cascade.Placement = p.Cascade.Placement[1:] }), []string{
			`plan-sections.json: cascade.gears[1].models[0]: "llama-3.2-1b": model has no replica in cascade.placement`,
			`plan-sections.json: cascade.gears[1].share["llama-3.2-1b"]: 1: length must be the number of replicas of llama-3.2-1b in cascade.placement (0)`,
			`plan-sections.json: cascade.gears[2].models[0]: "llama-3.2-1b": model has no replica in cascade.placement`,
			`plan-sections.json: cascade.gears[2].share["llama-3.2-1b"]: 1: length must be the number of replicas of llama-3.2-1b in cascade.placement (0)`}},
		{"gear thr length", s, pl(func(p *Plan) { gear(p, 1).Thr = nil }), []string{`plan-sections.json: cascade.gears[1].thr: 0: length must be len(models)-1 = 1`}},
		{"gear thr negative", s, pl(func(p *Plan) { gear(p, 1).Thr[0] = -0.1 }), []string{`plan-sections.json: cascade.gears[1].thr[0]: -0.1: must be >= 0`}},
		{"share unknown model", s, pl(func(p *Plan) { gear(p, 0).Share["llama-3.2-1b"] = []float64{1} }), []string{`plan-sections.json: cascade.gears[0].share["llama-3.2-1b"]: "llama-3.2-1b": not a model of this gear`}},
		{"share length", s, pl(func(p *Plan) { gear(p, 0).Share["llama-3.1-8b"] = []float64{1} }), []string{`plan-sections.json: cascade.gears[0].share["llama-3.1-8b"]: 1: length must be the number of replicas of llama-3.1-8b in cascade.placement (2)`}},
		{"share value", s, pl(func(p *Plan) { gear(p, 0).Share["llama-3.1-8b"] = []float64{1.5, -0.5} }), []string{
			`plan-sections.json: cascade.gears[0].share["llama-3.1-8b"][0]: 1.5: must be in [0, 1]`,
			`plan-sections.json: cascade.gears[0].share["llama-3.1-8b"][1]: -0.5: must be in [0, 1]`}},
		{"share sum", s, pl(func(p *Plan) { gear(p, 0).Share["llama-3.1-8b"] = []float64{0.5, 0.4} }), []string{`plan-sections.json: cascade.gears[0].share["llama-3.1-8b"]: must sum to 1 (sums to 0.9)`}},
		{"trigger unknown model", s, pl(func(p *Plan) { gear(p, 0).Trigger["llama-3.2-1b"] = 1 }), []string{`plan-sections.json: cascade.gears[0].trigger["llama-3.2-1b"]: "llama-3.2-1b": not a model of this gear`}},
		{"trigger value", s, pl(func(p *Plan) { gear(p, 0).Trigger["llama-3.1-8b"] = 0 }), []string{`plan-sections.json: cascade.gears[0].trigger["llama-3.1-8b"]: 0: must be >= 1`}},
		{"gear expected accuracy", s, pl(func(p *Plan) { gear(p, 0).ExpAcc = 1.2 }), []string{`plan-sections.json: cascade.gears[0].expected_accuracy: 1.2: must be in [0, 1]`}},
		{"gear expected work", s, pl(func(p *Plan) { gear(p, 0).ExpWork = -1 }), []string{`plan-sections.json: cascade.gears[0].expected_work_s: -1: must be >= 0`}},
		{"gear expected platency", s, pl(func(p *Plan) { gear(p, 0).ExpPLat = -1 }), []string{`plan-sections.json: cascade.gears[0].expected_platency_ms: -1: must be >= 0`}},
		{"cascade poll", s, pl(func(p *Plan) { p.Cascade.PollMs = -1 }), []string{`plan-sections.json: cascade.poll_ms: -1: must be >= 0`}},
		{"cascade alpha", s, pl(func(p *Plan) { p.Cascade.Alpha = nan }), []string{`plan-sections.json: cascade.alpha: NaN: must be >= 0`}},
		{"cascade max_batch", s, pl(func(p *Plan) { p.Cascade.MaxBatch = -1 }), []string{`plan-sections.json: cascade.max_batch: -1: must be >= 1 (or omitted)`}},
		// qlm
		{"qlm no instances", s, pl(func(p *Plan) { p.QLM.Instances = nil }), []string{`plan-sections.json: qlm.instances: must list at least one instance`}},
		{"qlm group duplicate", s, pl(func(p *Plan) { p.QLM.Groups[2].ID = "summ-0" }), []string{
			`plan-sections.json: qlm.groups[2].id: "summ-0": duplicate name (first at qlm.groups[1].id)`,
			`plan-sections.json: qlm.instances[1].queue[0]: "summ-1": unknown group: not in qlm.groups`}},
		{"qlm group model", s, pl(func(p *Plan) { p.QLM.Groups[2].Model = "" }), []string{`plan-sections.json: qlm.groups[2].model: "": must not be empty`}},
		{"qlm group slo", s, pl(func(p *Plan) { p.QLM.Groups[2].SLO = 0 }), []string{`plan-sections.json: qlm.groups[2].slo: 0s: must be > 0`}},
		{"qlm group requests", s, pl(func(p *Plan) { p.QLM.Groups[2].Requests = 0 }), []string{`plan-sections.json: qlm.groups[2].requests: 0: must be >= 1`}},
		{"qlm instance name", s, pl(func(p *Plan) { p.QLM.Instances[1].Name = "vllm-0" }), []string{`plan-sections.json: qlm.instances[1].name: "vllm-0": duplicate name (first at qlm.instances[0].name)`}},
		{"qlm instance gpu", s, pl(func(p *Plan) { p.QLM.Instances[1].GPU = "H100" }), []string{`plan-sections.json: qlm.instances[1].gpu: "H100": unknown GPU type: not in provenance.embedded.cluster.gpus (L4, P4)`}},
		{"qlm instance gpu_count", s, pl(func(p *Plan) { p.QLM.Instances[1].GPUCount = 0 }), []string{`plan-sections.json: qlm.instances[1].gpu_count: 0: must be >= 1`}},
		{"qlm queue unknown", s, pl(func(p *Plan) { p.QLM.Instances[1].Queue[0] = "chat-9" }), []string{`plan-sections.json: qlm.instances[1].queue[0]: "chat-9": unknown group: not in qlm.groups`}},
		{"qlm queued twice", s, pl(func(p *Plan) { p.QLM.Instances[1].Queue = append(p.QLM.Instances[1].Queue, "chat-0") }), []string{`plan-sections.json: qlm.instances[1].queue[1]: "chat-0": group is already queued at qlm.instances[0].queue[0]`}},
		{"qlm replan", s, pl(func(p *Plan) { p.QLM.ReplanMs = -1 }), []string{`plan-sections.json: qlm.replan_ms: -1: must be >= 0`}},
	})
}

// A plan that records an infeasible solve may have no sections; one without a cluster cannot
// have its GPU types checked, and that is not an error.
func TestValidatePlanAllowed(t *testing.T) {
	p := loadGood(t, "plan.json").(*Plan)
	p.PPipe, p.Provenance.Status = nil, "infeasible"
	if errs := p.ValidateWith(inTree); len(errs) > 0 {
		t.Errorf("infeasible plan without sections: %v", errs)
	}
	q := loadGood(t, "plan.json").(*Plan)
	q.Cluster = nil
	q.PPipe.Models[0].Pipelines[0].Partitions[1].GPU = "A100"
	if errs := q.ValidateWith(inTree); len(errs) > 0 {
		t.Errorf("plan without a cluster: %v", errs)
	}
	if got := loadGood(t, "plan-sections.json").(*Plan).TargetCluster(); got == nil || got.Metadata.Name != "l4-p4" {
		t.Errorf("TargetCluster of plan-sections.json = %v, want the embedded cluster", got)
	}
	if got := loadGood(t, "plan.json").(*Plan).GPUTypes(); len(got) != 2 || got[0] != "L4" || got[1] != "P4" {
		t.Errorf("GPUTypes = %v, want [L4 P4]", got)
	}
	if got := (&Partition{VGPU: 4, Count: 5}).PhysicalGPUs(); got != 2 {
		t.Errorf("PhysicalGPUs(5 slices of 1/4) = %d, want 2", got)
	}
}

// TestStageRounding (issue 17 item 2): under ppipe.extra.rounding "stage" the pools at one
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
			for _, e := range p.ValidateWith(inTree).WithFile("plan.json") {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("got:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(c.want, "\n\t"))
			}
		})
	}
}
