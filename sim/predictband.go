package sim

import (
	"math"
	"strings"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/llm"
)

// expectedError is the expected-error band a prediction records for an LLM class of model
// (formats.ExpectedError; nil where the plan embeds no profile of it): the bands of the
// validation set's held-out errors in the regime of each embedded profile that serves model
// (llm.BandsFor, a profile on its own: below saturation), the widest where several GPUs
// serve it. A profile serves the class where the deployment runs a GPU of its type and
// count; where none matches (a deployment whose topology names no GPU types), every
// embedded profile of the model counts, which can only widen the band.
func expectedError(plan *formats.Plan, dep *dataplane.Deployment, model string) *formats.ExpectedError {
	if plan == nil || plan.Provenance.Embedded == nil || model == "" {
		return nil
	}
	var ofModel []*formats.LLMProfile
	for i := range plan.Provenance.Embedded.Profiles {
		for j := range plan.Provenance.Embedded.Profiles[i].LLMs {
			if p := &plan.Provenance.Embedded.Profiles[i].LLMs[j]; p.Model == model {
				ofModel = append(ofModel, p)
			}
		}
	}
	serving := ofModel[:0:0]
	for _, p := range ofModel {
		if deploys(dep, p) {
			serving = append(serving, p)
		}
	}
	if len(serving) == 0 {
		serving = ofModel
	}
	var out *formats.ExpectedError
	for _, p := range serving {
		e := toExpectedError(llm.BandsFor(llm.RegimeOf(p), llm.ValidationRuns()))
		if out == nil {
			out = &e
		} else {
			*out = out.Widest(e)
		}
	}
	return out
}

// deploys says whether dep runs a GPU of p's type and tensor-parallel count.
func deploys(dep *dataplane.Deployment, p *formats.LLMProfile) bool {
	if dep == nil {
		return false
	}
	for _, g := range dep.Topo.GPUs {
		if strings.EqualFold(g.Type, p.GPU) && g.Physical() == max(p.GPUCount, 1) {
			return true
		}
	}
	return false
}

// toExpectedError is b as a plan records it (the decode step's band is the TPOT mean's).
func toExpectedError(b llm.Bands) formats.ExpectedError {
	// Hundredths of a percent: finer is noise beside a band read from a few dozen runs.
	r := func(x float64) float64 { return math.Round(x*100) / 100 }
	band := func(x llm.Band) formats.ErrorBand {
		return formats.ErrorBand{LowerPct: r(x.LowerPct), UpperPct: r(x.UpperPct)}
	}
	return formats.ExpectedError{E2EMean: band(b.E2E), TTFTMean: band(b.TTFT), TPOTMean: band(b.ITL), Basis: b.Basis}
}
