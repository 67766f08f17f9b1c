// Package ppipesec is PPipe's part of the file formats: the validation of
// its workload section (`models`: DNN models with their SLO, weight and rate) and its plan
// section (`ppipe`: each model's pipelines of block partitions on GPU types and vGPU levels,
// PPipe §4), and the check of the workload against the profiles given with it. Both sections
// are registered whole (formats.SectionOf): their types and the plan's GPU rounding rule are
// this package's, read with PlanOf and ModelsOf.
package ppipesec

import (
	"fmt"

	"github.com/plan-dev/plan/formats"
)

// Keys of PPipe's sections.
const (
	PlanKey     = "ppipe"
	WorkloadKey = "models"
)

// WorkloadSection is the Section of a workload's `models` section: the models, a
// *[]ModelWorkload (an empty list reads and writes as no section).
var WorkloadSection = workloadSection{formats.SectionOf[[]ModelWorkload]{Name: WorkloadKey, Sys: "ppipe", Check: formats.CheckList(WorkloadKey, validateModel), Cross: crossCheckModels, Position: Position}}

// workloadSection adds to the workload's SectionOf what formats asks of a workload section
// beyond it (formats.ModelUser, formats.TraceTargeter).
type workloadSection struct {
	formats.SectionOf[[]ModelWorkload]
}

// ModelsOf is w's `models` section, nil when w (or it) is absent. Its elements are w's own:
// changing one changes w.
func ModelsOf(w *formats.Workload) []ModelWorkload {
	return formats.ListOf(WorkloadSection.SectionOf, w)
}

// SetModels sets w's `models` section (empty removes it) and returns w.
func SetModels(w *formats.Workload, ms []ModelWorkload) *formats.Workload {
	return formats.SetWorkload(w, WorkloadSection, &ms)
}

// Position is the place of PPipe's sections in a file: first, before PARD's, CascadeServe's,
// QLM's and DyOrc's, where they stood when formats typed them, so files keep their bytes
// (formats.Positioned).
const Position = 1

// PlanSection is the Section of a plan's `ppipe` section: a *PPipePlan. Its plan's
// partitions are checked against the profiles by CheckProfiles, which formats runs with the
// profiles given beside the plan or embedded in it.
var PlanSection = planSection{formats.SectionOf[PPipePlan]{Name: PlanKey, Sys: "ppipe", CheckIn: formats.InPlan(PlanKey, validatePlan), Position: Position}}

// planSection adds to the plan's SectionOf what formats asks of a plan section beyond it
// (formats.ProfileChecker, formats.GPUUser, formats.TraceTargeter).
type planSection struct{ formats.SectionOf[PPipePlan] }

// PlanOf is p's `ppipe` section, nil when p (or it) is absent.
func PlanOf(p *formats.Plan) *PPipePlan { return PlanSection.OfPlan(p) }

// SetPlan sets p's `ppipe` section (nil removes it) and returns p.
func SetPlan(p *formats.Plan, pp *PPipePlan) *formats.Plan {
	return formats.SetPlan(p, PlanSection, pp)
}

// crossCheckModels checks that every model (its profile name) is in a given profile, when
// profiles are given.
func crossCheckModels(ms *[]ModelWorkload, self string, docs map[string]formats.Document) formats.ErrorList {
	return formats.CheckProfiledRefs(docs, true, false, "model not found in any profile (%s)", func(add func(path, name string)) {
		for i := range *ms {
			m := &(*ms)[i]
			p := formats.Index(WorkloadKey, i)
			if m.Profile != "" {
				p = formats.Field(p, "profile")
			} else {
				p = formats.Field(p, "name")
			}
			add(p, m.ProfileName())
		}
	})
}

// UsedModels names the workload's models by profile name (formats.ModelUser, for profile
// coverage).
func (workloadSection) UsedModels(doc formats.Document) (dnn, llm []string) {
	w, _ := doc.(*formats.Workload)
	ms := ModelsOf(w)
	for i := range ms {
		dnn = append(dnn, ms[i].ProfileName())
	}
	return dnn, nil
}

// CheckProfiles checks the plan's models against the profiles (formats.ProfileChecker): each
// exists, its pipelines' last partition ends at the model's last block, and every (gpu,
// vgpu, batch) a partition runs has a latency entry.
func (planSection) CheckProfiles(p *formats.Plan, ix formats.ProfileIndex, where string) formats.ErrorList {
	return formats.CheckOf(PlanOf(p), func(c *formats.Checker, pp *PPipePlan) {
		for i := range pp.Models {
			m := &pp.Models[i]
			ip := formats.Index(PlanKey+".models", i)
			if m.Model == "" {
				continue
			}
			if !ix.DNN(m.Model) {
				c.Add(formats.Field(ip, "model"), m.Model, "model not found in %s", where)
				continue
			}
			nb := ix.Blocks(m.Model)
			for j := range m.Pipelines {
				pl := &m.Pipelines[j]
				jp := formats.Index(formats.Field(ip, "pipelines"), j)
				if n := len(pl.Partitions); n > 0 {
					if end := pl.Partitions[n-1].EndBlock; end != nb {
						c.Add(formats.Field(formats.Index(formats.Field(jp, "partitions"), n-1), "end_block"), end, "must equal the number of blocks of %s (%d)", m.Model, nb)
					}
				}
				for k := range pl.Partitions {
					pt := &pl.Partitions[k]
					if pt.GPU != "" && !ix.Lookup(m.Model, pt.GPU, pt.VGPU, pl.Batch) {
						c.AddRaw(formats.Index(formats.Field(jp, "partitions"), k), fmt.Sprintf("(%s, vgpu %d, batch %d)", pt.GPU, pt.VGPU, pl.Batch),
							"no latency entry for model %s in %s", m.Model, where)
					}
				}
			}
		}
	})
}

// GPURefs lists the GPU types the plan's partitions and GPU use name (formats.GPUUser).
func (planSection) GPURefs(p *formats.Plan) []formats.GPURef {
	pp := PlanOf(p)
	if pp == nil {
		return nil
	}
	var out []formats.GPURef
	for i := range pp.Models {
		for j := range pp.Models[i].Pipelines {
			for k, pt := range pp.Models[i].Pipelines[j].Partitions {
				out = append(out, formats.GPURef{Path: fmt.Sprintf("%s.models[%d].pipelines[%d].partitions[%d].gpu", PlanKey, i, j, k), GPU: pt.GPU})
			}
		}
	}
	for i, u := range pp.GPUUse {
		out = append(out, formats.GPURef{Path: fmt.Sprintf("%s.gpu_use[%d].gpu", PlanKey, i), GPU: u.GPU})
	}
	return out
}

// TraceTargets: a trace given with the workload may name its models (formats.TraceTargeter).
func (workloadSection) TraceTargets(doc formats.Document) (targets, classes []string, complete bool) {
	w, _ := doc.(*formats.Workload)
	for _, m := range ModelsOf(w) {
		targets = append(targets, m.Name)
	}
	return targets, nil, true
}

// TraceTargets: a trace given with the plan may name the models it serves.
func (planSection) TraceTargets(doc formats.Document) (targets, classes []string, complete bool) {
	if p, ok := doc.(*formats.Plan); ok {
		if pp := PlanOf(p); pp != nil {
			for _, m := range pp.Models {
				targets = append(targets, m.Model)
			}
		}
	}
	return targets, nil, true
}
