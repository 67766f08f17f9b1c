// Package intree is a test helper: the in-tree registry's part of the file formats in one
// value, the sections of PPipe, PARD, DyOrc, CascadeServe and QLM and the registry's shared
// LLM vocabulary (`llm_classes`, internal/registry/systems.Vocabulary) as one formats.SectionSet,
// for the tests of packages below the system registry (the data planes', the simulator's,
// serve's, the planners') that read bundled plans and workloads. Production code takes the
// sections from the one registry (internal/registry/systems Registry.Sections), handed down where a
// package sits below it (serve.Options.Sections, load.Options.Sections, bench.Env.Sections):
// nothing falls back to this set. internal/layering checks that only tests and test-helper
// packages import it, and internal/registry/systems that it is exactly what the registry registers.
package intree

import (
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/formats/sections/pardsec"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
)

// Systems names the in-tree systems, in the registry's order.
var Systems = []string{"ppipe", "pard", "dyorc", "cascade", "qlm"}

// Sections returns the in-tree systems' sections, then the shared vocabulary's, in the
// registry's order (a new value each call: callers may extend it, as a test adding a toy
// system does).
func Sections() *formats.SectionSet {
	return &formats.SectionSet{
		Systems:  append([]string(nil), Systems...),
		Plan:     []formats.Section{ppipesec.PlanSection, pardsec.PlanSection, dyorcsec.PlanSection, cascadesec.PlanSection, qlmsec.PlanSection},
		Workload: []formats.Section{ppipesec.WorkloadSection, pardsec.WorkloadSection, dyorcsec.WorkloadSection, cascadesec.WorkloadSection, llmspec.WorkloadSection},
	}
}
