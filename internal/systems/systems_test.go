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
		// The shared vocabulary is the registry's: no system registers it as its own.
		"vocabulary as own": {func() system.System {
			s := toysys.System()
			s.Sections.Workload = append(s.Sections.Workload, llmspec.WorkloadSection)
			return s
		}},
		"unknown shared": {func() system.System {
			s := toysys.System()
			s.Sections.Shared = []string{"no_such_vocabulary"}
			return s
		}},
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
	for _, s := range append(InTree(), toysys.System(), system.System{Name: "the registry's vocabulary", Sections: system.Sections{Workload: Vocabulary(), Plan: toysys.System().Sections.Plan}}) {
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

// The LLM vocabulary is the registry's, not QLM's: `llm_classes` is registered once, by the
// registry (Vocabulary, after the systems' own sections), QLM registers no workload section
// and plans it as a shared one, and a workload of LLM classes still goes to QLM's planner.
// A sixth system may plan the same vocabulary beside QLM without claiming it.
func TestLLMVocabularyIsShared(t *testing.T) {
	reg := Default()
	qlm, ok := reg.ByName("qlm")
	if !ok {
		t.Fatal("no qlm system")
	}
	if len(qlm.Sections.Workload) != 0 || strings.Join(qlm.WorkloadSections(), ",") != llmspec.WorkloadKey {
		t.Errorf("qlm registers %d workload sections, plans %v: want none of its own, plans llm_classes", len(qlm.Sections.Workload), qlm.WorkloadSections())
	}
	set := reg.Sections()
	var keys []string
	for _, w := range set.Workload {
		keys = append(keys, w.Key())
	}
	if strings.Join(keys, ",") != "models,pipelines,workflows,cascades,llm_classes" {
		t.Errorf("registered workload sections %v", keys)
	}
	w := llmspec.SetClasses(&formats.Workload{}, []llmspec.LLMClass{{Name: "c"}})
	if s, err := reg.ForWorkload(w); err != nil || s.Name != "qlm" {
		t.Errorf("ForWorkload(llm_classes) = %s, %v: want qlm", s.Name, err)
	}
	other := toysys.System()
	other.Sections.Shared = []string{llmspec.WorkloadKey}
	withOther := New(append(InTree(), other)...) // no panic: planning shared vocabulary claims nothing
	if n := len(withOther.Sections().Workload); n != len(set.Workload)+len(other.Sections.Workload) {
		t.Errorf("with a second LLM planner: %d workload sections registered, want %d (llm_classes once)", n, len(set.Workload)+len(other.Sections.Workload))
	}
}

// The LLM engine replay is the registry's, reached through no system: the in-tree registry
// runs it under vLLM's FCFS scheduling, and a registry whose systems register none of its
// policies has none (the replay then says so) rather than one that fails at its first run.
func TestRegistryEngine(t *testing.T) {
	e := Default().Engine()
	if e == nil || e.Deploy == nil || e.Policy != "qlm-vllm-fcfs" {
		t.Fatalf("Default().Engine() = %+v, want the engine under qlm-vllm-fcfs", e)
	}
	if _, ok := Default().Policies().Lookup(e.Policy); !ok {
		t.Errorf("the engine's policy %q is not registered", e.Policy)
	}
	if e := New(toysys.System()).Engine(); e != nil {
		t.Errorf("a registry of the toy alone: Engine() = %+v, want nil", e)
	}
	e.EngineOnly[0] = "changed"
	if Default().Engine().EngineOnly[0] == "changed" {
		t.Error("Engine() shares its EngineOnly list between calls")
	}
}
