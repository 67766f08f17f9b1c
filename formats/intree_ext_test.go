package formats_test

import (
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
)

// The typed sections validated outside formats, as internal/systems registers them.
func init() {
	formats.SetInTreeSections(&formats.SectionSet{
		Systems:  []string{"dyorc"},
		Plan:     []formats.Section{dyorcsec.Plan{}},
		Workload: []formats.Section{dyorcsec.Workload{}},
	})
}
