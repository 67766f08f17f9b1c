package dataplane

import (
	"math/rand/v2"
	"testing"
)

// TestDoneSet: the finished-request bits give the same retired prefix as reading each
// record's outcome, across word boundaries and after the front is forgotten, for requests
// finishing in a seeded random order.
func TestDoneSet(t *testing.T) {
	for _, tc := range []struct {
		name        string
		n, rounds   int
		finishShare float64
	}{
		{"within a word", 40, 5, 0.5},
		{"across words", 500, 20, 0.3},
		{"mostly finished", 3000, 40, 0.9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.n)))
			var s doneSet
			var done []bool // by ID, the records' outcomes
			base, next := ReqID(0), ReqID(0)
			for round := range tc.rounds {
				for range rng.IntN(tc.n) {
					s.add(next)
					done = append(done, false)
					next++
				}
				for id := base; id < next; id++ {
					if !done[id] && rng.Float64() < tc.finishShare {
						done[id] = true
						s.set(id)
					}
				}
				limit := int(next-base) - rng.IntN(int(next-base)/4+1) // Compact's minReq bound
				want := 0
				for want < limit && done[base+ReqID(want)] {
					want++
				}
				if got := s.run(base, limit); got != want {
					t.Fatalf("round %d: run from %d within %d = %d, want %d", round, base, limit, got, want)
				}
				if got := s.run(base, -1); got != 0 {
					t.Fatalf("round %d: run with a negative limit = %d", round, got)
				}
				base += ReqID(want)
				s.forget(base)
				if s.base > base || base-s.base >= 64 {
					t.Fatalf("round %d: words start at %d for oldest request %d", round, s.base, base)
				}
			}
		})
	}
}
