// Package systems is the in-tree registry of serving systems: one explicit list (as
// kube-scheduler's in-tree plugin registry), no init() side effects. Commands look systems up
// here — by workload section for `plan solve`, by plan section for simulate, serve, check and
// export, by name for `plan bench` — and never name one themselves. Adding a system means
// new packages (planner, data plane, bench, and a glue package under internal/registry/systems whose
// constructor, a system.Factory, builds a system.Plugin implementing the extension points it
// has) and one line in InTree.
package systems

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/internal/registry/systems/cascadesys"
	"github.com/plan-dev/plan/internal/registry/systems/dyorcsys"
	"github.com/plan-dev/plan/internal/registry/systems/dyorcsys/dyorcsim"
	"github.com/plan-dev/plan/internal/registry/systems/pardsys"
	"github.com/plan-dev/plan/internal/registry/systems/ppipesys"
	"github.com/plan-dev/plan/internal/registry/systems/qlmsys"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/sim"
)

// InTree lists the built-in systems' constructors, in the order of help and of lookups (as
// kube-scheduler's in-tree plugin registry): each is handed its dependencies at
// construction, a system.Handle (Default passes InTreeHandle's).
func InTree() []system.Factory {
	return []system.Factory{
		ppipesys.New,
		pardsys.New,
		dyorcsys.New,
		cascadesys.New,
		qlmsys.New,
	}
}

// InTreeHandle is the handle the in-tree systems are built with: the planners that size
// plans by simulation (QLM, DyOrc) get the simulator here, the one place planner and
// simulator meet (DESIGN.md's layering), never through package state.
func InTreeHandle() system.Handle {
	return system.Handle{Point: sim.PoissonPoint, Probe: sim.PoissonProbe, Predict: dyorcsim.PredictAtRates}
}

// Build constructs each factory's system with h, in the order given.
func Build(h system.Handle, fs ...system.Factory) []system.Plugin {
	out := make([]system.Plugin, len(fs))
	for i, f := range fs {
		out[i] = f(h)
	}
	return out
}

// BuildInTree is the in-tree systems, built with InTreeHandle: what Default registers, and
// what a test extends with a system of its own before calling New.
func BuildInTree() []system.Plugin { return Build(InTreeHandle(), InTree()...) }

// Vocabulary are the workload sections the registry registers itself: vocabularies shared
// by systems and owned by none. `llm_classes` (formats/llmspec) states LLM request classes,
// which QLM's planner, the deployment search (planner/llmdeploy), `plan simulate --llm`'s
// engine replay and the LLM benches all read; QLM is one policy over them. A system's
// planner that plans one names its key in system.Sections.Shared.
func Vocabulary() []formats.Section {
	return []formats.Section{llmspec.WorkloadSection}
}

// Registry is a set of systems: the value every command takes (cli's options), built from
// InTree by Default, or from InTree plus more by a test (a toy sixth system, InTreeWith). It
// is never changed once built.
type Registry struct {
	systems []system.Plugin
	// shared are the registry's own workload sections (Vocabulary).
	shared []formats.Section
}

// New builds a registry of systems, in the order given (the order of help and of lookups),
// with the shared Vocabulary. Two systems with one name, two registering a section
// (system.Sections) with one key, a system registering a Vocabulary section as its own, or
// one naming a shared section the registry does not have, panic: a programming error in the
// systems list, as dataplane.NewRegistry's duplicates.
func New(systems ...system.Plugin) *Registry {
	shared := Vocabulary()
	names, secs := map[string]bool{}, map[string]string{}
	for _, w := range shared {
		secs["workload "+w.Key()] = "the registry (shared vocabulary)"
	}
	claim := func(sys, what, key string) {
		if other, dup := secs[what+" "+key]; dup {
			panic(fmt.Sprintf("systems: %s section %q claimed by %s and %s", what, key, other, sys))
		}
		secs[what+" "+key] = sys
	}
	for _, s := range systems {
		name, secs := s.Name(), s.Sections()
		if names[name] {
			panic(fmt.Sprintf("systems: system %q registered twice", name))
		}
		names[name] = true
		if secs.Plan != nil {
			claim(name, "plan", secs.Plan.Key())
		}
		for _, w := range secs.Workload {
			claim(name, "workload", w.Key())
		}
		for _, key := range secs.Shared {
			if !slices.ContainsFunc(shared, func(w formats.Section) bool { return w.Key() == key }) {
				panic(fmt.Sprintf("systems: system %s plans shared section %q, which the registry's vocabulary lacks", name, key))
			}
		}
	}
	return &Registry{systems: slices.Clone(systems), shared: shared}
}

