package dataplane

import (
	"errors"
	"testing"
)

// TestFirstToken: the engine records the first DFirstToken of a request (later ones do not
// move it) and refuses a stamp before the request's arrival or after now.
func TestFirstToken(t *testing.T) {
	cases := []struct {
		name    string
		stamps  []Time // offsets from request 0's arrival at 1000, decided at now = 1500
		want    Time
		wantErr bool
	}{
		{name: "none", want: Never},
		{name: "one", stamps: []Time{200}, want: 1200},
		{name: "first wins", stamps: []Time{300, 100}, want: 1300},
		{name: "at arrival", stamps: []Time{0}, want: 1000},
		{name: "at now", stamps: []Time{500}, want: 1500},
		{name: "before arrival", stamps: []Time{-1}, wantErr: true},
		{name: "after now", stamps: []Time{501}, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, testDep([][]StageID{nil}, nil), func(p *scripted, now Time, ev *Event, out *Decisions) {
				if ev.Kind == EvArrival && ev.Req == 1 {
					for _, s := range c.stamps {
						out.FirstToken(0, 1000+s)
					}
				}
			})
			id, err := r.e.Arrive(1000, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.e.Arrive(1500, 0, 0) // its arrival stamps request 0 at now = 1500
			if c.wantErr {
				if !errors.Is(err, errBadDecision) {
					t.Fatalf("Handle = %v, want a bad-decision error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.e.rq(id).FirstToken; got != c.want {
				t.Fatalf("FirstToken = %d, want %d", got, c.want)
			}
		})
	}
}
