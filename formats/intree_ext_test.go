package formats_test

import (
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
)

// The typed sections validated outside formats, as internal/systems registers them.
func init() {
	formats.SetInTreeSections(&formats.SectionSet{
		Systems:  []string{"cascade", "dyorc", "qlm"},
		Plan:     []formats.Section{cascadesec.Plan{}, qlmsec.Plan{}, dyorcsec.Plan{}},
		Workload: []formats.Section{cascadesec.Workload{}, qlmsec.Workload{}, dyorcsec.Workload{}},
	})
}
