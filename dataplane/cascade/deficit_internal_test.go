package cascade

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDeficitIndexRoundRobin drives one position's index through long random runs and
// checks every pick against the scan's argmax (sh[k]·total − sent[k], first on ties): runs
// whose picks all come from the index (each group stays a round robin), runs where a
// replica is sometimes chosen by other means (the scan while one is down: the tree takes
// over) and resets to counts of either form.
func TestDeficitIndexRoundRobin(t *testing.T) {
	cases := []struct {
		name   string
		shares []float64
		// other: probability that a step sends to a random replica instead of the pick.
		other float64
		// resets: probability that a step resets to random counts.
		resets float64
	}{
		{"one group", []float64{0.25, 0.25, 0.25, 0.25}, 0, 0},
		{"one group with zeros", []float64{0.3, 0, 0.3, 0.3, 0}, 0, 0},
		{"three groups", []float64{0.1, 0.2, 0.1, 0.3, 0.2, 0.1}, 0, 0},
		{"distinct", []float64{0.05, 0.15, 0.3, 0.5}, 0, 0},
		{"one group, other picks", []float64{0.2, 0.2, 0.2, 0.2, 0.2}, 0.05, 0},
		{"three groups, other picks", []float64{0.1, 0.2, 0.1, 0.3, 0.2, 0.1}, 0.05, 0},
		{"three groups, resets", []float64{0.1, 0.2, 0.1, 0.3, 0.2, 0.1}, 0.02, 0.01},
		{"large group, resets", make17(), 0.01, 0.005},
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(ci)+1, 5))
			sent := make([]float64, len(c.shares))
			d := newDeficitIndex(c.shares)
			d.reset(sent)
			total := 0.0
			var rrPicks, treePicks int
			for step := range 20000 {
				if r.Float64() < c.resets {
					// counts of the round robin's form half the time, random otherwise
					base := float64(r.IntN(50))
					cut := r.IntN(len(sent) + 1)
					for k := range sent {
						sent[k] = base + float64(r.IntN(3))
						if r.IntN(2) == 0 {
							sent[k] = base
							if k < cut {
								sent[k]++
							}
						}
					}
					total = base * float64(len(sent))
					d.reset(sent)
				}
				total++
				want := scanPick(c.shares, total, sent)
				got := d.pick(total, sent)
				if got != want {
					t.Fatalf("step %d: index picked %d, the scan %d (sent %v)", step, got, want, sent)
				}
				for _, g := range d.groups {
					if g.rr {
						rrPicks++
					} else {
						treePicks++
					}
				}
				k := got
				if r.Float64() < c.other {
					k = r.IntN(len(sent))
				}
				sent[k]++
				d.update(sent, k)
			}
			if rrPicks == 0 {
				t.Fatal("the round robin never served")
			}
			if c.other > 0 && treePicks == 0 {
				t.Fatal("the tree never served")
			}
			t.Logf("%d group picks by round robin, %d by tree", rrPicks, treePicks)
		})
	}
}

// scanPick is routeScan's rule with every replica live.
func scanPick(sh []float64, total float64, sent []float64) int {
	best, bv := 0, math.Inf(-1)
	for k := range sh {
		if sh[k] <= 0 {
			continue
		}
		if v := sh[k]/1*total - sent[k]; v > bv {
			best, bv = k, v
		}
	}
	return best
}

func make17() []float64 {
	s := make([]float64, 17)
	for i := range s {
		s[i] = 1.0 / 17
	}
	return s
}

// TestDeficitIndexWhole checks which positions take the one-group path (every replica in
// one share group, in order); TestDeficitIndexRoundRobin checks both paths' picks.
func TestDeficitIndexWhole(t *testing.T) {
	cases := []struct {
		name   string
		shares []float64
		whole  bool
	}{
		{"one replica", []float64{1}, true},
		{"equal shares", []float64{0.25, 0.25, 0.25, 0.25}, true},
		{"a zero share", []float64{0.3, 0, 0.3, 0.3, 0}, false},
		{"two groups", []float64{0.1, 0.2, 0.1, 0.3, 0.2, 0.1}, false},
		{"all zero", []float64{0, 0}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if d := newDeficitIndex(c.shares); d.whole != c.whole {
				t.Errorf("whole %v, want %v", d.whole, c.whole)
			}
		})
	}
}
