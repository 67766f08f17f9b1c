package pard

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/pardsec"
	"github.com/plan-dev/plan/planner"
)

// Verify re-derives every constraint of a PARD plan from the inputs it embeds, without the
// solver: every module runs its workload module's model on a GPU type
// of the cluster at a profiled batch; the planned latency is the profile's; workers cover
// the rate (workers·b/d ≥ rate); every source-to-sink path keeps Σ 2·d ≤ f·SLO; and each
// GPU type's workers fit the cluster. It returns one line per violation.
func Verify(p *formats.Plan) []string {
	var out []string
	add := func(where, f string, a ...any) { out = append(out, where+": "+fmt.Sprintf(f, a...)) }
	pp := pardsec.PlanOf(p)
	if pp == nil {
		return []string{"plan: no pard section"}
	}
	emb := p.Provenance.Embedded
	if emb == nil || emb.Workload == nil || emb.Cluster == nil {
		return []string{"provenance.embedded: the plan embeds no workload and cluster to verify against"}
	}
	rec := Flags{SLOFraction: DefaultSLOFraction}
	frac := DefaultSLOFraction
	if err := planner.ReadOptions(p.Provenance.Options, &rec); err != nil {
		out = append(out, err.Error())
	} else if !(rec.SLOFraction > 0 && rec.SLOFraction <= 1) {
		add("provenance.options.slo_fraction", "%g: must be a number in (0, 1]", rec.SLOFraction)
	} else {
		frac = rec.SLOFraction
	}
	find := func(model string) *formats.ModelProfile {
		for i := range emb.Profiles {
			if m, ok := emb.Profiles[i].Model(model); ok {
				return m
			}
		}
		return nil
	}
	use := map[string]int{}
	pipes := map[string]*pardsec.Pipeline{}
	for i := range pardsec.PipelinesOf(emb.Workload) {
		pipes[pardsec.PipelinesOf(emb.Workload)[i].Name] = &pardsec.PipelinesOf(emb.Workload)[i]
	}
	for ai, a := range pp.Apps {
		where := fmt.Sprintf("app %s", a.Name)
		pl, ok := pipes[a.Name]
		if !ok {
			add(where, "no pipeline of that name in the embedded workload")
			continue
		}
		if len(a.Modules) != len(pl.Modules) {
			add(where, "%d modules, the workload's pipeline has %d", len(a.Modules), len(pl.Modules))
			continue
		}
		if !(a.RateRPS > 0) || math.IsInf(a.RateRPS, 0) {
			add(where, "rate_rps %g: must be a positive finite rate", a.RateRPS)
			continue
		}
		if a.SLO != pl.SLO {
			add(where, "slo %s differs from the workload's %s", time.Duration(a.SLO), time.Duration(pl.SLO))
		}
		lat := make([]float64, len(a.Modules))
		for k, m := range a.Modules {
			mw := fmt.Sprintf("%s module %s", where, m.Name)
			if m.Name != pl.Modules[k].Name || m.Model != pl.Modules[k].Model {
				add(mw, "is %s/%s, the workload's module %d is %s/%s", m.Name, m.Model, k, pl.Modules[k].Name, pl.Modules[k].Model)
				continue
			}
			if m.Batch < 1 || m.Workers < 1 {
				add(mw, "batch %d, workers %d: both must be ≥ 1", m.Batch, m.Workers)
				continue
			}
			if _, ok := emb.Cluster.Pool(m.GPU); !ok {
				add(mw, "gpu %s: not in the cluster", m.GPU)
				continue
			}
			use[m.GPU] += m.Workers
			lat[k] = m.LatencyUs
			if prof := find(m.Model); prof == nil {
				add(mw, "model %s: not in the embedded profiles", m.Model)
			} else if e, ok := prof.Lookup(m.GPU, 1, m.Batch); !ok {
				add(mw, "no profiled latency on %s at batch %d", m.GPU, m.Batch)
			} else {
				d := e.WholeUs()
				if e.TotalUs > 0 {
					d = e.TotalUs
				}
				if math.Abs(d-m.LatencyUs) > recordTol*math.Max(1, d) {
					add(mw, "latency_us %g: the profile says %g", m.LatencyUs, d)
				}
			}
			if capRPS := float64(m.Workers*m.Batch) / (m.LatencyUs / 1e6); capRPS < a.RateRPS*(1-relTol) {
				add(mw, "%d workers × batch %d / %.3f ms = %.1f req/s < rate %.1f req/s", m.Workers, m.Batch, m.LatencyUs/1000, capRPS, a.RateRPS)
			}
		}
		paths, err := sourceSinkPaths(pl, fmt.Sprintf("pipelines[%d]", ai))
		if err != nil {
			add(where, "%v", err)
			continue
		}
		budget := frac * float64(time.Duration(a.SLO)/time.Microsecond)
		for _, path := range paths {
			var sum float64
			names := make([]string, len(path))
			for i, k := range path {
				sum += 2 * lat[k]
				names[i] = a.Modules[k].Name
			}
			if sum > budget*(1+relTol) {
				add(where, "path %s: Σ2·d = %.3f ms > %.0f%% of the SLO (%.3f ms)", strings.Join(names, " -> "), sum/1000, 100*frac, budget/1000)
			}
		}
	}
	types := slices.Sorted(maps.Keys(use))
	for _, t := range types {
		if rec.Objective == planner.ObjectiveCost {
			// A cost plan picks its fleet within each type's available count.
			if a := emb.Cluster.AvailableOf(t); use[t] > a {
				add("gpu "+t, "modules use %d workers, the cluster has %d available", use[t], a)
			}
		} else if pool, ok := emb.Cluster.Pool(t); ok && use[t] > pool.Count {
			add("gpu "+t, "modules use %d workers, the cluster has %d", use[t], pool.Count)
		}
	}
	return out
}

// GPUs is the number of GPUs a PARD plan provisions for application app (its objective).
func GPUs(a pardsec.PARDApp) int {
	n := 0
	for _, m := range a.Modules {
		n += m.Workers
	}
	return n
}

// Capacity is an application's provisioned throughput: its slowest module's workers·b/d.
func Capacity(a pardsec.PARDApp) float64 {
	c := math.Inf(1)
	for _, m := range a.Modules {
		if m.LatencyUs > 0 {
			c = math.Min(c, float64(m.Workers*m.Batch)/(m.LatencyUs/1e6))
		}
	}
	if math.IsInf(c, 1) {
		return 0
	}
	return c
}
