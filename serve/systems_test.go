package serve

import "github.com/plan-dev/plan/internal/servetest"

// testPolicies and testDeploy stand in for the system registry (internal/systems).
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
	return o
}
