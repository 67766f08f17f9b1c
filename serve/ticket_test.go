package serve

import (
	"context"
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestArriveRefusals: Arrive refuses before the body is read, in the handler's order: an
// unknown model (404), a shutdown, a declared size above --max-body (413), the closed door
// (503 with how long it stays closed); only the intake refusals say Refused.
func TestArriveRefusals(t *testing.T) {
	s, _ := testServer(t, Options{Plan: loadPlan(t, "demo-plan.json"), MaxBody: 1000})
	g := s.active.Load()
	door := &g.doors[g.apps["demo"]]
	reason := "estimate"
	for _, tc := range []struct {
		name    string
		req     Request
		setup   func()
		status  int
		refused bool
		want    string // a substring of Err
	}{
		{name: "admitted", req: Request{Model: "demo", Size: 1000}},
		{name: "unknown model", req: Request{Model: "nope"}, status: 404, want: `model "nope" not found: this server serves demo`},
		{name: "too large", req: Request{Model: "demo", Size: 1001}, status: 413, want: "--max-body 1000 bytes"},
		{name: "door", req: Request{Model: "demo"}, setup: func() {
			door.reason.Store(&reason)
			door.closedUntil.Store(int64(s.clk.Now() + 5*dataplane.Second))
		}, status: 503, refused: true, want: "refused at the door (estimate)"},
		{name: "size before the door", req: Request{Model: "demo", Size: 1001}, status: 413, want: "--max-body"},
		{name: "shutdown before the door", req: Request{Model: "demo"}, setup: func() { s.closing.Store(true) }, status: 503, refused: true, want: "shutting down"},
	} {
		if tc.setup != nil {
			tc.setup()
		}
		tk, a := s.Arrive(tc.req)
		switch {
		case tc.status == 0 && (a != nil || tk.s != s || tk.Input().Name == ""):
			t.Errorf("%s: refused %+v; want a ticket", tc.name, a)
		case tc.status == 0:
		case a == nil:
			t.Errorf("%s: admitted; want %d", tc.name, tc.status)
		case a.Status != tc.status || a.Refused() != tc.refused || !strings.Contains(a.Err, tc.want):
			t.Errorf("%s: %d refused=%v %q; want %d refused=%v with %q", tc.name, a.Status, a.Refused(), a.Err, tc.status, tc.refused, tc.want)
		}
		if tc.name == "door" && (a == nil || a.Stage != "intake" || a.Reason != "estimate" || a.RetryUs <= 4*int64(dataplane.Second)) {
			t.Errorf("door: %+v; want stage intake, reason estimate, RetryUs about 5 s", a)
		}
	}
	s.closing.Store(false)
}

// TestTicketSubmit: a ticket's Submit refuses a request as old as its SLO when asked to
// (RefuseStale, with its timing so far), and an answer holds its --max-inflight slot until
// Delivered, which frees it once however often it is called.
func TestTicketSubmit(t *testing.T) {
	s, _ := testServer(t, Options{Plan: loadPlan(t, "demo-plan.json"), MaxInFlight: 1})
	arrive := func() Ticket {
		t.Helper()
		tk, a := s.Arrive(Request{Model: "demo"})
		if a != nil {
			t.Fatalf("refused: %+v", a)
		}
		return tk
	}

	stale := arrive()
	stale.at = s.clk.Now() - dataplane.Time(stale.spec.sloUs)
	a, err := stale.Submit(context.Background(), Request{ID: "old", RefuseStale: true})
	if err != nil || !a.Refused() || a.Reason != string(dataplane.DropDeadline) || a.Timing.SLOUs != stale.spec.sloUs || a.Timing.LatencyUs < stale.spec.sloUs {
		t.Fatalf("stale: %+v, %v; want refused for its deadline with its timing", a, err)
	}

	var first *Answer
	for try := 0; try < 4 && (first == nil || first.Status != 200); try++ {
		s.Delivered(first)
		if first, err = arrive().Submit(context.Background(), Request{ID: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	if first.Status != 200 || first.Refused() {
		t.Fatalf("first: %+v; want 200", first)
	}
	// The first answer is not delivered yet: the server holds one request, its bound.
	if a, _ := arrive().Submit(context.Background(), Request{ID: "b"}); a.Status != 503 || !a.Refused() || a.Reason != "overload" {
		t.Errorf("second before Delivered: %+v; want refused for --max-inflight", a)
	}
	s.Delivered(first)
	s.Delivered(first)
	if n := s.inflight.Load(); n != 0 {
		t.Errorf("in flight after Delivered twice: %d; want 0", n)
	}
	if a, _ := arrive().Submit(context.Background(), Request{ID: "c"}); a.Refused() {
		t.Errorf("after Delivered: %+v; want served", a)
	}
}
