package serve

import (
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/fixture/servetest"
)

// testPolicies and testDeploy stand in for the system registry (internal/registry/systems), and
// intree's sections for its sections (a test helper: serve itself has no default).
var (
	testPolicies = servetest.Policies(flakySpec)
	testDeploy   = servetest.Deploy
)

// withSystems fills in the registry-provided options a test left out.
func withSystems(o Options) Options {
	if o.Deploy == nil {
		o.Deploy = testDeploy
	}
	if o.Policies == nil {
		o.Policies = testPolicies
	}
	if o.Sections == nil {
		o.Sections = intree.Sections()
	}
	return o
}
