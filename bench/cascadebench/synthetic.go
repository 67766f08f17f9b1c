package cascadebench

import "math/rand/v2"

// SyntheticTrace names the arrival shape used without --trace: the
// Twitter-derived series CascadeServe evaluates on (its authors' artifact,
// code/workloads/mt_bench/twitter_qps.txt) has no license, so plan does not ship it; pass
// it with --trace FILE to reproduce the paper's shape.
const SyntheticTrace = "synthetic bursty shape (plan's own, seed 1: 1,200 s, base 10 QPS, 20 s blocks at 10/20/30/40 QPS, one 80 QPS burst; not the paper's Twitter trace, give it with --trace FILE)"

// syntheticQPS is a documented stand-in for a bursty per-second production trace with the
// coarse statistics of the one CascadeServe uses (§6.1: min 10, median 10, p90 30, max 80):
// 1,200 seconds in 20-second blocks, each at 10 QPS (55%), 20 (20%), 30 (15%) or 40 (10%),
// drawn with a fixed seed, ±2 QPS of per-second jitter above the base, and one 10-second
// burst at 80 QPS in the middle (the peak the planner must cover). Scale rescales it to each
// set-up's peak, as it does a real trace.
func syntheticQPS() []float64 {
	rng := rand.New(rand.NewPCG(1, 0))
	out := make([]float64, 1200)
	level := 10.0
	for i := range out {
		if i%20 == 0 {
			switch u := rng.Float64(); {
			case u < 0.55:
				level = 10
			case u < 0.75:
				level = 20
			case u < 0.90:
				level = 30
			default:
				level = 40
			}
		}
		q := level
		if level > 10 {
			q += float64(rng.IntN(5) - 2)
		}
		if i >= 600 && i < 610 {
			q = 80
		}
		out[i] = q
	}
	return out
}
