package serve

import (
	"fmt"

	"github.com/plan-dev/plan/dataplane"
	dppard "github.com/plan-dev/plan/dataplane/pard"
	dpppipe "github.com/plan-dev/plan/dataplane/ppipe"
	"github.com/plan-dev/plan/formats"
)

// testPolicies and testDeploy stand in for the in-tree system registry (internal/systems),
// which serve's tests cannot import without a cycle through the benches.
var testPolicies = dataplane.NewRegistry(append(append(dpppipe.Policies(), dppard.Policies()...), flakySpec)...)

func testDeploy(p *formats.Plan) (*dataplane.Deployment, string, error) {
	switch {
	case p.PPipe != nil:
		d, err := dpppipe.FromPlan(p)
		return d, dpppipe.DefaultPolicy, err
	case p.PARD != nil:
		d, err := dppard.FromPARDPlan(p)
		return d, p.PARD.Policy, err
	}
	return nil, "", fmt.Errorf("test deployer: plan has no ppipe or pard section")
}

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