// Default is the registry of the in-tree systems.
func Default() *Registry { return New(BuildInTree()...) }

// InTreeWith is the registry of the in-tree systems and then those fs build, all with the
// in-tree handle: a sixth system registered beside the five (a test's toy) is this one call.
func InTreeWith(fs ...system.Factory) *Registry {
	return New(Build(InTreeHandle(), append(InTree(), fs...)...)...)
}

// Systems lists the registry's systems.
func (r *Registry) Systems() []system.Plugin { return slices.Clone(r.systems) }

// Policies is the policy registry of every in-tree system.
func Policies() *dataplane.Registry { return Default().Policies() }

// Policies is the policy registry of every system of r.
func (r *Registry) Policies() *dataplane.Registry {
	var specs []dataplane.PolicySpec
	for _, s := range r.systems {
		if d, ok := s.(system.Deploying); ok {
			specs = append(specs, d.Policies()...)
		}
	}
	return dataplane.NewRegistry(specs...)
}

// Frontends returns a fresh value of every in-tree system's serve front end.
func Frontends() []serve.Frontend { return Default().Frontends() }

// Frontends returns a fresh value of every system's serve front end. `plan serve`
// registers them all: a reload may move the server to another system's plan.
func (r *Registry) Frontends() []serve.Frontend {
	var fs []serve.Frontend
	for _, s := range r.systems {
		if sv, ok := s.(system.Serving); ok {
			fs = append(fs, sv.Frontends()...)
		}
	}
	return fs
}

// Sections is what the registry and its systems contribute to the file formats: the systems'
// names, the sections they register beyond formats' typed ones, then the registry's shared
// Vocabulary. Every command decodes plans and workloads with it (formats.ReadInto), so a
// section no one registers is an error that names the systems.
func (r *Registry) Sections() *formats.SectionSet {
	set := &formats.SectionSet{}
	for _, s := range r.systems {
		secs := s.Sections()
		set.Systems = append(set.Systems, s.Name())
		if secs.Plan != nil {
			set.Plan = append(set.Plan, secs.Plan)
		}
		set.Workload = append(set.Workload, secs.Workload...)
	}
	set.Workload = append(set.Workload, r.shared...)
	return set
}

// WorkloadSections lists the non-empty sections of a workload (nil = none given), typed and
// registered alike (formats.Workload.SectionKeys).
func WorkloadSections(w *formats.Workload) []string { return Default().WorkloadSections(w) }

// WorkloadSections lists the sections w has (nil when w is nil): the typed ones in file
// order, then the registered ones (formats.Workload.SectionKeys). ForWorkload matches them
// against each system's WorkloadSections and names those no system plans in its error.
func (r *Registry) WorkloadSections(w *formats.Workload) []string {
	return w.SectionKeys()
}

// ForWorkload picks the in-tree system for w (Registry.ForWorkload).
func ForWorkload(w *formats.Workload) (system.Planning, error) { return Default().ForWorkload(w) }

// ForWorkload picks the system whose planner handles every section w has (w nil: the one
// that plans without a workload). A workload no planner handles, or mixing sections no
// single planner handles, is an error naming the sections.
func (r *Registry) ForWorkload(w *formats.Workload) (system.Planning, error) {
	secs := r.WorkloadSections(w)
	var handles []string
	for _, sys := range r.systems {
		s, ok := sys.(system.Planning)
		if !ok {
			continue
		}
		if len(secs) == 0 {
			if s.DefaultWorkload() {
				return s, nil
			}
			continue
		}
		keys := s.Sections().WorkloadKeys()
		all := true
		for _, sec := range secs {
			all = all && slices.Contains(keys, sec)
		}
		if all {
			return s, nil
		}
		handles = append(handles, fmt.Sprintf("%s (%s)", s.Name(), strings.Join(keys, ", ")))
	}
	if len(secs) == 0 {
		return nil, fmt.Errorf("the workload has no section to plan: it needs one of %s", strings.Join(handles, "; "))
	}
	if len(secs) > 1 {
		return nil, fmt.Errorf("sections %s: no single planner handles them together (planners: %s): split the workload into one file per system", strings.Join(secs, ", "), strings.Join(handles, "; "))
	}
	return nil, fmt.Errorf("section %s: no planner handles it yet (planners: %s)", secs[0], strings.Join(handles, "; "))
}

