package load

import (
	"github.com/plan-dev/plan/dataplane"
	dpcascade "github.com/plan-dev/plan/dataplane/cascade"
	dpdyorc "github.com/plan-dev/plan/dataplane/dyorc"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/fixture/servetest"
)

// testPolicies, testDeploy and testSections stand in for the system registry
// (internal/registry/systems): PPipe and PARD (servetest), CascadeServe (TestAgreementCascade) and DyOrc
// (TestAgreementDyOrc).
var (
	testSections = intree.Sections()
	testPolicies = servetest.Policies(append(dpcascade.Policies(), dpdyorc.Policies()...)...)
	testDeploy   = func(p *formats.Plan) (*dataplane.Deployment, string, error) {
		if cascadesec.PlanOf(p) != nil {
			d, err := dpcascade.FromPlan(p)
			return d, dpcascade.PolicyGears, err
		}
		if dyorcsec.PlanOf(p) != nil {
			d, err := dpdyorc.FromPlan(p)
			return d, "dyorc", err
		}
		return servetest.Deploy(p)
	}
)
