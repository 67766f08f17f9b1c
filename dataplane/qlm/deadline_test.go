package qlm

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestByDeadlineKeptOrder: the deadline order byDeadline keeps between calls is, after every
// change to the running batch, what a stable sort of the batch by (deadline, request ID)
// gives: sequences leaving from anywhere and joining at the end (the engine's changes), ties
// on both keys, a batch emptied, and batches reordered or shuffled (which the kept order
// does not expect), on two instances sharing the policy's scratch.
func TestByDeadlineKeptOrder(t *testing.T) {
	for _, tc := range []struct {
		name     string
		seed     uint64
		reorder  float64 // chance per step of moving one sequence within the batch
		shuffle  float64 // chance per step of a whole shuffle
		deadline int     // deadlines drawn in [0, deadline) seconds: small for many ties
		dupIDs   bool    // IDs drawn with repeats (ties on both keys)
	}{
		{name: "leave and join", seed: 1, deadline: 1000},
		{name: "many deadline ties", seed: 2, deadline: 3},
		{name: "ties on both keys", seed: 3, deadline: 2, dupIDs: true},
		{name: "reordered", seed: 4, reorder: 0.3, deadline: 50},
		{name: "shuffled", seed: 5, shuffle: 0.2, deadline: 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(tc.seed, 0xdead))
			p := &Policy{}
			ins := []*instance{{}, {}}
			nextID := dataplane.ReqID(0)
			newSeq := func() *seq {
				nextID++
				id := nextID
				if tc.dupIDs {
					id = dataplane.ReqID(r.IntN(4))
				}
				return &seq{ID: id, Deadline: dataplane.Time(r.IntN(tc.deadline)) * dataplane.Second}
			}
			for step := range 400 {
				in := ins[step%2]
				// Leave from anywhere.
				for _, s := range slices.Clone(in.Running()) {
					if r.Float64() < 0.15 {
						in.Abort(s)
					}
				}
				if step%97 == 0 {
					in.Reset()
				}
				// Join at the end.
				for range r.IntN(5) {
					in.Place(newSeq())
				}
				// The engine never reorders its batch: a reordered one is built anew.
				if n := len(in.Running()); n > 1 && r.Float64() < tc.reorder {
					i, j := r.IntN(n), r.IntN(n)
					s := in.Running()[i]
					replace(in, slices.Insert(slices.Delete(slices.Clone(in.Running()), i, i+1), j, s))
				}
				if r.Float64() < tc.shuffle {
					order := slices.Clone(in.Running())
					r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
					replace(in, order)
				}
				want := slices.Clone(in.Running())
				slices.SortStableFunc(want, func(a, b *seq) int {
					if c := cmp.Compare(a.Deadline, b.Deadline); c != 0 {
						return c
					}
					return cmp.Compare(a.ID, b.ID)
				})
				got := p.byDeadline(in)
				if !slices.Equal(got, want) {
					t.Fatalf("step %d: %d sequences out of order:\ngot  %s\nwant %s", step, len(want), seqKeys(got), seqKeys(want))
				}
			}
		})
	}
}

// replace makes running the batch of in's engine, in that order.
func replace(in *instance, running []*seq) {
	in.Reset()
	for _, s := range running {
		in.Place(s)
	}
}

func seqKeys(ss []*seq) string {
	out := ""
	for _, s := range ss {
		out += fmt.Sprintf(" %p(%d,%d)", s, s.Deadline/dataplane.Second, s.ID)
	}
	return out
}
