package kservegrpc

import (
	"github.com/plan-dev/plan/dataplane"
	dpcascade "github.com/plan-dev/plan/dataplane/cascade"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/fixture/servetest"
)

// testPolicies, testDeploy and testSections stand in for the system registry
// (internal/registry/systems): PPipe and PARD (servetest) and CascadeServe
// (TestCascadeAnsweredBy).
var (
	testSections = intree.Sections()
	testPolicies = servetest.Policies(dpcascade.Policies()...)
	testDeploy   = func(p *formats.Plan) (*dataplane.Deployment, string, error) {
		if cascadesec.PlanOf(p) != nil {
			d, err := dpcascade.FromPlan(p)
			return d, dpcascade.PolicyGears, err
		}
		return servetest.Deploy(p)
	}
)
