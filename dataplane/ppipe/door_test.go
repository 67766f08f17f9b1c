package ppipe

import (
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestDoor: an idle dispatcher admits; once reservations reach past what a fresh arrival's
// deadline allows, the door refuses with the dispatcher's reason and the earliest arrival
// time it would admit again; asking changes nothing (no decision, no counter).
func TestDoor(t *testing.T) {
	p := NewPPipe(PPipeOptions{Penalty: true, Admission: true})
	e, _ := newEngine(t, "one-gpu.json", p)
	v := e.View()
	if ok, _, _ := p.Door(v, 0, 0, 0); !ok {
		t.Fatal("an idle dispatcher's door is closed")
	}
	// A burst at t=0: batches are reserved back to back until the head's deadline forbids.
	for i := 0; i < 400; i++ {
		mustArrive(t, e, 0)
	}
	stats := p.Stats()
	ok, reason, retry := p.Door(v, 0, 0, 0)
	if ok || (reason != dataplane.DropAdmission && reason != dataplane.DropDeadline) || retry <= 0 {
		t.Fatalf("door after a burst: admit %v, reason %q, retry after %d", ok, reason, retry)
	}
	if p.Stats() != stats {
		t.Errorf("asking the door changed the counters: %+v → %+v", stats, p.Stats())
	}
	// Sound: the same request admitted anyway is dropped by the dispatcher, for that reason.
	id := mustArrive(t, e, 0)
	if r := v.Req(id); r.Outcome != dataplane.Dropped || r.Reason() != reason {
		t.Errorf("a request admitted while the door was closed (%s): %v %q", reason, r.Outcome, r.Reason())
	}
	// At retry, the same reservations let a fresh arrival through; asking changes nothing.
	stats = p.Stats()
	if ok, _, _ := p.Door(v, 0, retry, 0); !ok {
		t.Errorf("door still closed for an arrival at its retry time %d", retry)
	}
	if p.Stats() != stats {
		t.Errorf("asking the door changed the counters: %+v → %+v", stats, p.Stats())
	}
	// Without the admission refinement the bar is a batch of one.
	p2 := NewPPipe(PPipeOptions{})
	e2, _ := newEngine(t, "one-gpu.json", p2)
	for i := 0; i < 400; i++ {
		mustArrive(t, e2, 0)
	}
	if ok, reason, _ := p2.Door(e2.View(), 0, 0, 0); !ok && reason != dataplane.DropDeadline {
		t.Errorf("door without admission: reason %q", reason)
	}
}
