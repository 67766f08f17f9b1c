package systems

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/internal/system"
	"github.com/plan-dev/plan/internal/systems/toysys"
)

// The registry is a value: a workload section only the toy claims is planned by the toy in
// a registry that has it, and is "no planner" in the in-tree one; nothing is shared between.
func TestRegistryWorkloadSections(t *testing.T) {
	toyWorkload := []byte("apiVersion: plan/v1\nkind: Workload\nmetadata: {name: w}\n" +
		"toy_jobs: {name: jobs, slo: 50ms, rate_rps: 10, latency_us: 100}\n")
	withToy := New(append(InTree(), toysys.System())...)
	w, err := formats.DecodeInto[*formats.Workload]("w.yaml", toyWorkload, withToy.Sections())
	if err != nil {
		t.Fatal(err)
	}
	if got := withToy.WorkloadSections(w); strings.Join(got, ",") != "toy_jobs" {
		t.Errorf("WorkloadSections = %v", got)
	}
	if s, err := withToy.ForWorkload(w); err != nil || s.Name != toysys.Name {
		t.Errorf("ForWorkload = %s, %v", s.Name, err)
	}
	if _, err := Default().ForWorkload(w); err == nil || !strings.HasPrefix(err.Error(), "section toy_jobs: no planner handles it yet") {
		t.Errorf("in-tree ForWorkload: %v", err)
	}
	if _, err := formats.DecodeInto[*formats.Workload]("w.yaml", toyWorkload, Default().Sections()); err == nil ||
		!strings.Contains(err.Error(), "w.yaml: toy_jobs: unknown workload section: no registered system claims it (systems: cascade, dyorc, pard, ppipe, qlm)") {
		t.Errorf("in-tree decode: %v", err)
	}
	// The typed sections, in file order whatever the registry's order.
	mixed := dyorcsec.SetWorkflows(llmspec.SetClasses(ppipesec.SetModels(&formats.Workload{}, []ppipesec.ModelWorkload{{Name: "m"}}), []llmspec.LLMClass{{Name: "c"}}), &dyorcsec.Workflows{})
	if got := Default().WorkloadSections(mixed); strings.Join(got, ",") != "models,llm_classes,workflows" {
		t.Errorf("WorkloadSections = %v", got)
	}
	if got := Default().WorkloadSections(nil); got != nil {
		t.Errorf("WorkloadSections(nil) = %v", got)
	}
}

func TestRegistryDuplicates(t *testing.T) {
	for name, list := range map[string][]func() system.System{
		"name":    {toysys.System, toysys.System},
		"section": {toysys.System, func() system.System { s := toysys.System(); s.Name = "toy2"; return s }},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			var ss []system.System
			for _, f := range list {
				ss = append(ss, f())
			}
			New(ss...)
		})
	}
}

// Every system answers the extension points shared code asks through (formats.RateTargeter,
// formats.GPUCounter): a system whose workload section were no RateTargeter would plan every
// trace window, rate margin and frontier point at its workload's own rates and be predicted
// at its plan's stated rate; one whose plan section were no GPUCounter would get an empty
// fleet under --objective cost and pass `plan check`'s fleet check with any count. The toy
// proves a sixth system answers them as the five do.
func TestSystemsAnswerTheExtensionPoints(t *testing.T) {
	for _, s := range append(InTree(), toysys.System()) {
		for _, w := range s.Sections.Workload {
			if _, ok := w.(formats.RateTargeter); !ok {
				t.Errorf("%s: workload section %q (%T) is no formats.RateTargeter", s.Name, w.Key(), w)
			}
		}
		if _, ok := s.Sections.Plan.(formats.GPUCounter); !ok {
			t.Errorf("%s: plan section %q (%T) is no formats.GPUCounter", s.Name, s.Sections.Plan.Key(), s.Sections.Plan)
		}
	}
}
