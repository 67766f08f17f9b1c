package pard

import (
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestDoor: PARD's door admits while the entry module could start a fresh arrival in time,
// refuses with Eq. 3's reason when even the earliest start is too late, says when it would
// admit again, and is sound: a request admitted anyway while it was closed is dropped by the
// broker at the entry module. Baselines with other drop rules have no door of their own.
func TestDoor(t *testing.T) {
	lat := []dataplane.Time{0, 50 * dataplane.Millisecond}
	slo := 80 * dataplane.Millisecond
	dep, err := NewPipelineDeployment([]PipelineSpec{{Name: "a", SLO: slo,
		Modules: []ModuleSpec{{Name: "m", Batch: 1, LatUs: lat, Workers: 1}}}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := NewPolicy(dataplane.Config{Policy: "pard"})
	if err != nil {
		t.Fatal(err)
	}
	door, ok := pol.(dataplane.Door)
	if !ok {
		t.Fatalf("policy pard (%T) has no door", pol)
	}
	rec := &dataplane.Recorder{}
	e, err := dataplane.NewEngine(dep, pol, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Handle(0, dataplane.Event{Kind: dataplane.EvTimer, Key: dataplane.TickToken}); err != nil {
		t.Fatal(err)
	}
	v := e.View()
	if ok, why, _ := door.Door(v, 0, 0, 0); !ok {
		t.Fatalf("an idle module's door is closed (%s)", why)
	}
	// r0 runs until 50 ms: a fresh arrival starts at 50 ms at the earliest and would finish
	// at 100 ms, past its 80 ms SLO.
	r0, err := e.Arrive(0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	ok, why, retry := door.Door(v, 0, 0, 0)
	if ok || why != DropEstimate || retry != 20*dataplane.Millisecond {
		t.Fatalf("door with the worker busy until 50 ms: admit %v, reason %q, retry after %d µs (want 20000)", ok, why, retry)
	}
	if ok, _, _ := door.Door(v, 0, retry, 0); !ok {
		t.Errorf("door closed for an arrival at its retry time %d", retry)
	}
	// Sound: admitted anyway, the request is dropped by the broker when the worker frees.
	r1, err := e.Arrive(0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var run *dataplane.Effect
	for _, ef := range rec.Take() {
		if ef.Kind == dataplane.FxRunBatch {
			run = &ef
		}
	}
	if run == nil {
		t.Fatal("r0 was not launched")
	}
	if err := e.Handle(lat[1], dataplane.Event{Kind: dataplane.EvBatchDone, Batch: run.Batch, Worker: run.Worker, Start: 0, End: lat[1]}); err != nil {
		t.Fatal(err)
	}
	if q := v.Req(r0); q.Outcome != dataplane.Completed {
		t.Errorf("r0: %v", q.Outcome)
	}
	if q := v.Req(r1); q.Outcome != dataplane.Dropped || q.Reason() != DropEstimate {
		t.Errorf("r1, admitted while the door was closed: %v (%s), want dropped (%s)", q.Outcome, q.Reason(), DropEstimate)
	}

	for _, name := range []string{"nexus", "clipper++"} {
		pol, err := NewPolicy(dataplane.Config{Policy: name})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := pol.(dataplane.Door); ok {
			t.Errorf("%s has a door, but its drop rule is not Eq. 3", name)
		}
	}
}
