package dyorc

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// joinRunRef is the rebuild's join rule read item by item, as the loop before joinRun applied
// it (planAdd): after a batch of service sv starting at st with room items left, each later
// item is left out where the plan leaves it out, else joins where it is of sv, fits and is
// ready (max(ready, now)) by st, else ends the run.
func joinRunRef(rest []planItem, sv int, st, now dataplane.Time, room int, lit bool) (int, int) {
	k := 0
	for ; k < len(rest); k++ {
		x := &rest[k]
		if x.resv && !lit && (x.ready < now || x.follows) {
			continue
		}
		if int(x.svc) != sv || int(x.items) > room || max(x.ready, now) > st {
			break
		}
		room -= int(x.items)
	}
	return k, room
}

// TestJoinRun: joinRun agrees with the item-by-item join rule on the items a rebuild hands it
// (those after the settled prefix: ready at or after now unless Literal, whose items may be
// ready before now; every batch starts at or after now), over table cases and random runs.
func TestJoinRun(t *testing.T) {
	const now = dataplane.Time(1000)
	task := func(sv, items int, ready dataplane.Time) planItem {
		return planItem{svc: uint16(sv), items: int32(items), ready: ready}
	}
	follow := func(sv int, ready dataplane.Time) planItem {
		return planItem{svc: uint16(sv), items: 1, ready: ready, resv: true, follows: true}
	}
	for _, tc := range []struct {
		name   string
		rest   []planItem
		sv     int
		st     dataplane.Time
		room   int
		lit    bool
		k, out int
	}{
		{"empty", nil, 0, 2000, 4, false, 0, 4},
		{"all join", []planItem{task(0, 1, 1000), task(0, 2, 1500), task(0, 1, 2000)}, 0, 2000, 4, false, 3, 0},
		{"other service ends it", []planItem{task(0, 1, 1000), task(1, 1, 1000), task(0, 1, 1000)}, 0, 2000, 4, false, 1, 3},
		{"no room ends it", []planItem{task(0, 3, 1000), task(0, 2, 1000), task(0, 1, 1000)}, 0, 2000, 4, false, 1, 1},
		{"ready after the start ends it", []planItem{task(0, 1, 1000), task(0, 1, 2001)}, 0, 2000, 4, false, 1, 3},
		{"a following reservation is skipped", []planItem{follow(1, 1000), task(0, 1, 1000), follow(0, 3000), task(0, 1, 1500)}, 0, 2000, 4, false, 4, 2},
		{"skipped ones at the end count", []planItem{task(0, 1, 1000), follow(1, 1000)}, 0, 2000, 4, false, 2, 3},
		{"Literal counts a following reservation", []planItem{follow(1, 1000), task(0, 1, 1000)}, 0, 2000, 4, true, 0, 4},
		{"Literal: ready before now joins", []planItem{task(0, 1, 500), follow(0, 900)}, 0, 1000, 4, true, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			left, room := joinRun(tc.rest, uint16(tc.sv), tc.st, tc.room, !tc.lit)
			k := len(tc.rest) - len(left)
			if k != tc.k || room != tc.out {
				t.Errorf("joinRun = %d, %d; want %d, %d", k, room, tc.k, tc.out)
			}
			if rk, rr := joinRunRef(tc.rest, tc.sv, tc.st, now, tc.room, tc.lit); rk != tc.k || rr != tc.out {
				t.Errorf("the rule item by item = %d, %d; want %d, %d", rk, rr, tc.k, tc.out)
			}
		})
	}
	r := rand.New(rand.NewPCG(11, 3))
	for n := 0; n < 20000; n++ {
		lit := r.IntN(4) == 0
		rest := make([]planItem, r.IntN(12))
		for i := range rest {
			ready := now + dataplane.Time(r.IntN(3000))
			if lit {
				ready -= 800
			}
			rest[i] = planItem{svc: uint16(r.IntN(3)), items: int32(1 + r.IntN(3)), ready: ready, resv: r.IntN(2) == 0}
			rest[i].follows = rest[i].resv && r.IntN(3) == 0
		}
		slices.SortFunc(rest, func(a, b planItem) int { return int(a.ready - b.ready) })
		sv, st, room := r.IntN(3), now+dataplane.Time(r.IntN(3000)), r.IntN(8)
		left, out := joinRun(rest, uint16(sv), st, room, !lit)
		k := len(rest) - len(left)
		if rk, rr := joinRunRef(rest, sv, st, now, room, lit); k != rk || out != rr {
			t.Fatalf("draw %d: joinRun = %d, %d; item by item %d, %d (%+v, sv %d, st %d, room %d, Literal %v)", n, k, out, rk, rr, rest, sv, st, room, lit)
		}
	}
}

// TestDropResv: a GPU's reservations dropped in any order leave the others, each at the index
// it records (resv.at), and the order and plan as the sort builds them (Policy.check), a
// reservation already gone (a failed GPU's) dropping nothing.
func TestDropResv(t *testing.T) {
	w := loadWorkflow(t, "workload.json")
	dep := spreadDeployment(t, w, 4)
	p := New("dyorc", Options{Mode: ModeSpec})
	if _, err := dataplane.NewEngine(dep, p, nopFx{}); err != nil {
		t.Fatal(err)
	}
	p.check = true
	dv := &p.devs[0]
	r := rand.New(rand.NewPCG(5, 9))
	now := dataplane.Time(1e6)
	var held []*resv // the reservations the GPU should hold
	var seq int64
	for step := 0; step < 4000; step++ {
		switch {
		case r.IntN(2) == 0:
			seq++
			x := &resv{svc: r.IntN(len(w.Services)), items: 1 + r.IntN(3), ready: now + dataplane.Time(r.IntN(6000)-2000), seq: seq, follows: r.IntN(5) == 0}
			dv.reserve(x)
			held = append(held, x)
		case len(held) > 0:
			i := r.IntN(len(held))
			x := held[i]
			held = slices.Delete(held, i, i+1)
			p.dropResv(x)
			p.dropResv(x) // gone already: nothing
		}
		if r.IntN(200) == 0 { // the GPU fails: its reservations go, their chains drop them later
			dv.resv = nil
			dv.order = dv.order[:0]
			dv.preCut(0)
			for _, x := range held {
				p.dropResv(x)
			}
			held = held[:0]
		}
		for i, x := range dv.resv {
			if x.at != i {
				t.Fatalf("step %d: reservation %d at index %d records %d", step, x.seq, i, x.at)
			}
		}
		got := slices.Clone(dv.resv)
		want := slices.Clone(held)
		bySeq := func(a, b *resv) int { return int(a.seq - b.seq) }
		slices.SortFunc(got, bySeq)
		slices.SortFunc(want, bySeq)
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: the GPU holds %d reservations, want %d", step, len(got), len(want))
		}
		now += dataplane.Time(r.IntN(300))
		dv.dirty = true
		p.plan(now, 0) // panics where the kept order's plan differs from the sort's
	}
}
