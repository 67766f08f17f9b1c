package dataplane

import (
	"math"
	"math/rand/v2"
)

// Jitter perturbs nominal durations with seeded uniform noise of relative half-width Rel
// (0.05 = ±5%): the emulated worker model shared by sim and serve. The zero value (or Rel
// 0) returns durations unchanged. Not safe for concurrent use.
type Jitter struct {
	Rel float64
	rng *rand.Rand
}

// NewJitter makes a jitter source with its own seeded generator.
func NewJitter(rel float64, seed uint64) *Jitter {
	return &Jitter{Rel: rel, rng: rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc909))}
}

// Apply returns d perturbed (never negative).
func (j *Jitter) Apply(d Time) Time {
	if j == nil || j.Rel == 0 || j.rng == nil || d == 0 {
		return d
	}
	f := 1 + j.Rel*(2*j.rng.Float64()-1)
	return max(Time(math.Round(float64(d)*f)), 0)
}
