package systems

import (
	"fmt"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/fleet"
)

// maxFitLines bounds the profile-fit lines listed per model.
const maxFitLines = 5

// VerifyPlan is the one list of checks a plan must pass before anything runs it: `plan
// check` prints them as its verify stage, and Registry.Deploy (which `serve` calls at start
// and on every reload — PUT /v1/plan, SIGHUP — and `simulate` before a run) refuses a plan
// failing any of them, with the same line. They are the system's verifier (every constraint
// of its plan section, checked without the solver), the recorded fleet against the sections,
// the cluster and its prices (fleet.Verify), and the embedded inputs against the input digest
// the plan records (inputs edited after solving). ck may be nil (a system without a checker):
// the shared checks still run. The result lists passed checks too (OK), in the order `plan
// check` prints them.
//
// `plan check`'s prediction stage (a simulation of the plan at its own rates) is not here:
// it costs a simulation per plan, so it stays check-only; serve runs the plan for real.
func VerifyPlan(ck planner.Checker, p *formats.Plan) []planner.Check {
	var out []planner.Check
	if ck != nil {
		vs, summary := ck.Verify(p)
		for _, v := range vs {
			out = append(out, planner.Check{Line: v, Name: "constraint"})
		}
		if len(vs) == 0 {
			// The value is the number of violated constraints, the limit none.
			var zero float64
			out = append(out, planner.Check{OK: true, Line: summary, Name: "constraints", Value: &zero, Limit: &zero})
		}
	}
	if p.Fleet != nil {
		vs := fleet.Verify(p)
		for _, v := range vs {
			out = append(out, planner.Check{Line: v, Name: "fleet"})
		}
		if len(vs) == 0 {
			c := p.Fleet.CostPerHour
			out = append(out, planner.Check{OK: true, Line: "fleet: " + fleet.Describe(p.Fleet) + ": GPUs used, available, prices and cost per hour", Name: "cost_per_hour", Value: &c, Limit: &c})
		}
	}
	out = append(out, profileFit(p)...)
	if e := p.Provenance.Embedded; e != nil && p.Provenance.InputDigest != "" {
		d, err := formats.Digest(e)
		switch {
		case err != nil:
			out = append(out, planner.Check{Line: "input digest: " + err.Error(), Name: "input_digest"})
		case d != p.Provenance.InputDigest:
			out = append(out, planner.Check{Line: fmt.Sprintf("input digest: embedded inputs hash to %s, the plan records %s (inputs edited after solving)", short(d), short(p.Provenance.InputDigest)), Name: "input_digest"})
		}
	}
	return out
}

// profileFit says which values the plan was verified on where they are not the measured
// ones: the verification, like the solve, uses the embedded profiles' values, which are the
// measurements except where the profile fit replaced an outlier (formats.FitProfile). One
// line per replaced value, the measured value beside the one used; these never fail.
func profileFit(p *formats.Plan) []planner.Check {
	e := p.Provenance.Embedded
	if e == nil {
		return nil
	}
	var out []planner.Check
	for _, pr := range e.Profiles {
		for i := range pr.Models {
			m := &pr.Models[i]
			rs := m.Replaced()
			for j, r := range rs {
				if j == maxFitLines {
					out = append(out, planner.Check{OK: true, Name: "profile_fit", Subject: m.Name,
						Line: fmt.Sprintf("profile fit (%s): model %s: and %d more values planned on instead of the measured ones (provenance.embedded: raw_block_us, raw_total_us)", m.Fit, m.Name, len(rs)-j)})
					break
				}
				out = append(out, planner.Check{OK: true, Name: "profile_fit", Subject: m.Name,
					Line: fmt.Sprintf("profile fit (%s): model %s on %s", m.Fit, m.Name, r)})
			}
		}
	}
	return out
}

// short cuts a digest for a message.
func short(d string) string {
	if len(d) > 19 {
		return d[:19] + "…"
	}
	return d
}
