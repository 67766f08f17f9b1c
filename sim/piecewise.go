package sim

import (
	"math/rand/v2"

	"github.com/plan-dev/plan/dataplane"
)

// Piecewise is a Poisson process whose rate is constant over each interval of a rate trace
// (`plan simulate SCHEDULE --trace day.csv` replays the trace's rates, not a
// load factor of the plan's). A source covers [from, to) of the trace and yields times from
// from, so a plan serving one segment of a schedule sees that segment's arrivals from its
// own time 0; the stream ends at to. Each interval's arrivals are drawn from a generator
// seeded by the seed and the interval alone, so they do not depend on where the trace is
// cut: the schedule's segments and the peak plan, cut elsewhere, see the same requests
// (common random numbers), whatever the switch delay and mode.
type Piecewise struct {
	pcg      *rand.PCG
	rng      *rand.Rand
	seed     uint64
	rates    []float64 // per µs
	step     float64   // µs
	from, to float64   // µs of trace time
	k        int       // the interval being drawn
	t        float64   // the last time drawn in it
}

// NewPiecewise makes a piecewise-constant Poisson source: rps[i] requests/s over the i-th
// step (µs) of the trace, over [from, to) µs of it, seeded.
func NewPiecewise(rps []float64, step, from, to dataplane.Time, seed uint64) *Piecewise {
	rates := make([]float64, len(rps))
	for i, r := range rps {
		rates[i] = r / 1e6
	}
	pcg := rand.NewPCG(0, 0)
	p := &Piecewise{pcg: pcg, rng: rand.New(pcg), seed: seed, rates: rates, step: float64(step),
		from: float64(from), to: float64(to)}
	p.enter(int(p.from / p.step))
	return p
}

// enter starts drawing interval k from its beginning.
func (p *Piecewise) enter(k int) {
	p.k, p.t = k, float64(k)*p.step
	p.pcg.Seed(p.seed, 0x5c4ed^uint64(k))
}

// Next implements Source.
func (p *Piecewise) Next() dataplane.Time {
	for p.k < len(p.rates) && p.t < p.to {
		if r := p.rates[p.k]; r > 0 {
			if t := p.t + p.rng.ExpFloat64()/r; t < float64(p.k+1)*p.step {
				p.t = t
				if t >= p.to {
					return dataplane.Never
				}
				if t >= p.from { // an interval entered mid-way skips its draws before from
					return dataplane.Time(t - p.from)
				}
				continue
			}
		}
		p.enter(p.k + 1)
	}
	return dataplane.Never
}
