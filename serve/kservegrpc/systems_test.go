package kservegrpc

import (
	"fmt"

	"github.com/plan-dev/plan/dataplane"
	dppard "github.com/plan-dev/plan/dataplane/pard"
	dpppipe "github.com/plan-dev/plan/dataplane/ppipe"
	"github.com/plan-dev/plan/formats"
)

// testPolicies and testDeploy stand in for the system registry (internal/systems) as in
// serve's tests: these tests need PPipe and PARD plans only, and must not fail when another
// system's packages are mid-change.
var testPolicies = dataplane.NewRegistry(append(dpppipe.Policies(), dppard.Policies()...)...)

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
