package ppipesec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/plan-dev/plan/formats"
)

// validatePlan checks PPipe's plan section: its strategy and rounding, each model's SLO,
// budget and rates, and each pipeline's contiguous partitions of the model's blocks on the
// plan's GPU types and vGPU levels (PPipe §4), within the cluster's GPU counts.
func validatePlan(c *formats.Checker, pl0 *formats.Plan, pp *PPipePlan, p string) {
	cluster, where := formats.PlanCluster(pl0)
	c.OneOf(formats.Field(p, "strategy"), pp.Strategy, PPipeStrategies)
	if !(pp.SLOMargin >= 0 && pp.SLOMargin < 1) {
		c.Add(formats.Field(p, "slo_margin"), pp.SLOMargin, "must be in [0, 1)")
	}
	c.AtLeast(formats.Field(p, "max_partitions"), int64(pp.MaxPartitions), 1)
	mp := formats.Field(p, "models")
	if len(pp.Models) == 0 {
		c.Add(mp, nil, "must list at least one model")
	}
	if r, ok := pp.Extra["rounding"]; ok {
		c.OneOf(formats.KeyPath(formats.Field(p, "extra"), "rounding"), r, Roundings)
	}
	seen := &formats.Names{}
	for i := range pp.Models {
		m := &pp.Models[i]
		ip := formats.Index(mp, i)
		c.Check(seen, formats.Field(ip, "model"), m.Model)
		c.PositiveDuration(formats.Field(ip, "slo"), m.SLO)
		c.Positive(formats.Field(ip, "weight"), m.Weight)
		c.PositiveMicroseconds(formats.Field(ip, "budget_us"), m.BudgetUs)
		if sloUs := m.SLO.Microseconds(); m.SLO > 0 && m.BudgetUs > sloUs {
			c.Add(formats.Field(ip, "budget_us"), m.BudgetUs, "must be <= slo (%g us)", sloUs)
		}
		c.Rate(formats.Field(ip, "throughput_rps"), m.ThroughputRPS)
		c.Rate(formats.Field(ip, "target_rps"), m.TargetRPS)
		// A model the plan cannot serve has no place in it (the solver fails instead).
		formats.Each(c, formats.Field(ip, "pipelines"), "pipeline", m.Pipelines, func(_ int, jp string, pl *PPipePipeline) {
			c.AtLeast(formats.Field(jp, "batch"), int64(pl.Batch), 1)
			c.Rate(formats.Field(jp, "throughput_rps"), pl.ThroughputRPS)
			c.Microseconds(formats.Field(jp, "latency_us"), pl.LatencyUs)
			c.Microseconds(formats.Field(jp, "batch_formation_us"), pl.BatchFormationUs)
			if formats.Finite(pl.BatchFormationUs) && formats.Finite(pl.LatencyUs) && pl.LatencyUs >= 0 && pl.BatchFormationUs > pl.LatencyUs {
				c.Add(formats.Field(jp, "batch_formation_us"), pl.BatchFormationUs, "must be <= latency_us (%g), which includes it", pl.LatencyUs)
			}
			pp2 := formats.Field(jp, "partitions")
			if len(pl.Partitions) == 0 {
				c.Add(pp2, nil, "must list at least one partition")
			}
			if pp.MaxPartitions >= 1 && len(pl.Partitions) > pp.MaxPartitions {
				c.Add(pp2, len(pl.Partitions), "more partitions than max_partitions = %d", pp.MaxPartitions)
			}
			for k := range pl.Partitions {
				pt := &pl.Partitions[k]
				kp := formats.Index(pp2, k)
				if k == 0 && pt.FirstBlock != 0 {
					c.Add(formats.Field(kp, "first_block"), pt.FirstBlock, "must be 0: partitions must start at block 0")
				}
				if k > 0 && pt.FirstBlock != pl.Partitions[k-1].EndBlock {
					c.Add(formats.Field(kp, "first_block"), pt.FirstBlock, "must equal partitions[%d].end_block (%d): partitions must be contiguous", k-1, pl.Partitions[k-1].EndBlock)
				}
				if pt.EndBlock <= pt.FirstBlock {
					c.Add(formats.Field(kp, "end_block"), pt.EndBlock, "must be > first_block (%d)", pt.FirstBlock)
				}
				pool := c.GPU(pl0, formats.Field(kp, "gpu"), pt.GPU)
				c.VGPULevel(formats.Field(kp, "vgpu"), pt.VGPU)
				if pool != nil && pt.VGPU >= 1 && pt.VGPU <= 4 && !slices.Contains(pool.Levels(), pt.VGPU) {
					c.Add(formats.Field(kp, "vgpu"), pt.VGPU, "level not allowed for GPU type %s in %s (vgpu: %v)", pt.GPU, where, pool.Levels())
				}
				c.AtLeast(formats.Field(kp, "count"), int64(pt.Count), 1)
				c.Microseconds(formats.Field(kp, "stage_latency_us"), pt.StageLatencyUs)
				c.Microseconds(formats.Field(kp, "transfer_us"), pt.TransferUs)
				c.Rate(formats.Field(kp, "throughput_rps"), pt.ThroughputRPS)
			}
		})
	}
	if cluster != nil {
		types, used := pp.PhysicalGPUs()
		for _, gpu := range types {
			if pool, ok := cluster.Pool(gpu); ok && used[gpu] > pool.Count {
				c.Add(mp, gpu, "pipelines use %d GPUs of this type (%s rounding), %s has %d; the pools on it: %s", used[gpu], pp.Rounding(), where, pool.Count, poolsOn(pp, gpu))
			}
		}
	}
	for i, u := range pp.GPUUse {
		up := formats.Index(formats.Field(p, "gpu_use"), i)
		c.GPU(pl0, formats.Field(up, "gpu"), u.GPU)
		if u.Class != "" && u.Class != "high" && u.Class != "low" {
			c.Add(formats.Field(up, "class"), u.Class, "must be high or low")
		}
		c.NonNegative(formats.Field(up, "used"), u.Used)
		c.AtLeast(formats.Field(up, "total"), int64(u.Total), 0)
		if formats.Finite(u.Used) && u.Total >= 0 && u.Used > float64(u.Total)+absTol {
			c.Add(formats.Field(up, "used"), u.Used, "must be <= total (%d)", u.Total)
		}
	}
}

