package serve

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// What a front end that watches the server rather than serving requests (the autopilot,
// serve/autopilot) needs of it: the arrivals, the plan being served, whether it is
// shutting down, and a place for its metrics.

// ArrivalObserver sees a request for a served model when it arrives (SetArrivalObserver:
// the autopilot's demand counter).
//
// The autopilot observes demand, not admissions: every request for a served model counts at
// its true arrival (the socket stamp, or the arrival a front end gives), whether the server
// then admits it or refuses it for capacity (closed door, deadline, --max-inflight, a full
// migration queue). Counting admissions instead undercounts exactly when it matters: an
// overloaded plan refuses much of its load at the door, so its windows would show about
// what it serves, and the step up it needs would be sized for that (and `plan simulate`,
// which observes every arrival of the trace, would disagree with serve). A client that
// retries a refusal is counted once per try; requests refused while the server shuts down
// are not counted.
type ArrivalObserver func(at dataplane.Time, model string, x dataplane.Attrs)

// observeArrival reports one arrival to the observer, if any (a counter bump on the
// request's goroutine).
func (s *Server) observeArrival(at dataplane.Time, model string, x dataplane.Attrs) {
	if f := s.observe.Load(); f != nil {
		(*f)(at, model, x)
	}
}

// SetArrivalObserver installs f to see every request for a served model at its arrival
// (nil removes it). f runs on the request's goroutine before admission and must not block.
func (s *Server) SetArrivalObserver(f ArrivalObserver) {
	if f == nil {
		s.observe.Store(nil)
		return
	}
	s.observe.Store(&f)
}

// ActivePlan returns the plan being served and its digest (formats.Digest).
func (s *Server) ActivePlan() (*formats.Plan, string) {
	g := s.active.Load()
	return g.plan, g.digest
}

// Closing reports whether Shutdown has begun.
func (s *Server) Closing() bool { return s.closing.Load() }

// MustRegister adds a front end's collectors to GET /metrics, beside the server's plan_*
// families; like prometheus.Registry.MustRegister it panics on a duplicate name.
func (s *Server) MustRegister(cs ...prometheus.Collector) { s.m.reg.MustRegister(cs...) }
