package ppipe

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/plan-dev/plan/dataplane"
)

// refQueue is the reservation list as a plain sorted slice (the ring's reference): book
// inserts after every entry starting at or before s, correct pops the first entry and
// shifts the rest by its lateness, never to before now.
type refQueue struct {
	l  []ival
	bu dataplane.Time
}

func (q *refQueue) book(s, e dataplane.Time) {
	q.bu = max(q.bu, e)
	k := len(q.l)
	for k > 0 && q.l[k-1].s > s {
		k--
	}
	q.l = slices.Insert(q.l, k, ival{s, e})
}

func (q *refQueue) correct(end, now dataplane.Time) bool {
	if len(q.l) == 0 {
		return false
	}
	delta := end - q.l[0].e
	q.l = q.l[1:]
	if len(q.l) == 0 {
		q.bu = end
		return delta != 0
	}
	if delta != 0 {
		prev := now
		for j := range q.l {
			d := q.l[j].e - q.l[j].s
			q.l[j].s = max(q.l[j].s+delta, prev)
			q.l[j].e = q.l[j].s + d
			prev = q.l[j].e
		}
		q.bu = prev
	}
	return delta != 0
}

// TestReservationRing checks the ring of outstanding reservations against a sorted slice
// over random bookings (in order, as busy-until mode books, and out of order, as gap
// filling does) and completions (on time, early and late), across the ring's wrap and
// growth.
func TestReservationRing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval bool
		depth    int // completions wait until this many reservations are outstanding
	}{
		{"busy-until-shallow", false, 1},
		{"busy-until-deep", false, 9},
		{"interval-shallow", true, 2},
		{"interval-deep", true, 17},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(tc.depth)))
			var r resources
			r.init(1, tc.interval)
			var ref refQueue
			var now dataplane.Time
			for step := range 5000 {
				if len(ref.l) < tc.depth || rng.IntN(2) == 0 {
					s := ref.bu
					if tc.interval && len(ref.l) > 0 {
						s = now + dataplane.Time(rng.IntN(int(ref.bu-now)+50))
					}
					e := s + 1 + dataplane.Time(rng.IntN(40))
					r.book(0, s, e)
					ref.book(s, e)
				} else {
					first := ref.l[0]
					now = max(now, first.s)
					end := max(first.e+dataplane.Time(rng.IntN(21)-10), now)
					now = end
					if got, want := r.correct(0, end, now), ref.correct(end, now); got != want {
						t.Fatalf("step %d: correct reported %v, want %v", step, got, want)
					}
				}
				if got := r.list(0); !slices.Equal(got, ref.l) || r.iv[0].bu != ref.bu {
					t.Fatalf("step %d: list %v busy-until %d, want %v busy-until %d", step, got, r.iv[0].bu, ref.l, ref.bu)
				}
			}
		})
	}
}

// TestReservationRecordSize checks that a resource's record stays 32 bytes, two to a cache
// line (ivq's comment: a booking or a completion reads busy-until and the ring's place
// from one line).
func TestReservationRecordSize(t *testing.T) {
	if got := unsafe.Sizeof(ivq{}); got != 32 {
		t.Errorf("ivq is %d bytes, want 32", got)
	}
}
