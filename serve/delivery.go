package serve

import (
	"sync/atomic"

	"github.com/plan-dev/plan/dataplane"
)

// deliveryTracker estimates how long an answer takes to reach its client after the engine
// finished the request: the driver's own lateness, the handler goroutine's wake-up, encoding
// and the write. The simulator has no such step, and PPipe's reservations (paper §4.2) pack
// batches to finish just before the deadline, so without it a server on a busy machine
// answers on time by its own clock and late by the client's. The engine therefore plans
// every request against its deadline less this margin (deliveryMargin), while the outcome
// reported to the client is still judged against the true deadline.
//
// The estimate is the 99th percentile by frugal streaming: each observation above the
// estimate raises it by up, each one below lowers it by down, so it settles where
// P(x > q)·up = P(x < q)·down, i.e. P(x > q) = down/(up+down) = 1%. It is O(1) per answer,
// lock-free (handlers observe concurrently; a lost update only slows convergence) and follows
// the machine's load within a few thousand answers.
type deliveryTracker struct {
	q atomic.Int64 // µs
}

const (
	deliveryUpUs   = 99
	deliveryDownUs = 1
)

// observe records one answer's delivery time in µs.
func (t *deliveryTracker) observe(us int64) {
	q := t.q.Load()
	switch {
	case us > q:
		t.q.Store(q + min(deliveryUpUs, us-q))
	case us < q:
		t.q.Store(max(q-deliveryDownUs, 0))
	}
}

// margin is the current estimate, capped at a tenth of slo: a machine so starved that
// answers take longer than that to leave is overloaded in a way a tighter deadline cannot
// fix, and a larger margin would only refuse work the engine could still do.
func (t *deliveryTracker) margin(slo dataplane.Time) dataplane.Time {
	return min(dataplane.Time(t.q.Load()), slo/10)
}
