package formats_test

import (
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
)

// The in-tree systems' sections, as internal/registry/systems registers them, for formats' own tests.
func init() { formats.SetInTreeSections(intree.Sections()) }
