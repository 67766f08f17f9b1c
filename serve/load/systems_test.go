package load

import "github.com/plan-dev/plan/internal/servetest"

// testPolicies and testDeploy stand in for the system registry (internal/systems).
var (
	testPolicies = servetest.Policies()
	testDeploy   = servetest.Deploy
)
