package dyorc

import "math/rand/v2"

// Predictor is DyOrc's per-application first-order Markov chain over services (DyOrc §5.2):
// F[prev][next] counts, with a start state (prev = ∅) and an end state S0, updated online with
// every finished request's call sequence; counts are cumulative (the paper describes no decay).
type Predictor struct {
	nsvc int
	// counts[(prev+1)*(nsvc+1)+(next+1)]: prev −1 = ∅ (start), next −1 = S0 (end).
	counts []float64
	// Argmax picks the most frequent successor instead of sampling (the paper samples,
	// DyOrc §5.2; argmax is our option).
	Argmax bool
	// Cap bounds a rollout (32 by default [ours]; the paper sets no cap).
	Cap int
	rng *rand.Rand
}

// End is the end state in predictions.
const End = -1

// NewPredictor returns an empty chain over nsvc services, sampling with a seeded generator.
func NewPredictor(nsvc int, seed uint64) *Predictor {
	return &Predictor{nsvc: nsvc, counts: make([]float64, (nsvc+1)*(nsvc+1)), Cap: 32,
		rng: rand.New(rand.NewPCG(seed, 0x2545f4914f6cdd1d))}
}

// Observe adds one finished request's service sequence, including the move to S0.
func (p *Predictor) Observe(seq []int) {
	prev := -1
	for _, s := range seq {
		p.counts[(prev+1)*(p.nsvc+1)+s+1]++
		prev = s
	}
	p.counts[(prev+1)*(p.nsvc+1)]++
}

// Step predicts the service after prev (−1 = start): End when the chain has no counts for
// prev yet or S0 comes up.
func (p *Predictor) Step(prev int) int {
	row := p.counts[(prev+1)*(p.nsvc+1) : (prev+2)*(p.nsvc+1)]
	var sum, best float64
	arg := End
	for i, c := range row {
		sum += c
		if c > best {
			best, arg = c, i-1
		}
	}
	if sum == 0 {
		return End
	}
	if p.Argmax {
		return arg
	}
	u := p.rng.Float64() * sum
	for i, c := range row {
		u -= c
		if u < 0 && c > 0 {
			return i - 1
		}
	}
	return arg
}

// Rollout predicts the rest of a request after its last observed service, until S0 or Cap
// tasks; no counts yet = no prediction (the scheduler then behaves like Greedy).
func (p *Predictor) Rollout(last int, out []int) []int {
	out = out[:0]
	for len(out) < p.Cap {
		n := p.Step(last)
		if n == End {
			break
		}
		out = append(out, n)
		last = n
	}
	return out
}
