// Package pard exports PARD plans to Triton, KServe and Ray Serve: every module
// becomes one exported model with its provisioning (batch size, workers on one GPU type), and
// every application a group — a Triton ensemble and a KServe Sequence graph where the
// application is a chain, a Ray application always.
//
// Timing (PARD §4.2: provisioning keeps Σ 2·d(b) ≤ f·SLO along every path, i.e. each module
// budgets one batch duration d of waiting): max_queue_delay is the module's batch latency d;
// the queue timeout is the application's SLO. Modules of a chain exchange tensors named
// INPUT0 and OUTPUT0 (Triton's naming convention) so that the ensemble can wire them.
package pard

import (
	"fmt"
	"math"
	"time"

	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/export/targets"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/pardsec"
)

// Exporters returns PARD's exporters for every target.
func Exporters() []export.Exporter { return export.Exporters(targets.Registry(), Build) }

// Key names module of app in placements.
func Key(app, module string) string { return app + "/" + module }

// Placements are the plan's modules as the exported files must record them.
func Placements(p *formats.Plan) []export.Placement {
	var out []export.Placement
	for _, a := range pardsec.PlanOf(p).Apps {
		for _, m := range a.Modules {
			out = append(out, export.Placement{Key: Key(a.Name, m.Name), GPU: m.GPU, VGPU: 1, Count: m.Workers, Batch: m.Batch})
		}
	}
	export.SortPlacements(out)
	return out
}

// edges returns each module's upstream modules: from the plan's embedded workload, or a
// chain in module order when the plan has none (as dataplane/pard.FromPARDPlan).
func edges(p *formats.Plan, a pardsec.PARDApp) map[string][]string {
	out := map[string][]string{}
	if p.Provenance.Embedded != nil && p.Provenance.Embedded.Workload != nil {
		for _, pl := range pardsec.PipelinesOf(p.Provenance.Embedded.Workload) {
			if pl.Name == a.Name {
				for _, m := range pl.Modules {
					for _, e := range m.After {
						out[m.Name] = append(out[m.Name], e.Module)
					}
				}
				return out
			}
		}
	}
	for j := 1; j < len(a.Modules); j++ {
		out[a.Modules[j].Name] = []string{a.Modules[j-1].Name}
	}
	return out
}

// isChain reports whether the modules, in plan order, form one unconditional chain.
func isChain(p *formats.Plan, a pardsec.PARDApp, after map[string][]string) bool {
	for j, m := range a.Modules {
		ups := after[m.Name]
		if j == 0 && len(ups) != 0 || j > 0 && (len(ups) != 1 || ups[0] != a.Modules[j-1].Name) {
			return false
		}
	}
	if p.Provenance.Embedded != nil && p.Provenance.Embedded.Workload != nil {
		for _, pl := range pardsec.PipelinesOf(p.Provenance.Embedded.Workload) {
			if pl.Name == a.Name {
				for _, m := range pl.Modules {
					for _, e := range m.After {
						if e.Probability > 0 && e.Probability < 1 {
							return false // a conditional edge needs a front that decides
						}
					}
				}
			}
		}
	}
	return true
}

// scaling is a module's autoscaling range from the plan's headroom: a worker completes one
// batch per batch latency d(b) (PARD §4.2), so it sustains b/d(b); the application's rate
// needs ceil(rate / that) of the provisioned workers.
func scaling(a pardsec.PARDApp, m pardsec.ModulePlan) export.Scaling {
	if m.LatencyUs <= 0 || m.Batch < 1 {
		return export.Scaling{}
	}
	per := float64(m.Batch) / m.LatencyUs * 1e6
	sc := export.Scaling{PerReplicaRPS: per}
	if a.RateRPS > 0 {
		sc.Needed = int(math.Ceil(a.RateRPS / per))
	}
	return sc
}

// Build lays a PARD plan out as groups, one per application.
func Build(p *formats.Plan, o export.Options) ([]export.Group, error) {
	if pardsec.PlanOf(p) == nil {
		return nil, fmt.Errorf("the plan has no pard section")
	}
	if o.Model != nil {
		return nil, fmt.Errorf("--model: PARD plans serve whole models per module; there is no partition to cut")
	}
	var gs []export.Group
	for _, a := range pardsec.PlanOf(p).Apps {
		after := edges(p, a)
		g := export.Group{Name: export.DNSLabel(o.Name + "-" + a.Name), Chain: isChain(p, a, after), Positional: true}
		name := func(module string) string { return export.DNSLabel(g.Name + "-" + module) }
		next := map[string][]string{}
		for _, m := range a.Modules {
			for _, up := range after[m.Name] {
				next[up] = append(next[up], name(m.Name))
			}
		}
		slo := int64(time.Duration(a.SLO) / time.Microsecond)
		for _, m := range a.Modules {
			u := export.Unit{Name: name(m.Name),
				Placement:    export.Placement{Key: Key(a.Name, m.Name), GPU: m.GPU, VGPU: 1, Count: m.Workers, Batch: m.Batch},
				QueueDelayUs: int64(math.Ceil(m.LatencyUs)), TimeoutUs: slo, Next: next[m.Name], Scaling: scaling(a, m)}
			if g.Chain {
				u.Inputs = []export.TritonTensor{{Name: "INPUT0", DataType: "TYPE_FP32", Dims: []int64{-1}}}
				u.Outputs = []export.TritonTensor{{Name: "OUTPUT0", DataType: "TYPE_FP32", Dims: []int64{-1}}}
			}
			g.Units = append(g.Units, u)
		}
		gs = append(gs, g)
	}
	return gs, nil
}
