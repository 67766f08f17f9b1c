// Package pardsec is PARD's part of the file formats: the validation of its
// workload section (`pipelines`: DAGs of DNN modules with an end-to-end SLO, PARD §2) and its
// plan section (`pard`: the runtime policy and each app's modules with their GPU, batch and
// workers, §4), and the checks of those sections against the other files given with them.
// Both sections are registered whole (formats.SectionOf): their types are this package's,
// read with PlanOf and PipelinesOf.
package pardsec

import (
	"strings"

	"github.com/plan-dev/plan/formats"
)

// Keys of PARD's sections.
const (
	PlanKey     = "pard"
	WorkloadKey = "pipelines"
)

// WorkloadSection is the Section of a workload's `pipelines` section: the pipelines, a
// *[]Pipeline (an empty list reads and writes as no section).
var WorkloadSection = workloadSection{formats.SectionOf[[]Pipeline]{Name: WorkloadKey, Sys: "pard", Check: formats.CheckList(WorkloadKey, validatePipeline), Cross: crossCheckPipelines, Position: Position}}

// workloadSection adds to the workload's SectionOf what formats asks of a workload section
// beyond it (formats.ModelUser, formats.TraceTargeter).
type workloadSection struct{ formats.SectionOf[[]Pipeline] }

// PipelinesOf is w's `pipelines` section, nil when w (or it) is absent. Its elements are w's
// own: changing one changes w.
func PipelinesOf(w *formats.Workload) []Pipeline { return formats.ListOf(WorkloadSection.SectionOf, w) }

// SetPipelines sets w's `pipelines` section (empty removes it) and returns w.
func SetPipelines(w *formats.Workload, ps []Pipeline) *formats.Workload {
	return formats.SetWorkload(w, WorkloadSection, &ps)
}

// pipelineNames names w's pipelines: what a plan's apps and a trace's targets may name.
func pipelineNames(w *formats.Workload) []string {
	return formats.NamesOf(PipelinesOf(w), func(pl *Pipeline) string { return pl.Name })
}

// Position is the place of PARD's sections in a file: second, after PPipe's, before
// CascadeServe's, QLM's and DyOrc's, where they stood when formats typed them, so files keep
// their bytes (formats.Positioned).
const Position = 2

// PlanSection is the Section of a plan's `pard` section: a *PARDPlan.
var PlanSection = planSection{formats.SectionOf[PARDPlan]{Name: PlanKey, Sys: "pard", CheckIn: formats.InPlan(PlanKey, validatePlan), Cross: crossCheckPlan, Position: Position}}

// planSection adds to the plan's SectionOf what formats asks of a plan section beyond it
// (formats.ProfileChecker, formats.GPUUser, formats.TraceTargeter).
type planSection struct{ formats.SectionOf[PARDPlan] }

// PlanOf is p's `pard` section, nil when p (or it) is absent.
func PlanOf(p *formats.Plan) *PARDPlan { return PlanSection.OfPlan(p) }

// SetPlan sets p's `pard` section (nil removes it) and returns p.
func SetPlan(p *formats.Plan, pd *PARDPlan) *formats.Plan {
	return formats.SetPlan(p, PlanSection, pd)
}

// validatePlan checks PARD's plan section: a policy, uniquely named apps with an SLO, each
// with uniquely named modules on the plan's GPU types.
func validatePlan(c *formats.Checker, pl *formats.Plan, pd *PARDPlan, p string) {
	c.NotEmpty(formats.Field(p, "policy"), pd.Policy)
	c.FiniteParams(formats.Field(p, "params"), pd.Params)
	seen := &formats.Names{}
	formats.Each(c, formats.Field(p, "apps"), "app", pd.Apps, func(_ int, ip string, a *PARDApp) {
		c.Check(seen, formats.Field(ip, "name"), a.Name)
		c.PositiveDuration(formats.Field(ip, "slo"), a.SLO)
		c.Rate(formats.Field(ip, "rate_rps"), a.RateRPS)
		mods := &formats.Names{}
		formats.Each(c, formats.Field(ip, "modules"), "module", a.Modules, func(_ int, jp string, m *ModulePlan) {
			c.Check(mods, formats.Field(jp, "name"), m.Name)
			c.NotEmpty(formats.Field(jp, "model"), m.Model)
			c.GPU(pl, formats.Field(jp, "gpu"), m.GPU)
			c.AtLeast(formats.Field(jp, "batch"), int64(m.Batch), 1)
			c.AtLeast(formats.Field(jp, "workers"), int64(m.Workers), 1)
			c.Microseconds(formats.Field(jp, "latency_us"), m.LatencyUs)
		})
	})
}

// crossCheckPlan checks that the plan's apps are pipelines of the workloads given with it.
func crossCheckPlan(pd *PARDPlan, self string, docs map[string]formats.Document) formats.ErrorList {
	defined := func(w *formats.Workload) ([]string, bool) { return pipelineNames(w), true }
	return formats.CheckWorkloadRefs(docs, defined, pd.Apps, func(i int, a *PARDApp) (string, string) {
		return formats.Field(formats.Index(PlanKey+".apps", i), "name"), a.Name
	}, "not a pipeline of %s")
}

