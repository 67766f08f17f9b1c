// Package ppipe exports PPipe plans (PPipe, NP and DART-r alike) to Triton, KServe and Ray
// Serve. Each pool — one partition of one pipeline, Count slices of 1/VGPU of one
// GPU type — becomes one exported model; each pipeline becomes a chain (a Triton ensemble when
// the ONNX file is given, a KServe Sequence graph, a Ray application).
//
// Mapping (PPipe §5.3–§5.4, the plan's fields):
//   - max_batch_size / preferred_batch_size / batcher / user_config.max_batch_size: the
//     pipeline's batch (one batch for the whole pipeline);
//   - instance_group count per GPU and gpus / maxReplicas / num_replicas: the pool's slices,
//     at most VGPU per GPU; KServe's minReplicas the slices the target rate needs and its
//     rps scaleTarget one slice's share of the pool's throughput (the plan's headroom);
//   - autoscaling (KEDA ScaledObject, HPA, KServe autoScaling, Ray autoscaling_config): a
//     pool scales on the rate the dispatcher sends its own pipeline (serve's
//     plan_pipeline_requests_total{model, pipeline}: §5.4 splits a model's traffic across
//     its pipelines), against its pipeline's share of the model's capacity per replica
//     (export.Capacity, placement keys from export.PipelineKey);
//   - under stage rounding (ppipe.extra.rounding: stage) the Triton instances of the pools at
//     one (model, stage index, GPU type) share the GPUs the plan counts for them together;
//   - num_gpus 1/VGPU (vGPU slices), nvidia.com/gpu.product = the pool's GPU type;
//   - max_queue_delay: an equal per-stage share of the budget's slack, T' − pipeline latency
//     (0 for batch 1: nothing to wait for); the queue timeout is T' itself: a request still
//     queued after the whole planning budget cannot meet its SLO [ours].
package ppipe

import (
	"fmt"
	"math"

	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/export/targets"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// Exporters returns PPipe's exporters for every target.
func Exporters() []export.Exporter { return export.Exporters(targets.Registry(), Build) }

// Key names pipeline pi's stage d of model in placements.
func Key(model string, pi, d int) string { return export.PipelineKey(model, pi, d) }

// Placements are the plan's pools as the exported files must record them.
func Placements(p *formats.Plan) []export.Placement {
	var out []export.Placement
	for _, m := range ppipesec.PlanOf(p).Models {
		for pi, pl := range m.Pipelines {
			for d, pt := range pl.Partitions {
				out = append(out, export.Placement{Key: Key(m.Model, pi, d), GPU: pt.GPU, VGPU: max(pt.VGPU, 1),
					Count: pt.Count, Batch: pl.Batch, FirstBlock: pt.FirstBlock, EndBlock: pt.EndBlock})
			}
		}
	}
	export.SortPlacements(out)
	return out
}

// scaling is a pool's autoscaling range from the plan's headroom: the plan allocates Count
// slices for throughput_rps, of which the target rate (target_rps, the rate the plan
// guarantees) needs the share target/throughput; one slice serves the pool's throughput /
// Count (PPipe §5.3: a pool's throughput is its slices' sum).
func scaling(m ppipesec.PPipeModelPlan, pt ppipesec.Partition) export.Scaling {
	if pt.Count < 1 {
		return export.Scaling{}
	}
	sc := export.Scaling{PerReplicaRPS: pt.ThroughputRPS / float64(pt.Count)}
	if m.TargetRPS > 0 && m.ThroughputRPS > 0 {
		sc.Needed = int(math.Ceil(float64(pt.Count) * math.Min(1, m.TargetRPS/m.ThroughputRPS)))
	}
	return sc
}

// Build lays a PPipe plan out as groups, one per pipeline.
func Build(p *formats.Plan, o export.Options) ([]export.Group, error) {
	if ppipesec.PlanOf(p) == nil {
		return nil, fmt.Errorf("the plan has no ppipe section")
	}
	var cut *export.Cutter
	if o.Model != nil {
		if len(ppipesec.PlanOf(p).Models) != 1 {
			return nil, fmt.Errorf("--model: the plan serves %d models: a model file applies to a plan of one model", len(ppipesec.PlanOf(p).Models))
		}
		var err error
		if cut, err = export.NewCutter(o.Model, p, ppipesec.PlanOf(p).Models[0].Model); err != nil {
			return nil, err
		}
	}
	var gs []export.Group
	for mi, m := range ppipesec.PlanOf(p).Models {
		for pi, pl := range m.Pipelines {
			if len(pl.Partitions) == 0 {
				return nil, fmt.Errorf("ppipe.models[%d].pipelines[%d]: no partitions", mi, pi)
			}
			g := export.Group{Name: export.DNSLabel(fmt.Sprintf("%s-%s-p%d", o.Name, m.Model, pi)), Chain: true}
			slack := math.Max(0, m.BudgetUs-pl.LatencyUs)
			delay := int64(0)
			if pl.Batch > 1 {
				delay = int64(math.Floor(slack / float64(len(pl.Partitions))))
			}
			for d, pt := range pl.Partitions {
				u := export.Unit{Name: export.DNSLabel(fmt.Sprintf("%s-s%d", g.Name, d)),
					Placement: export.Placement{Key: Key(m.Model, pi, d), GPU: pt.GPU, VGPU: max(pt.VGPU, 1), Count: pt.Count,
						Batch: pl.Batch, FirstBlock: pt.FirstBlock, EndBlock: pt.EndBlock},
					QueueDelayUs: delay, TimeoutUs: int64(math.Ceil(m.BudgetUs)), Scaling: scaling(m, pt)}
				if ppipesec.PlanOf(p).Rounding() == ppipesec.RoundingStage {
					// The plan counts one rounding per (model, stage index, GPU type):
					// those pools share GPUs (ppipesec.PPipePlan.PhysicalGPUs).
					u.Share = fmt.Sprintf("%s/s%d", m.Model, d)
				}
				if cut != nil {
					var err error
					if u.ONNX, u.Inputs, u.Outputs, err = cut.Cut(pt.FirstBlock, pt.EndBlock); err != nil {
						return nil, fmt.Errorf("ppipe.models[%d].pipelines[%d].partitions[%d]: %w", mi, pi, d, err)
					}
				}
				if d+1 < len(pl.Partitions) {
					u.Next = []string{export.DNSLabel(fmt.Sprintf("%s-s%d", g.Name, d+1))}
				}
				g.Units = append(g.Units, u)
			}
			gs = append(gs, g)
		}
	}
	return gs, nil
}
