package formats_test

import (
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/formats/sections/pardsec"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
)

// The typed sections validated outside formats, as internal/systems registers them.
func init() {
	formats.SetInTreeSections(&formats.SectionSet{
		Systems:  []string{"cascade", "dyorc", "pard", "ppipe", "qlm"},
		Plan:     []formats.Section{ppipesec.Plan{}, pardsec.Plan{}, cascadesec.Plan{}, qlmsec.Plan{}, dyorcsec.Plan{}},
		Workload: []formats.Section{ppipesec.Workload{}, pardsec.Workload{}, cascadesec.Workload{}, qlmsec.Workload{}, dyorcsec.Workload{}},
	})
}
