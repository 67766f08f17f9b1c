package sim

import (
	"github.com/plan-dev/plan/dataplane"
	dppard "github.com/plan-dev/plan/dataplane/pard"
	dpppipe "github.com/plan-dev/plan/dataplane/ppipe"
)

// testPolicies is the registry the simulator's tests run: the PPipe and PARD policies.
var testPolicies = dataplane.NewRegistry(append(dpppipe.Policies(), dppard.Policies()...)...)

func newTestPolicy(cfg dataplane.Config) (dataplane.Policy, error) {
	return testPolicies.New(nil, cfg, "ppipe")
}
