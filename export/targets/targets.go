// Package targets is the in-tree registry of export targets: one explicit list, as
// internal/registry/systems is of systems (no init() side effects). `plan export --to` accepts these
// names, and each system's exporter package asks this registry which targets render its
// layout. A new target is a package of its own plus one line here.
package targets

import (
	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/export/gateway"
)

var inTree = export.MustRegistry(
	export.TritonTarget,
	export.KServeTarget,
	export.RayTarget,
	gateway.Target,
)

// Registry returns the in-tree targets.
func Registry() *export.Registry { return inTree }
