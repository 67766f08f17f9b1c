// Package dyorcsec is DyOrc's part of the file formats: its workload section
// (`workflows`: services and apps built from steps, DyOrc §2.1) and its plan section
// (`dyorc`: service deployments and the scheduler's seed placement) — their Go types, their
// validation, and their checks against the other files given with them. Both are
// registered sections (formats.SectionOf), decoded, validated and described from these
// types through the registry's SectionSet: formats holds none of DyOrc's types or rules.
package dyorcsec

import (
	"maps"
	"slices"
	"strings"

	"github.com/plan-dev/plan/formats"
)

// Keys of DyOrc's sections.
const (
	PlanKey     = "dyorc"
	WorkloadKey = "workflows"
)

// Position is the place of DyOrc's sections in a file: fifth, after PPipe's, PARD's,
// CascadeServe's and QLM's, where they stood when formats typed them, so files keep their bytes
// (formats.Positioned).
const Position = 5

// PlanSection is the Section of a plan's `dyorc` section: a *DyOrcPlan.
var PlanSection = planSection{formats.SectionOf[DyOrcPlan]{Name: PlanKey, Sys: "dyorc", CheckIn: formats.InPlan(PlanKey, validatePlan), Cross: crossCheckPlan, Position: Position}}

// WorkloadSection is the Section of a workload's `workflows` section: a *Workflows.
var WorkloadSection = workloadSection{formats.SectionOf[Workflows]{Name: WorkloadKey, Sys: "dyorc", Check: checkWorkflows, Cross: crossCheckWorkflows, Position: Position}}

// planSection adds to the plan's SectionOf what formats asks of a plan section beyond it
// (formats.GPUUser, formats.TraceTargeter).
type planSection struct{ formats.SectionOf[DyOrcPlan] }

// workloadSection adds formats.ModelUser and formats.TraceTargeter to the workload's.
type workloadSection struct{ formats.SectionOf[Workflows] }

// PlanOf is p's `dyorc` section, nil when p (or it) is absent.
func PlanOf(p *formats.Plan) *DyOrcPlan { return PlanSection.OfPlan(p) }

// SetPlan sets p's `dyorc` section (nil removes it) and returns p.
func SetPlan(p *formats.Plan, d *DyOrcPlan) *formats.Plan {
	return formats.SetPlan(p, PlanSection, d)
}

// WorkflowsOf is w's `workflows` section, nil when w (or it) is absent.
func WorkflowsOf(w *formats.Workload) *Workflows { return WorkloadSection.OfWorkload(w) }

// SetWorkflows sets w's `workflows` section (nil removes it) and returns w.
func SetWorkflows(w *formats.Workload, wf *Workflows) *formats.Workload {
	return formats.SetWorkload(w, WorkloadSection, wf)
}

// crossCheckPlan checks that the plan's deployments serve services of the workflows given
// with it (when any given workload has workflows).
func crossCheckPlan(d *DyOrcPlan, self string, docs map[string]formats.Document) formats.ErrorList {
	defined := func(w *formats.Workload) ([]string, bool) {
		wf := WorkflowsOf(w)
		if wf == nil {
			return nil, false
		}
		return slices.Collect(maps.Keys(wf.Services)), true
	}
	return formats.CheckWorkloadRefs(docs, defined, d.Deployments, func(i int, s *ServiceDeployment) (string, string) {
		return formats.Field(formats.Index(PlanKey+".deployments", i), "service"), s.Service
	}, "not a workflow service of %s")
}

// checkWorkflows checks the `workflows` section of a workload.
func checkWorkflows(wf *Workflows) formats.ErrorList {
	var c formats.Checker
	validateWorkflows(&c, wf, WorkloadKey)
	return c.Errs()
}

// crossCheckWorkflows checks the workflows against the other files given with them: a
// service with no inline latency must be in a given profile, and every service must fit on
// the largest GPU of the given clusters (DyOrc: a service is hosted whole by one
// totipotent worker).
func crossCheckWorkflows(wf *Workflows, self string, docs map[string]formats.Document) formats.ErrorList {
	var c formats.Checker
	profiles, profiled := formats.ProfiledModels(docs, true, false)
	clusters, cls := formats.Given[formats.Cluster](docs)
	var largest int64
	for _, cl := range cls {
		for _, g := range cl.GPUs {
			m := g.MemoryBytes
			if m == 0 {
				m = formats.KnownGPUMemory(g.Type)
			}
			largest = max(largest, m)
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
			if need := ServiceBytes(s); need > largest {
				c.Add(formats.Field(formats.KeyPath(sp, name), "weights_gb"), s.WeightsGB,
					"service needs %.1f GB (weights + activations) but the largest GPU in %s has %.1f GB", float64(need)/1e9, strings.Join(clusters, ", "), float64(largest)/1e9)
			}
		}
	}
	return c.Errs()
}

// UsedModels names the profiled models the workflows use: services with no inline latency
// (formats.ModelUser, for the profile-coverage check).
func (workloadSection) UsedModels(doc formats.Document) (dnn, llm []string) {
	w, _ := doc.(*formats.Workload)
	wf := WorkflowsOf(w)
	if wf == nil {
		return nil, nil
	}
	for _, name := range formats.SortedKeys(wf.Services) {
		if wf.Services[name].Latency == nil {
			dnn = append(dnn, name)
		}
	}
	return dnn, nil
}

// validatePlan checks DyOrc's plan section: deployments of known services on the plan's GPU
// types, each (service, GPU) once, and a seed placement that lists each GPU once.
func validatePlan(c *formats.Checker, pl *formats.Plan, d *DyOrcPlan, p string) {
	dp := formats.Field(p, "deployments")
	first := map[[2]string]int{}
	formats.Each(c, dp, "deployment", d.Deployments, func(i int, ip string, s *ServiceDeployment) {
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
	})
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
func (planSection) GPURefs(p *formats.Plan) []formats.GPURef {
	if d := PlanOf(p); d != nil {
		return formats.ListGPURefs(PlanKey+".deployments", d.Deployments, func(x *ServiceDeployment) string { return x.GPU })
	}
	return nil
}

// TraceTargets: a trace given with the workload may name its workflow applications
// (formats.TraceTargeter).
func (workloadSection) TraceTargets(doc formats.Document) (targets, classes []string, complete bool) {
	w, _ := doc.(*formats.Workload)
	if wf := WorkflowsOf(w); wf != nil {
		targets = formats.SortedKeys(wf.Apps)
	}
	return targets, nil, true
}

// TraceTargets: a DyOrc plan serves its workload's workflow applications, which it does not
// name, so a trace given with it is not checked against it (complete is false).
func (planSection) TraceTargets(formats.Document) (targets, classes []string, complete bool) {
	return nil, nil, false
}
