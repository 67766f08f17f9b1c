// Package ppipesec is PPipe's part of the file formats: the validation of
// its workload section (`models`: DNN models with their SLO, weight and rate) and its plan
// section (`ppipe`: each model's pipelines of block partitions on GPU types and vGPU levels,
// PPipe §4), and the check of the workload against the profiles given with it. The plan
// section is registered whole (formats.SectionOf: its types and GPU rounding rule are this
// package's, read with PlanOf); the workload section's types are still a typed field of
// formats.Workload, which formats decodes and this package's Workload validates.
package ppipesec

import (
	"fmt"
	"strings"

	"github.com/plan-dev/plan/formats"
)

// Keys of PPipe's sections.
const (
	PlanKey     = "ppipe"
	WorkloadKey = "models"
)

// Workload is the Section of a workload's `models` field.
type Workload struct{ formats.TypedSection }

// Position is the place of PPipe's sections in a file: first, before PARD's, CascadeServe's,
// QLM's and DyOrc's, where its typed fields stood (formats.Positioned).
const Position = 1

// PlanSection is the Section of a plan's `ppipe` section: a *PPipePlan. Its plan's
// partitions are checked against the profiles by CheckProfiles, which formats runs with the
// profiles given beside the plan or embedded in it.
var PlanSection = planSection{formats.SectionOf[PPipePlan]{Name: PlanKey, Sys: "ppipe", CheckIn: checkPlan, Position: Position}}

// planSection adds to the plan's SectionOf what formats asks of a plan section beyond it
// (formats.ProfileChecker, formats.GPUUser, formats.TraceTargeter).
type planSection struct{ formats.SectionOf[PPipePlan] }

// PlanOf is p's `ppipe` section, nil when p (or it) is absent.
func PlanOf(p *formats.Plan) *PPipePlan {
	if p == nil {
		return nil
	}
	return PlanSection.In(p.Sections)
}

// SetPlan sets p's `ppipe` section (nil removes it) and returns p.
func SetPlan(p *formats.Plan, pp *PPipePlan) *formats.Plan {
	p.Sections.Set(PlanSection, pp)
	return p
}

// checkPlan checks the `ppipe` section pp of the plan doc.
func checkPlan(pp *PPipePlan, doc formats.Document) formats.ErrorList {
	p, ok := doc.(*formats.Plan)
	if !ok {
		return nil
	}
	var c formats.Checker
	validatePlan(&c, p, pp, PlanKey)
	return c.Errs()
}

// Key is the section's key.
func (Workload) Key() string { return WorkloadKey }

// System is PPipe.
func (Workload) System() string { return "ppipe" }

// Validate checks the `models` section of the workload v (a *formats.Workload).
func (Workload) Validate(v any) formats.ErrorList {
	w, ok := v.(*formats.Workload)
	if !ok {
		return nil
	}
	var c formats.Checker
	seen := &formats.Names{}
	for i := range w.Models {
		validateModel(&c, &w.Models[i], formats.Index(WorkloadKey, i), seen)
	}
	return c.Errs()
}

// CrossCheck checks that every model (its profile name) is in a given profile, when profiles
// are given.
func (Workload) CrossCheck(v any, self string, docs map[string]formats.Document) formats.ErrorList {
	w, ok := v.(*formats.Workload)
	if !ok {
		return nil
	}
	profiles, known := formats.ProfiledModels(docs, true, false)
	if len(profiles) == 0 {
		return nil
	}
	var c formats.Checker
	for i := range w.Models {
		m := &w.Models[i]
		p := formats.Index(WorkloadKey, i)
		if m.Profile != "" {
			p = formats.Field(p, "profile")
		} else {
			p = formats.Field(p, "name")
		}
		if name := m.ProfileName(); name != "" && !known[name] {
			c.Add(p, name, "model not found in any profile (%s)", strings.Join(profiles, ", "))
		}
	}
	return c.Errs()
}

// UsedModels names the workload's models by profile name (formats.ModelUser, for profile
// coverage).
func (Workload) UsedModels(doc formats.Document) (dnn, llm []string) {
	w, ok := doc.(*formats.Workload)
	if !ok {
		return nil, nil
	}
	for i := range w.Models {
		dnn = append(dnn, w.Models[i].ProfileName())
	}
	return dnn, nil
}

// CheckProfiles checks the plan's models against the profiles (formats.ProfileChecker): each
// exists, its pipelines' last partition ends at the model's last block, and every (gpu,
// vgpu, batch) a partition runs has a latency entry.
func (planSection) CheckProfiles(p *formats.Plan, ix formats.ProfileIndex, where string) formats.ErrorList {
	pp := PlanOf(p)
	if pp == nil {
		return nil
	}
	var c formats.Checker
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
	return c.Errs()
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
func (Workload) TraceTargets(doc formats.Document) (targets, classes []string, complete bool) {
	if w, ok := doc.(*formats.Workload); ok {
		for _, m := range w.Models {
			targets = append(targets, m.Name)
		}
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
