package qlm

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/plan-dev/plan/dataplane"
)

// RCT is the request-completion-time estimator of QLM §6: waiting time linear in the output
// tokens ahead (Eq. 2) at throughput Θ, decode time O·ε·d (Eq. 4), group completion = the max
// over its members (Eq. 5) with output lengths Normal(μ, σ) truncated to [1, max] (QLM §6, Eq. 3; truncation [ours]).
type RCT struct {
	// Delta is the chance-constraint level Δ and Z its normal quantile.
	Delta, Z float64
	cache    map[rctKey]Completion
	// Samples is the Monte Carlo sample count (QLM §6; 2000 for full accuracy, fewer keeps policies fast).
	Samples int
}

type rctKey struct {
	n         int
	mu, sd    float64
	max       int
	prof      *lm
	theta, dt float64
}

// Completion is a group's completion time in seconds from the moment it reaches the head of
// its queue: mean and Δ-quantile.
type Completion struct{ Mean, Q float64 }

// NewRCT returns an estimator at confidence delta (0 = 0.95).
func NewRCT(delta float64) *RCT {
	if delta <= 0 || delta >= 1 {
		delta = 0.95
	}
	return &RCT{Delta: delta, Z: normQuantile(delta), cache: map[rctKey]Completion{}, Samples: 200}
}

// Drain is W_{g,i} of QLM §6 (Eq. 2): the delay a group of n requests causes to what is behind it,
// mean n·μ/Θ and standard deviation √n·σ/Θ (seconds).
func (r *RCT) Drain(n int, mu, sd, theta float64) (mean, std float64) {
	return float64(n) * mu / theta, math.Sqrt(float64(n)) * sd / theta
}

// Completion is C_{g,i} of QLM §6 (Eq. 5) by Monte Carlo with a fixed seed, cached by its inputs:
// members wait for the output tokens ahead at throughput theta (Eq. 2) and decode their own
// at dTok seconds per token (ε·d, Eq. 4). theta and dTok are cached at 1 % resolution (they
// are profiled over time and drift).
func (r *RCT) Completion(n int, mu, sd float64, maxOut int, m *lm, theta, dTok float64) Completion {
	if n > 16 {
		n = (n + 7) / 8 * 8 // cache by n rounded up to a multiple of 8 (conservative)
	}
	theta, dTok = round1pct(theta), round1pct(dTok)
	k := rctKey{n, mu, sd, maxOut, m, theta, dTok}
	if c, ok := r.cache[k]; ok {
		return c
	}
	pre := float64(m.PrefillUs(int(math.Max(1, mu)))) / 1e6
	rng := rand.New(rand.NewPCG(uint64(n), 0x71a))
	xs := make([]float64, r.Samples)
	sum := 0.0
	for s := range xs {
		wait, worst := 0.0, 0.0
		for q := 0; q < n; q++ {
			o := math.Round(mu + sd*rng.NormFloat64())
			o = math.Max(1, math.Min(o, float64(max(maxOut, 1))))
			c := wait + pre + o*dTok
			worst = math.Max(worst, c)
			wait += o / theta
		}
		xs[s] = worst
		sum += worst
	}
	sortFloats(xs)
	c := Completion{Mean: sum / float64(len(xs)), Q: xs[min(len(xs)-1, int(math.Ceil(r.Delta*float64(len(xs))))-1)]}
	r.cache[k] = c
	return c
}

func sortFloats(x []float64) { slices.Sort(x) }

// round1pct rounds x > 0 to two significant digits' worth of 1 % steps (log-spaced).
func round1pct(x float64) float64 {
	if !(x > 0) {
		return x
	}
	return math.Exp(math.Round(math.Log(x)*100) / 100)
}

// normQuantile is the standard normal quantile, by bisection on math.Erf.
func normQuantile(p float64) float64 {
	lo, hi := -10.0, 10.0
	for i := 0; i < 100; i++ {
		mid := (lo + hi) / 2
		if 0.5*(1+math.Erf(mid/math.Sqrt2)) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// RCTR2 is the coefficient of determination of the RCT estimates in st against measured
// completions done (absolute µs per request), both taken from the moment each estimate was
// made: 1 − Σ(measured − predicted)² / Σ(measured − mean measured)² over the requests with an
// estimate made at or after from and a completion (TestRCTR2 requires ≥ 0.95). n is how many
// requests it scored.
func RCTR2(st *Stats, done map[dataplane.ReqID]dataplane.Time, from dataplane.Time) (r2 float64, n int) {
	var ids []dataplane.ReqID
	for id := range st.Predicted {
		if _, ok := done[id]; ok && st.PredictedAt[id] >= from {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if len(ids) < 2 {
		return math.NaN(), len(ids)
	}
	y := make([]float64, len(ids))
	f := make([]float64, len(ids))
	mean := 0.0
	for i, id := range ids {
		at := st.PredictedAt[id]
		y[i] = float64(done[id]-at) / 1e6
		f[i] = float64(st.Predicted[id]-at) / 1e6
		mean += y[i]
	}
	mean /= float64(len(y))
	var res, tot float64
	for i := range y {
		res += (y[i] - f[i]) * (y[i] - f[i])
		tot += (y[i] - mean) * (y[i] - mean)
	}
	if tot == 0 {
		return math.NaN(), len(ids)
	}
	return 1 - res/tot, len(ids)
}
