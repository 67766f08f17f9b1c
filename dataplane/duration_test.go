package dataplane

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestBadDurations: a latency table or transfer rate the engine cannot run (negative, past
// any clock, NaN) is refused with an error naming the stage, at deploy time where the
// deployment says so and at dispatch where a batch's duration comes out of range (an
// extrapolated −9,158 µs batch once ran the simulator's clock backwards).
func TestBadDurations(t *testing.T) {
	cases := []struct {
		name      string
		mod       func(st []Stage)
		deployErr string // substring of NewEngine's error ("" = accepted)
		runErr    bool   // dispatching a batch of 8 (past the table) fails
	}{
		{name: "sane", mod: nil},
		{name: "negative latency", mod: func(st []Stage) { st[0].LatUs[3] = -9158 }, deployErr: "stages[0].lat_us[3]"},
		{name: "NaN transfer", mod: func(st []Stage) { st[0].XferPerSampleUs = math.NaN() }, deployErr: "stages[0].xfer_per_sample_us"},
		{name: "negative transfer", mod: func(st []Stage) { st[0].XferPerSampleUs = -1 }, deployErr: "stages[0].xfer_per_sample_us"},
		{name: "overflowing extrapolation", mod: func(st []Stage) { st[0].LatUs[4] = maxDuration }, runErr: true},
		{name: "overflowing transfer", mod: func(st []Stage) { st[0].XferPerSampleUs = 1e18 }, runErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got error
			p := &scripted{on: func(p *scripted, now Time, ev *Event, out *Decisions) {
				if ev.Kind == EvArrival && ev.Req == 7 {
					dispatchAll(out, []ReqID{0, 1, 2, 3, 4, 5, 6, 7}, 0, 1)
				}
			}}
			e, err := NewEngine(testDep([][]StageID{{1}, nil}, c.mod), p, &Recorder{})
			if c.deployErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.deployErr) || !strings.Contains(err.Error(), "stage s0") {
					t.Fatalf("NewEngine = %v, want an error naming %s and stage s0", err, c.deployErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 8 && got == nil; i++ {
				_, got = e.Arrive(Time(i), 0, 0)
			}
			if c.runErr {
				if !errors.Is(got, ErrBadDuration) || !strings.Contains(got.Error(), "stage s0") {
					t.Fatalf("dispatch = %v, want ErrBadDuration naming stage s0", got)
				}
				return
			}
			if got != nil {
				t.Fatal(got)
			}
		})
	}
}