// validatePipeline checks one pipeline: uniquely named modules whose `after` edges name other
// modules once each, with a probability in (0, 1], and form no cycle (PARD's DAG, §2).
func validatePipeline(c *formats.Checker, pl *Pipeline, p string, seen *formats.Names) {
	c.Check(seen, formats.Field(p, "name"), pl.Name)
	c.PositiveDuration(formats.Field(p, "slo"), pl.SLO)
	c.Rate(formats.Field(p, "rate_rps"), pl.RateRPS)
	mp := formats.Field(p, "modules")
	if len(pl.Modules) == 0 {
		c.Add(mp, nil, "must list at least one module")
		return
	}
	mods := &formats.Names{}
	ambiguous := false // an empty or repeated name makes the graph meaningless
	for j := range pl.Modules {
		n := pl.Modules[j].Name
		ambiguous = ambiguous || n == "" || mods.First(n) != ""
		c.Check(mods, formats.Field(formats.Index(mp, j), "name"), n)
	}
	succ := map[string][]string{}
	var order []string
	for j := range pl.Modules {
		m := &pl.Modules[j]
		jp := formats.Index(mp, j)
		c.NotEmpty(formats.Field(jp, "model"), m.Model)
		order = append(order, m.Name)
		edges := map[string]int{}
		for k, e := range m.After {
			ep := formats.Index(formats.Field(jp, "after"), k)
			switch {
			case e.Module == "":
				c.Add(formats.Field(ep, "module"), e.Module, "must not be empty")
			case e.Module == m.Name:
				c.Add(formats.Field(ep, "module"), e.Module, "a module cannot depend on itself")
			case mods.First(e.Module) == "":
				c.Add(formats.Field(ep, "module"), e.Module, "unknown module: not in %s", mp)
			default:
				if f, dup := edges[e.Module]; dup {
					c.Add(formats.Field(ep, "module"), e.Module, "duplicate edge (first at after[%d])", f)
				} else {
					edges[e.Module] = k
					succ[e.Module] = append(succ[e.Module], m.Name)
				}
			}
			if e.Probability != 0 && !(e.Probability > 0 && e.Probability <= 1) {
				c.Add(formats.Field(ep, "probability"), e.Probability, "must be in (0, 1]")
			}
		}
	}
	if cyc := formats.FindCycle(order, succ); cyc != nil && !ambiguous {
		c.Add(mp, nil, "modules form a cycle: %s", strings.Join(cyc, " -> "))
	}
}

// crossCheckPipelines checks that every module's model is in a given profile, when profiles
// are given.
func crossCheckPipelines(ps *[]Pipeline, self string, docs map[string]formats.Document) formats.ErrorList {
	return formats.CheckProfiledRefs(docs, true, false, "model not found in any profile (%s)", func(add func(path, name string)) {
		for i := range *ps {
			for j, m := range (*ps)[i].Modules {
				add(formats.Field(formats.Index(formats.Field(formats.Index(WorkloadKey, i), "modules"), j), "model"), m.Model)
			}
		}
	})
}

// UsedModels names the pipelines' modules' models (formats.ModelUser, for profile coverage).
func (workloadSection) UsedModels(doc formats.Document) (dnn, llm []string) {
	w, _ := doc.(*formats.Workload)
	for _, pl := range PipelinesOf(w) {
		for _, m := range pl.Modules {
			dnn = append(dnn, m.Model)
		}
	}
	return dnn, nil
}

// CheckProfiles checks that every module's model is in the profiles (formats.ProfileChecker).
func (planSection) CheckProfiles(p *formats.Plan, ix formats.ProfileIndex, where string) formats.ErrorList {
	return formats.CheckOf(PlanOf(p), func(c *formats.Checker, pd *PARDPlan) {
		for i := range pd.Apps {
			for j, m := range pd.Apps[i].Modules {
				if m.Model != "" && !ix.DNN(m.Model) {
					c.Add(formats.Field(formats.Index(formats.Field(formats.Index(PlanKey+".apps", i), "modules"), j), "model"), m.Model, "model not found in %s", where)
				}
			}
		}
	})
}

// GPURefs lists the GPU types the plan's modules run on (formats.GPUUser).
func (planSection) GPURefs(p *formats.Plan) []formats.GPURef {
	pd := PlanOf(p)
	if pd == nil {
		return nil
	}
	var out []formats.GPURef
	for i := range pd.Apps {
		for j, m := range pd.Apps[i].Modules {
			out = append(out, formats.GPURef{Path: formats.Field(formats.Index(formats.Field(formats.Index(PlanKey+".apps", i), "modules"), j), "gpu"), GPU: m.GPU})
		}
	}
	return out
}

// TraceTargets: a trace given with the workload may name its pipelines
// (formats.TraceTargeter).
func (workloadSection) TraceTargets(doc formats.Document) (targets, classes []string, complete bool) {
	w, _ := doc.(*formats.Workload)
	return pipelineNames(w), nil, true
}

// TraceTargets: a trace given with the plan may name the applications it serves.
func (planSection) TraceTargets(doc formats.Document) (targets, classes []string, complete bool) {
	if p, ok := doc.(*formats.Plan); ok {
		if pd := PlanOf(p); pd != nil {
			for _, a := range pd.Apps {
				targets = append(targets, a.Name)
			}
		}
	}
	return targets, nil, true
}