// ForPlan picks the in-tree system for p (Registry.ForPlan).
func ForPlan(p *formats.Plan) (system.Plugin, error) { return Default().ForPlan(p) }

// ForPlan picks the system whose plan section the plan carries. A plan with no known
// section, or with several, is an error.
func (r *Registry) ForPlan(p *formats.Plan) (system.Plugin, error) {
	var found []system.Plugin
	var known []string
	for _, s := range r.systems {
		secs := s.Sections()
		if secs.Plan == nil {
			continue
		}
		known = append(known, secs.PlanKey())
		if secs.HasPlan(p) {
			found = append(found, s)
		}
	}
	sort.Strings(known)
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, fmt.Errorf("the plan has no section any system serves (sections with a deployer: %s)", strings.Join(known, ", "))
	}
	var names []string
	for _, s := range found {
		names = append(names, s.Sections().PlanKey())
	}
	return nil, fmt.Errorf("the plan has sections %s: a plan carries one system's section", strings.Join(names, ", "))
}

// Deploy builds a plan's deployment with its in-tree system's deployer (Registry.Deploy).
func Deploy(p *formats.Plan) (*dataplane.Deployment, string, error) { return Default().Deploy(p) }

// Deploy builds a plan's deployment with its system's deployer and names the plan's
// default policy. serve and load take it as their plan→deployment function.
func (r *Registry) Deploy(p *formats.Plan) (*dataplane.Deployment, string, error) {
	s, err := r.ForPlan(p)
	if err != nil {
		return nil, "", formats.ErrorList{{Path: "", Rule: err.Error()}}
	}
	d, ok := s.(system.Deploying)
	if !ok {
		return nil, "", formats.ErrorList{{Path: s.Sections().PlanKey(), Rule: fmt.Sprintf("system %s cannot deploy plans yet", s.Name())}}
	}
	// A plan `plan check` fails is no plan to run: serve started with and reloaded to plans
	// breaking their own system's constraints, an edited fleet or edited embedded inputs, and
	// simulate ran them. VerifyPlan is the one list both use (check adds only its
	// simulation); every failure is a problem of the plan, named with check's own line.
	var errs formats.ErrorList
	for _, c := range VerifyPlan(system.CheckerOf(s), p) {
		if c.OK {
			continue
		}
		path := s.Sections().PlanKey()
		switch c.Name {
		case "fleet":
			path = "fleet"
		case "input_digest":
			path = "provenance.input_digest"
		}
		errs = append(errs, &formats.FieldError{Path: path, Rule: "verify: " + c.Line + " (plan check fails this plan)"})
	}
	if len(errs) > 0 {
		return nil, "", errs
	}
	return d.Deploy(p)
}

// ONNXCuts asks the plan's system what onnx workers run (worker.ONNXCuts): "" when the system
// cuts no model (each stage runs a whole model), or when no system serves the plan (the
// server's deployer reports that).
func (r *Registry) ONNXCuts(p *formats.Plan, dep *dataplane.Deployment) (string, [][2]int, error) {
	s, err := r.ForPlan(p)
	if err != nil {
		return "", nil, nil
	}
	c, ok := s.(system.ONNXCutting)
	if !ok {
		return "", nil, nil
	}
	return c.ONNXCuts(p, dep)
}

// ByName returns the in-tree system called name.
func ByName(name string) (system.Plugin, bool) { return Default().ByName(name) }

// ByName returns the system of r called name.
func (r *Registry) ByName(name string) (system.Plugin, bool) {
	for _, s := range r.systems {
		if s.Name() == name {
			return s, true
		}
	}
	return nil, false
}
