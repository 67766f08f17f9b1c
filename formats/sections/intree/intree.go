// Package intree is the in-tree systems' part of the file formats in one value: the
// sections of PPipe, PARD, DyOrc, CascadeServe and QLM as one formats.SectionSet. A plan or a
// workload is read only with the registered systems' sections (formats.ErrNoSections); the
// commands take them from the system registry (internal/systems Registry.Sections), which
// registers exactly these for the five in-tree systems (its tests check that the two agree).
// Packages below the registry — the simulator's and serve's benchmarks, the data planes'
// tests — read the bundled plans with this set instead.
package intree

import (
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/formats/sections/pardsec"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
)

// Systems names the in-tree systems, in the registry's order.
var Systems = []string{"ppipe", "pard", "dyorc", "cascade", "qlm"}

// Sections returns the in-tree systems' sections (a new value each call: callers may
// extend it, as a test adding a toy system does).
func Sections() *formats.SectionSet {
	return &formats.SectionSet{
		Systems:  append([]string(nil), Systems...),
		Plan:     []formats.Section{ppipesec.PlanSection, pardsec.PlanSection, dyorcsec.PlanSection, cascadesec.PlanSection, qlmsec.PlanSection},
		Workload: []formats.Section{ppipesec.WorkloadSection, pardsec.WorkloadSection, dyorcsec.WorkloadSection, cascadesec.WorkloadSection, qlmsec.WorkloadSection},
	}
}
