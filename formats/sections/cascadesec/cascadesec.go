// Package cascadesec is CascadeServe's part of the file formats: the
// validation of its workload section (`cascades`: model cascades with their SLO, QPS range
// and validation records, CascadeServe §3) and its plan section (`cascade`: replica placement
// and the gear plan, §4), and the checks of those sections against the other files given
// with them, and the import of the per-sample validation records a cascade is planned on
// (App. C.1). Both sections are registered whole (formats.SectionOf): their types are this
// package's, read with PlanOf and CascadesOf.
package cascadesec

import (
	"github.com/plan-dev/plan/formats"
)

// Keys of CascadeServe's sections.
const (
	PlanKey     = "cascade"
	WorkloadKey = "cascades"
)

// WorkloadSection is the Section of a workload's `cascades` section: the cascades, a
// *[]Cascade (an empty list reads and writes as no section).
var WorkloadSection = workloadSection{formats.SectionOf[[]Cascade]{Name: WorkloadKey, Sys: "cascade", Check: formats.CheckList(WorkloadKey, validateCascade), Cross: crossCheckCascades, Position: Position}}

// workloadSection adds to the workload's SectionOf what formats asks of a workload section
// beyond it (formats.ModelUser, formats.TraceTargeter).
type workloadSection struct{ formats.SectionOf[[]Cascade] }

// CascadesOf is w's `cascades` section, nil when w (or it) is absent. Its elements are w's
// own: changing one changes w.
func CascadesOf(w *formats.Workload) []Cascade { return formats.ListOf(WorkloadSection.SectionOf, w) }

// SetCascades sets w's `cascades` section (empty removes it) and returns w.
func SetCascades(w *formats.Workload, cs []Cascade) *formats.Workload {
	return formats.SetWorkload(w, WorkloadSection, &cs)
}

// cascadeNames names w's cascades: what a plan's task and a trace's targets may name.
func cascadeNames(w *formats.Workload) []string {
	return formats.NamesOf(CascadesOf(w), func(cs *Cascade) string { return cs.Name })
}

// Position is the place of CascadeServe's sections in a file: third, after PPipe's and PARD's,
// before QLM's and DyOrc's, where they stood when formats typed them, so files keep their bytes
// (formats.Positioned).
const Position = 3

// PlanSection is the Section of a plan's `cascade` section: a *CascadePlan.
var PlanSection = planSection{formats.SectionOf[CascadePlan]{Name: PlanKey, Sys: "cascade", CheckIn: formats.InPlan(PlanKey, validatePlan), Cross: crossCheckPlan, Position: Position}}

// planSection adds to the plan's SectionOf what formats asks of a plan section beyond it
// (formats.ProfileChecker, formats.TraceTargeter).
type planSection struct{ formats.SectionOf[CascadePlan] }

// PlanOf is p's `cascade` section, nil when p (or it) is absent.
func PlanOf(p *formats.Plan) *CascadePlan { return PlanSection.OfPlan(p) }

// SetPlan sets p's `cascade` section (nil removes it) and returns p.
func SetPlan(p *formats.Plan, cp *CascadePlan) *formats.Plan {
	return formats.SetPlan(p, PlanSection, cp)
}

// crossCheckPlan checks that the plan serves a cascade of the workloads given with it.
func crossCheckPlan(cp *CascadePlan, self string, docs map[string]formats.Document) formats.ErrorList {
	defined := func(w *formats.Workload) ([]string, bool) { return cascadeNames(w), true }
	return formats.CheckWorkloadRefs(docs, defined, []string{cp.Task}, func(_ int, task *string) (string, string) {
		return PlanKey + ".task", *task
	}, "not a cascade of %s")
}

// CrossCheck checks that every model of every cascade is in a given profile (a DNN or an
// LLM), when profiles are given.
func crossCheckCascades(cs *[]Cascade, self string, docs map[string]formats.Document) formats.ErrorList {
	return formats.CheckProfiledRefs(docs, true, true, "model not found in any profile (%s)", func(add func(path, name string)) {
		for i := range *cs {
			for j, m := range (*cs)[i].Models {
				add(formats.Index(formats.Field(formats.Index(WorkloadKey, i), "models"), j), m)
			}
		}
	})
}

// UsedModels names the cascades' models, as DNNs and as LLMs (a cascade may hold either;
// formats.ModelUser, for profile coverage).
func (workloadSection) UsedModels(doc formats.Document) (dnn, llm []string) {
	w, _ := doc.(*formats.Workload)
	for _, cs := range CascadesOf(w) {
		dnn = append(dnn, cs.Models...)
	}
	return dnn, dnn
}

// CheckProfiles checks that every placed replica's model is in the profiles, as a DNN or an
// LLM (formats.ProfileChecker).
func (planSection) CheckProfiles(p *formats.Plan, ix formats.ProfileIndex, where string) formats.ErrorList {
	return formats.CheckOf(PlanOf(p), func(c *formats.Checker, cp *CascadePlan) {
		for i, r := range cp.Placement {
			if r.Model != "" && !ix.DNN(r.Model) && !ix.LLM(r.Model) {
				c.Add(formats.Field(formats.Index(PlanKey+".placement", i), "model"), r.Model, "model not found in %s", where)
			}
		}
	})
}

// TraceTargets: a trace given with the workload may name its cascades
// (formats.TraceTargeter).
func (workloadSection) TraceTargets(doc formats.Document) (targets, classes []string, complete bool) {
	w, _ := doc.(*formats.Workload)
	return cascadeNames(w), nil, true
}

// TraceTargets: a trace given with the plan may name the cascade task it serves.
func (planSection) TraceTargets(doc formats.Document) (targets, classes []string, complete bool) {
	if p, ok := doc.(*formats.Plan); ok {
		if cp := PlanOf(p); cp != nil {
			targets = append(targets, cp.Task)
		}
	}
	return targets, nil, true
}
