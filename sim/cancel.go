package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/plan-dev/plan/dataplane"
)

// Cancel is one explicit withdrawal: request Req (IDs count arrivals from 0 in the order the
// simulator admits them) is cancelled at At (Engine.Cancel), as a client that disconnects
// would be in serve. A cancel of a request that already finished, or has not arrived yet,
// changes nothing.
type Cancel struct {
	At  dataplane.Time
	Req dataplane.ReqID
}

// cancelSeedStream keeps the cancel draws apart from the arrival and jitter streams of the
// same seed, so a run without cancels draws exactly what it drew before.
const cancelSeedStream = 0xca9ce11ed

// canceller draws which arrivals are withdrawn and when (Options.CancelFraction).
type canceller struct {
	frac float64
	rng  *rand.Rand
}

func newCanceller(frac float64, seed uint64) (*canceller, error) {
	if frac == 0 {
		return nil, nil
	}
	if !(frac > 0 && frac <= 1) {
		return nil, fmt.Errorf("sim: cancel fraction %g: want a share in (0, 1]", frac)
	}
	return &canceller{frac: frac, rng: rand.New(rand.NewPCG(seed, cancelSeedStream))}, nil
}

// draw decides for request r, just admitted: whether it is withdrawn and at what time, uniform
// between its arrival and its deadline (a client giving up before the answer is due). Two
// draws per arrival, whatever the first says, so one request's fate does not shift the next's.
func (c *canceller) draw(r *dataplane.Request) (dataplane.Time, bool) {
	pick, when := c.rng.Float64(), c.rng.Float64()
	if pick >= c.frac {
		return 0, false
	}
	return r.Arrival + dataplane.Time(when*float64(r.Deadline-r.Arrival)), true
}

// checkCancels validates explicit cancels.
func checkCancels(cs []Cancel) error {
	for i, c := range cs {
		if c.At < 0 || c.Req < 0 {
			return fmt.Errorf("sim: cancel %d: request %d at %d µs: want a request ID ≥ 0 and a time ≥ 0", i, c.Req, c.At)
		}
	}
	return nil
}
