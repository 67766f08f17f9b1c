package ppipe

import (
	"math"

	"github.com/plan-dev/plan/dataplane"
)

var _ dataplane.Door = (*PPipe)(nil)

// Door implements dataplane.Door: it asks what the two-step dispatcher would decide for a
// request of app arriving at `at` if it were at the head of the queue now, given the
// reservations already booked (PPipe §5.4, Alg. 1): step 1 picks the pipeline with the least
// waiting at its planned batch (with the penalty for a batch-1 pipeline that would miss the
// deadline), step 2 the largest batch that meets the deadline, and the admission refinement
// drops a first-seen head whose batch falls below round(0.95·bs) on a busy pipeline. A
// request the head test drops is refused before its body is read. Reservations only grow
// until the request reaches the head, and its deadline does not move, so the dispatcher
// would drop it there too (requests queued ahead only book more). retryAfter is the earliest arrival time that the
// same reservations would let through on some pipeline (at least 1 ms ahead, since the
// dispatcher's choice is not monotone in time).
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
	deadline := at + a.slo
	// The earliest finish on any pipeline of the smallest batch the dispatcher would accept.
	open := dataplane.Never
	for i := range a.pipes {
		pp := &a.pipes[i]
		b := 1
		if p.opts.Admission {
			b = max(int(math.Round(0.95*float64(pp.bs))), 1)
		}
		// cand is run's scratch: free between events, when the driver asks.
		p.probe(pp, b, now, &p.cand)
		open = min(open, p.cand.finish)
	}
	retry := max(open-a.slo, now+dataplane.Millisecond)
	// Step 1, as run does it for a head with this deadline.
	bestScore, pi := dataplane.Never, -1
	var bestFinish, bestWait dataplane.Time
	for i := range a.pipes {
		pp := &a.pipes[i]
		if pi >= 0 && p.waitFloor(pp, pp.bs, now) >= bestScore {
			continue
		}
		p.probe(pp, pp.bs, now, &p.cand)
		score := p.cand.wait
		if p.opts.Penalty && pp.bs == 1 && p.cand.finish > deadline {
			score += a.slo
		}
		if score < bestScore {
			bestScore, pi, bestFinish, bestWait = score, i, p.cand.finish, p.cand.wait
		}
	}
	pp := &a.pipes[pi]
	// Step 2: the largest batch that meets the deadline.
	b := pp.bs
	if bestFinish > deadline {
		b = 0
		for c := pp.bs - 1; c >= 1; c-- {
			p.probe(pp, c, now, &p.cand)
			if p.cand.finish <= deadline {
				b = c
				break
			}
		}
	}
	switch {
	case b == 0:
		return false, dataplane.DropDeadline, retry
	case p.opts.Admission && b < int(math.Round(0.95*float64(pp.bs))) && bestWait > 0:
		return false, dataplane.DropAdmission, retry
	}
	return true, "", 0
}
