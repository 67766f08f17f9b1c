package formats_test

import (
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
)

// The typed sections validated outside formats, as internal/systems registers them.
func init() {
	formats.SetInTreeSections(&formats.SectionSet{
		Systems:  []string{"dyorc", "qlm"},
		Plan:     []formats.Section{qlmsec.Plan{}, dyorcsec.Plan{}},
		Workload: []formats.Section{qlmsec.Workload{}, dyorcsec.Workload{}},
	})
}
