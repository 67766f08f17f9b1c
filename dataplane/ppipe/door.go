package ppipe

import (
	"math"

	"github.com/plan-dev/plan/dataplane"
)

var _ dataplane.Door = (*PPipe)(nil)

// Door implements dataplane.Door: a request of app arriving at `at` is refused when no
// pipeline could finish even the smallest batch the dispatcher would accept for it — with
// the admission refinement a batch of round(0.95·bs), else a batch of one — by its deadline,
// given the reservations already booked. Requests queued ahead only delay it further and
// the dispatcher settles on one pipeline, so this never refuses a request the dispatcher
// would serve; it refuses, before its body is read, what the dispatcher would drop at the
// head of its queue. retryAfter is the earliest arrival time that the same reservations
// would let through.
func (p *PPipe) Door(_ dataplane.View, app dataplane.AppID, at, now dataplane.Time) (bool, dataplane.DropReason, dataplane.Time) {
	if int(app) < 0 || int(app) >= len(p.apps) {
		return true, "", 0
	}
	a := &p.apps[app]
	if len(a.pipes) == 0 {
		return false, dataplane.DropNoPath, now + a.slo
	}
	stats := p.stats // a question, not work: the counters stay as they were
	defer func() { p.stats = stats }()
	best := dataplane.Never
	reason := dataplane.DropDeadline
	for i := range a.pipes {
		pp := &a.pipes[i]
		b := 1
		if p.opts.Admission {
			b = max(int(math.Round(0.95*float64(pp.bs))), 1)
			reason = dataplane.DropAdmission
		}
		// cand is run's scratch: free between events, when the driver asks.
		p.probe(pp, b, now, &p.cand)
		best = min(best, p.cand.finish)
	}
	if best <= at+a.slo {
		return true, "", 0
	}
	return false, reason, best - a.slo
}
