// Package dyorcsec is DyOrc's part of the file formats: the validation of
// its workload section (`workflows`: services and apps built from steps, DyOrc §2.1) and its
// plan section (`dyorc`: service deployments and the scheduler's seed placement), and the
// checks of those sections against the other files given with them. The section types stay
// typed fields of formats.Workload and formats.Plan; formats runs these Sections for them
// when the system registry hands it the set (formats.SectionSet), so formats holds only the
// shared types.
package dyorcsec

import (
	"strings"

	"github.com/plan-dev/plan/formats"
)

// Keys of DyOrc's sections.
const (
	PlanKey     = "dyorc"
	WorkloadKey = "workflows"
)

// Plan is the Section of a plan's `dyorc` field.
type Plan struct{ formats.TypedSection }

// Workload is the Section of a workload's `workflows` field.
type Workload struct{ formats.TypedSection }

// Key is the section's key.
func (Plan) Key() string { return PlanKey }

// System is DyOrc.
func (Plan) System() string { return "dyorc" }

// Validate checks the `dyorc` section of the plan v (a *formats.Plan).
func (Plan) Validate(v any) formats.ErrorList {
	p, ok := v.(*formats.Plan)
	if !ok || p.DyOrc == nil {
		return nil
	}
	var c formats.Checker
	validatePlan(&c, p, PlanKey)
	return c.Errs()
}

// CrossCheck checks that the plan v's deployments serve services of the workflows given
// with it (when any given workload has workflows).
func (Plan) CrossCheck(v any, self string, docs map[string]formats.Document) formats.ErrorList {
	p, ok := v.(*formats.Plan)
	if !ok || p.DyOrc == nil {
		return nil
	}
	var files []string
	services := map[string]bool{}
	hasWorkflows := false
	for _, f := range sortedFiles(docs) {
		w, ok := docs[f].(*formats.Workload)
		if !ok || w == nil {
			continue
		}
		files = append(files, f)
		if wf := w.Workflows; wf != nil {
			hasWorkflows = true
			for name := range wf.Services {
				services[name] = true
			}
		}
	}
	if !hasWorkflows {
		return nil
	}
	var c formats.Checker
	where := strings.Join(files, ", ")
	for i, s := range p.DyOrc.Deployments {
		if s.Service != "" && !services[s.Service] {
			c.Add(formats.Field(formats.Index(PlanKey+".deployments", i), "service"), s.Service, "not a workflow service of %s", where)
		}
	}
	return c.Errs()
}

// Key is the section's key.
func (Workload) Key() string { return WorkloadKey }

// System is DyOrc.
func (Workload) System() string { return "dyorc" }

// Validate checks the `workflows` section of the workload v (a *formats.Workload).
func (Workload) Validate(v any) formats.ErrorList {
	w, ok := v.(*formats.Workload)
	if !ok || w.Workflows == nil {
		return nil
	}
	var c formats.Checker
	validateWorkflows(&c, w.Workflows, WorkloadKey)
	return c.Errs()
}

// CrossCheck checks the workflows against the other files given with them: a service with
// no inline latency must be in a given profile, and every service must fit on the largest
// GPU of the given clusters (DyOrc: a service is hosted whole by one totipotent worker).
func (Workload) CrossCheck(v any, self string, docs map[string]formats.Document) formats.ErrorList {
	w, ok := v.(*formats.Workload)
	if !ok || w.Workflows == nil {
		return nil
	}
	wf := w.Workflows
	var c formats.Checker
	var profiles, clusters []string
	profiled := map[string]bool{}
	var largest int64
	for _, f := range sortedFiles(docs) {
		switch d := docs[f].(type) {
		case *formats.Profile:
			if d != nil {
				profiles = append(profiles, f)
				for i := range d.Models {
					profiled[d.Models[i].Name] = true
				}
			}
		case *formats.Cluster:
			if d != nil {
				clusters = append(clusters, f)
				for _, g := range d.GPUs {
					m := g.MemoryBytes
					if m == 0 {
						m = formats.KnownGPUs[g.Type]
					}
					largest = max(largest, m)
				}
			}
		}
	}
	sp := WorkloadKey + ".services"
	if len(profiles) > 0 {
		where := strings.Join(profiles, ", ")
		for _, name := range formats.SortedKeys(wf.Services) {
			if wf.Services[name].Latency == nil && !profiled[name] {
				c.Add(formats.KeyPath(sp, name), name, "no latency: none inline and not in any profile (%s)", where)
			}
		}
	}
	if len(clusters) > 0 && largest > 0 {
		for _, name := range formats.SortedKeys(wf.Services) {
			s := wf.Services[name]
			if need := formats.ServiceBytes(s); need > largest {
				c.Add(formats.Field(formats.KeyPath(sp, name), "weights_gb"), s.WeightsGB,
					"service needs %.1f GB (weights + activations) but the largest GPU in %s has %.1f GB", float64(need)/1e9, strings.Join(clusters, ", "), float64(largest)/1e9)
			}
		}
	}
	return c.Errs()
}

