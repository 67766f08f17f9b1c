package systems

import (
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/internal/registry/systems/toysys"
)

// The registry is a value: a workload section only the toy claims is planned by the toy in
// a registry that has it, and is "no planner" in the in-tree one; nothing is shared between.
func TestRegistryWorkloadSections(t *testing.T) {
	toyWorkload := []byte("apiVersion: plan/v1\nkind: Workload\nmetadata: {name: w}\n" +
		"toy_jobs: {name: jobs, slo: 50ms, rate_rps: 10, latency_us: 100}\n")
	withToy := New(append(BuildInTree(), toy())...)
	w, err := formats.DecodeInto[*formats.Workload]("w.yaml", toyWorkload, withToy.Sections())
	if err != nil {
		t.Fatal(err)
	}
	if got := withToy.WorkloadSections(w); strings.Join(got, ",") != "toy_jobs" {
		t.Errorf("WorkloadSections = %v", got)
	}
	if s, err := withToy.ForWorkload(w); err != nil || s.Name() != toysys.Name {
		t.Errorf("ForWorkload = %v, %v", s, err)
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
	for name, list := range map[string][]func() system.Plugin{
		"name":    {toy, toy},
		"section": {toy, func() system.Plugin { return altered{Plugin: toy(), name: "toy2"} }},
		// The shared vocabulary is the registry's: no system registers it as its own.
		"vocabulary as own": {func() system.Plugin {
			return altered{Plugin: toy(), secs: func(s system.Sections) system.Sections {
				s.Workload = append(s.Workload, llmspec.WorkloadSection)
				return s
			}}
		}},
		"unknown shared": {func() system.Plugin {
			return altered{Plugin: toy(), secs: func(s system.Sections) system.Sections {
				s.Shared = []string{"no_such_vocabulary"}
				return s
			}}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			var ss []system.Plugin
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
	vocabulary := altered{Plugin: toy(), name: "the registry's vocabulary", secs: func(s system.Sections) system.Sections {
		return system.Sections{Workload: Vocabulary(), Plan: s.Plan}
	}}
	for _, s := range append(BuildInTree(), toy(), vocabulary) {
		secs := s.Sections()
		for _, w := range secs.Workload {
			if _, ok := w.(formats.RateTargeter); !ok {
				t.Errorf("%s: workload section %q (%T) is no formats.RateTargeter", s.Name(), w.Key(), w)
			}
		}
		if _, ok := secs.Plan.(formats.GPUCounter); !ok {
			t.Errorf("%s: plan section %q (%T) is no formats.GPUCounter", s.Name(), secs.Plan.Key(), secs.Plan)
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
	if secs := qlm.Sections(); len(secs.Workload) != 0 || strings.Join(secs.WorkloadKeys(), ",") != llmspec.WorkloadKey {
		t.Errorf("qlm registers %d workload sections, plans %v: want none of its own, plans llm_classes", len(secs.Workload), secs.WorkloadKeys())
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
	if s, err := reg.ForWorkload(w); err != nil || s.Name() != "qlm" {
		t.Errorf("ForWorkload(llm_classes) = %v, %v: want qlm", s, err)
	}
	other := altered{Plugin: toy(), secs: func(s system.Sections) system.Sections {
		s.Shared = []string{llmspec.WorkloadKey}
		return s
	}}
	withOther := New(append(BuildInTree(), other)...) // no panic: planning shared vocabulary claims nothing
	if n := len(withOther.Sections().Workload); n != len(set.Workload)+len(other.Sections().Workload) {
		t.Errorf("with a second LLM planner: %d workload sections registered, want %d (llm_classes once)", n, len(set.Workload)+len(other.Sections().Workload))
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
	if e := New(toy()).Engine(); e != nil {
		t.Errorf("a registry of the toy alone: Engine() = %+v, want nil", e)
	}
	e.EngineOnly[0] = "changed"
	if Default().Engine().EngineOnly[0] == "changed" {
		t.Error("Engine() shares its EngineOnly list between calls")
	}
}

// toy is the toy system, built with an empty handle (it needs nothing of it).
func toy() system.Plugin { return toysys.New(system.Handle{}) }

// altered is a system under another name or with other sections (secs, given its own): what
// the registry's checks at New and the section tests build. It is a bare system.Plugin, its
// extension points hidden.
type altered struct {
	system.Plugin
	name string
	secs func(system.Sections) system.Sections
}

func (a altered) Name() string {
	if a.name != "" {
		return a.name
	}
	return a.Plugin.Name()
}

func (a altered) Sections() system.Sections {
	s := a.Plugin.Sections()
	if a.secs != nil {
		s = a.secs(s)
	}
	return s
}

// Every system's extension points are what its constructor says it has: the registry and
// the commands find each one by type assertion, so a method lost in a refactor (a system no
// longer Sizing, say) would silently change what the autopilot or conformance does.
func TestSystemsImplementTheirExtensionPoints(t *testing.T) {
	want := map[string]string{
		"ppipe":     "planning deploying sampling checking benching exporting onnx",
		"pard":      "planning deploying sampling checking sizing benching exporting",
		"dyorc":     "planning deploying sampling checking sizing benching exporting serving",
		"cascade":   "planning deploying sampling checking benching exporting",
		"qlm":       "planning deploying sampling checking sizing benching exporting serving",
		toysys.Name: "planning deploying checking exporting",
	}
	for _, s := range append(BuildInTree(), toy()) {
		var got []string
		for _, p := range []struct {
			name string
			ok   bool
		}{
			{"planning", is[system.Planning](s)}, {"deploying", is[system.Deploying](s)}, {"sampling", is[system.Sampling](s)},
			{"checking", is[system.Checking](s)}, {"sizing", is[system.Sizing](s)}, {"benching", is[system.Benching](s)},
			{"exporting", is[system.Exporting](s)}, {"serving", is[system.Serving](s)}, {"onnx", is[system.ONNXCutting](s)},
		} {
			if p.ok {
				got = append(got, p.name)
			}
		}
		if g := strings.Join(got, " "); g != want[s.Name()] {
			t.Errorf("%s implements %q, want %q", s.Name(), g, want[s.Name()])
		}
	}
}

func is[T any](p system.Plugin) bool {
	_, ok := p.(T)
	return ok
}