// validateModel checks one model of the workload: a unique name, an SLO or an SLO scale
// (not both), a relative weight and a rate.
func validateModel(c *formats.Checker, m *ModelWorkload, p string, seen *formats.Names) {
	c.Check(seen, formats.Field(p, "name"), m.Name)
	if m.SLO < 0 {
		c.Add(formats.Field(p, "slo"), m.SLO, "must be >= 0 (0 = slo_scale x the fastest batch-1 latency)")
	}
	c.BoundedDuration(formats.Field(p, "slo"), m.SLO)
	if m.SLOScale != 0 && !(m.SLOScale >= 1 && formats.Finite(m.SLOScale)) {
		c.Add(formats.Field(p, "slo_scale"), m.SLOScale, "must be >= 1 (or omitted)")
	}
	if m.SLO > 0 && m.SLOScale != 0 {
		c.Add(formats.Field(p, "slo_scale"), m.SLOScale, "set slo or slo_scale, not both")
	}
	c.OptionalPositive(formats.Field(p, "weight"), m.Weight)
	if m.Weight > 0 && formats.Finite(m.Weight) && (m.Weight < formats.MinWeight || m.Weight > formats.MaxWeight) {
		// Weights scale the max-min objective's rows: far outside this range the MILP's
		// coefficients are meaningless (or rejected by the solver).
		c.Add(formats.Field(p, "weight"), m.Weight, "must be in [%g, %g] (weights are relative)", formats.MinWeight, formats.MaxWeight)
	}
	c.Rate(formats.Field(p, "rate_rps"), m.RateRPS)
}

// poolsOn names the pools (partitions) on GPU type gpu with their slices, for the error of a
// plan that asks for more GPUs than its cluster holds: the first eight, then how many more.
func poolsOn(pp *PPipePlan, gpu string) string {
	var names []string
	n := 0
	for i, m := range pp.Models {
		for j, pl := range m.Pipelines {
			for k, pt := range pl.Partitions {
				if pt.GPU != gpu {
					continue
				}
				if n++; n <= 8 {
					names = append(names, fmt.Sprintf("models[%d].pipelines[%d].partitions[%d] (count %d, vgpu %d)", i, j, k, pt.Count, pt.VGPU))
				}
			}
		}
	}
	if n > 8 {
		names = append(names, fmt.Sprintf("and %d more", n-8))
	}
	return strings.Join(names, ", ")
}
