// Package servetest gives the serving packages' tests a plan→deployment function and a policy
// registry for PPipe and PARD plans without the full system registry (internal/systems): those
// tests need only these two systems, and must keep building while another system's packages
// change.
package servetest

import (
	"fmt"

	"github.com/plan-dev/plan/dataplane"
	dppard "github.com/plan-dev/plan/dataplane/pard"
	dpppipe "github.com/plan-dev/plan/dataplane/ppipe"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/pardsec"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// Policies is a registry of the PPipe and PARD policies plus extra (test-only) ones.
func Policies(extra ...dataplane.PolicySpec) *dataplane.Registry {
	specs := append(dpppipe.Policies(), dppard.Policies()...)
	return dataplane.NewRegistry(append(specs, extra...)...)
}

// Deploy builds the deployment of a PPipe or PARD plan and names its default policy.
func Deploy(p *formats.Plan) (*dataplane.Deployment, string, error) {
	switch {
	case ppipesec.PlanOf(p) != nil:
		d, err := dpppipe.FromPlan(p)
		return d, dpppipe.DefaultPolicy, err
	case pardsec.PlanOf(p) != nil:
		d, err := dppard.FromPARDPlan(p)
		return d, pardsec.PlanOf(p).Policy, err
	}
	return nil, "", fmt.Errorf("servetest: the plan has no ppipe or pard section")
}

// ONNXCuts is PPipe's answer to what onnx workers run (dataplane/ppipe.ONNXCuts): the one
// system of these tests that cuts a model into stages.
func ONNXCuts(p *formats.Plan, dep *dataplane.Deployment) (string, [][2]int, error) {
	return dpppipe.ONNXCuts(p, dep)
}