// UsedModels names the profiled models the workflows use: services with no inline latency
// (formats.ModelUser, for the profile-coverage check).
func (Workload) UsedModels(doc formats.Document) (dnn, llm []string) {
	w, ok := doc.(*formats.Workload)
	if !ok || w.Workflows == nil {
		return nil, nil
	}
	for _, name := range formats.SortedKeys(w.Workflows.Services) {
		if w.Workflows.Services[name].Latency == nil {
			dnn = append(dnn, name)
		}
	}
	return dnn, nil
}

// sortedFiles lists the files of a set in order, as formats.CheckSet visits them.
func sortedFiles(docs map[string]formats.Document) []string {
	return formats.SortedKeys(docs)
}

// validatePlan checks DyOrc's plan section: deployments of known services on the plan's GPU
// types, each (service, GPU) once, and a seed placement that lists each GPU once.
func validatePlan(c *formats.Checker, pl *formats.Plan, p string) {
	d := pl.DyOrc
	dp := formats.Field(p, "deployments")
	if len(d.Deployments) == 0 {
		c.Add(dp, nil, "must list at least one deployment")
	}
	first := map[[2]string]int{}
	for i := range d.Deployments {
		s := &d.Deployments[i]
		ip := formats.Index(dp, i)
		c.NotEmpty(formats.Field(ip, "service"), s.Service)
		c.GPU(pl, formats.Field(ip, "gpu"), s.GPU)
		c.AtLeast(formats.Field(ip, "replicas"), int64(s.Replicas), 1)
		c.AtLeast(formats.Field(ip, "max_batch"), int64(s.MaxBatch), 1)
		k := [2]string{s.Service, s.GPU}
		if f, dup := first[k]; dup {
			c.AddRaw(ip, "("+s.Service+", "+s.GPU+")", "duplicate (service, gpu) deployment (first at %s)", formats.Index(dp, f))
		} else {
			first[k] = i
		}
	}
	c.FiniteParams(formats.Field(p, "params"), d.Params)
	seenGPU := map[int]bool{}
	for i, g := range d.Placement {
		ip := formats.Index(formats.Field(p, "placement"), i)
		if g.GPU < 0 {
			c.Add(formats.Field(ip, "gpu"), g.GPU, "must be >= 0")
		} else if seenGPU[g.GPU] {
			c.Add(formats.Field(ip, "gpu"), g.GPU, "GPU listed twice")
		}
		seenGPU[g.GPU] = true
		for j, s := range g.Services {
			c.NotEmpty(formats.Index(formats.Field(ip, "services"), j), s)
		}
	}
}

// GPURefs lists the GPU types the plan's deployments use (formats.GPUUser).
func (Plan) GPURefs(p *formats.Plan) []formats.GPURef {
	if p.DyOrc == nil {
		return nil
	}
	var out []formats.GPURef
	for i, s := range p.DyOrc.Deployments {
		out = append(out, formats.GPURef{Path: formats.Field(formats.Index(PlanKey+".deployments", i), "gpu"), GPU: s.GPU})
	}
	return out
}

// TraceTargets: a trace given with the workload may name its workflow applications
// (formats.TraceTargeter).
func (Workload) TraceTargets(doc formats.Document) (targets, classes []string, complete bool) {
	if w, ok := doc.(*formats.Workload); ok && w.Workflows != nil {
		targets = formats.SortedKeys(w.Workflows.Apps)
	}
	return targets, nil, true
}

// TraceTargets: a DyOrc plan serves its workload's workflow applications, which it does not
// name, so a trace given with it is not checked against it (complete is false).
func (Plan) TraceTargets(formats.Document) (targets, classes []string, complete bool) {
	return nil, nil, false
}
