package sim

import (
	"math/rand/v2"

	"github.com/plan-dev/plan/dataplane"
)

// Piecewise is a Poisson process whose rate is constant over each interval of a rate trace
// (issue 34 item 4: `plan simulate SCHEDULE --trace day.csv` replays the trace's rates, not a
// load factor of the plan's). A source covers [from, to) of the trace and yields times from
// from, so a plan serving one window of a schedule sees that window's arrivals from its own
// time 0; the stream ends at to.
type Piecewise struct {
	rng      *rand.Rand
	rates    []float64 // per µs
	step     float64   // µs
	from, to float64   // µs of trace time
	t        float64
}

// NewPiecewise makes a piecewise-constant Poisson source: rps[i] requests/s over the i-th
// step (µs) of the trace, over [from, to) µs of it, seeded.
func NewPiecewise(rps []float64, step, from, to dataplane.Time, seed uint64) *Piecewise {
	rates := make([]float64, len(rps))
	for i, r := range rps {
		rates[i] = r / 1e6
	}
	return &Piecewise{rng: rand.New(rand.NewPCG(seed, 0x5c4ed)), rates: rates, step: float64(step),
		from: float64(from), to: float64(to), t: float64(from)}
}

// Next implements Source.
func (p *Piecewise) Next() dataplane.Time {
	for {
		k := int(p.t / p.step)
		if k >= len(p.rates) || p.t >= p.to {
			return dataplane.Never
		}
		end := min(float64(k+1)*p.step, p.to)
		if r := p.rates[k]; r > 0 {
			if gap := p.rng.ExpFloat64() / r; p.t+gap < end {
				p.t += gap
				return dataplane.Time(p.t - p.from)
			}
		}
		p.t = end
	}
}
