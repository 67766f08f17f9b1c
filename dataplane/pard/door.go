package pard

import "github.com/plan-dev/plan/dataplane"

// DoorPipeline is a PARD pipeline policy whose drop rule is Eq. 3 (PARD and its ablations):
// its estimate gives a sound door for a wall-clock driver (dataplane.Door). Baselines with
// other rules (Nexus, Clipper++, OC, budgets) are plain Pipelines: the driver's own estimate
// guards their door.
type DoorPipeline struct{ *Pipeline }

var _ dataplane.Door = DoorPipeline{}

// Door implements dataplane.Door with the broker's Eq. 3 test (PARD §4.2) as it would run
// for a request of app arriving at `at`: at the entry module it is tested at t_b with
// l = (t_e − t_r) + d + L_sub against the SLO, where t_e, the expected start of the batch it
// joins, is no earlier than the earliest expected start over the module's serving workers
// (its join-shortest-queue worker may be later; requests queued ahead only delay it). So a
// request this refuses is one the broker would drop on arrival at its first module, before
// any GPU time is spent on it; L_sub is the value published at the last tick, as the broker
// uses it. retryAfter is the earliest arrival the same state would let through.
func (p DoorPipeline) Door(_ dataplane.View, app dataplane.AppID, at, now dataplane.Time) (bool, dataplane.DropReason, dataplane.Time) {
	if p.dep == nil || int(app) < 0 || int(app) >= len(p.apps) {
		return true, "", 0
	}
	a := &p.apps[app]
	if a.entry == dataplane.NoStage || int(a.entry) >= len(p.mods) {
		return true, "", 0
	}
	m := &p.mods[a.entry]
	if !m.used || len(m.workers) == 0 || p.dep.Stages[a.entry].SkipProb > 0 || m.preds > 1 {
		// A skipped or joined entry is not where the request is first tested.
		return true, "", 0
	}
	te := dataplane.Never
	for _, w := range m.workers {
		pw := &p.workers[w]
		if pw.activeAt == dataplane.Never || pw.down {
			continue // not provisioned, or failed
		}
		te = min(te, max(pw.expectedStart(now), pw.activeAt))
	}
	if te == dataplane.Never {
		return true, "", 0 // nothing serves yet: the broker decides when a worker starts
	}
	rest := m.d + m.lsub
	if rest > m.slo {
		// Every request is dropped at this module until L_sub is re-published.
		return false, DropEstimate, now + m.slo
	}
	if max(te, at)-at+rest <= m.slo {
		return true, "", 0
	}
	return false, DropEstimate, te + rest - m.slo
}

// PipelineOf returns the pipeline behind a policy the registry built (nil if pol is not one).
func PipelineOf(pol dataplane.Policy) *Pipeline {
	switch p := pol.(type) {
	case *Pipeline:
		return p
	case DoorPipeline:
		return p.Pipeline
	}
	return nil
}
