package formats

import (
	"fmt"
	"time"
)

// The engine's clock (dataplane.Time) counts integer microseconds in an int64. Every duration
// and every rate a file may hold is bounded so that the times derived from it — a request's
// deadline, a batch's end, the interval between two arrivals, a sum over a pipeline's stages —
// stay far inside that clock: validation refuses anything beyond, naming the field and value.
const (
	// MaxDuration bounds every duration (SLOs, latencies, intervals, timestamps): 365 days,
	// 3.15e13 µs, which leaves a factor of 2.9e5 of headroom in int64 µs for sums.
	MaxDuration = 365 * 24 * time.Hour
	// MaxDurationUs is MaxDuration in microseconds, the bound of every *_us field.
	MaxDurationUs = float64(MaxDuration / time.Microsecond)
	// MaxRateRPS bounds every rate (requests/s, QPS, tokens/s): one event per nanosecond.
	MaxRateRPS = 1e9
	// MinRateRPS is the smallest non-zero rate: one event per MaxDuration, so the mean interval
	// between two arrivals is a duration the clock can hold.
	MinRateRPS = 1 / (float64(MaxDuration) / float64(time.Second))
	// MaxNICGbps bounds network bandwidths (1 Pbit/s).
	MaxNICGbps = 1e6
	// MaxWeightBytes bounds an LLM profile's weight_bytes: 2^50 bytes (1 PiB), some 500
	// times the largest open checkpoints (about 2 TB), and far enough below int64 that the
	// sums over weights, KV caches and GPUs a plan takes cannot overflow.
	MaxWeightBytes = 1 << 50
)

const clockBound = "the engine clock's bound"

// durationIn requires a finite duration >= 0 (positive when strict) given in a unit of
// unitUs microseconds ("us", "ms", "s"), at most MaxDuration.
func durationIn(v *validator, path string, x float64, unitUs float64, unit string, strict bool) {
	switch {
	case strict && !(finite(x) && x > 0):
		v.add(path, x, "must be > 0")
	case !strict && !(finite(x) && x >= 0):
		v.add(path, x, "must be >= 0")
	case x*unitUs > MaxDurationUs:
		v.add(path, x, "must be <= %g (%s in %s, %s)", MaxDurationUs/unitUs, MaxDuration, unit, clockBound)
	}
}

// microseconds requires a latency in µs >= 0 and at most MaxDurationUs.
func microseconds(v *validator, path string, x float64) { durationIn(v, path, x, 1, "µs", false) }

// positiveMicroseconds requires a latency in µs > 0 and at most MaxDurationUs.
func positiveMicroseconds(v *validator, path string, x float64) {
	durationIn(v, path, x, 1, "µs", true)
}

// rate requires a rate that is 0 (unset, or nothing) or in [MinRateRPS, MaxRateRPS].
func rate(v *validator, path string, x float64) {
	switch {
	case !(finite(x) && x >= 0):
		v.add(path, x, "must be >= 0")
	case x != 0 && (x < MinRateRPS || x > MaxRateRPS):
		v.add(path, x, "must be 0 or in [%.3g, %g] %s", MinRateRPS, MaxRateRPS, rateUnit(path))
	}
}

// positiveRate requires a rate in [MinRateRPS, MaxRateRPS].
func positiveRate(v *validator, path string, x float64) {
	switch {
	case !(finite(x) && x > 0):
		v.add(path, x, "must be > 0")
	case x < MinRateRPS || x > MaxRateRPS:
		v.add(path, x, "must be in [%.3g, %g] %s", MinRateRPS, MaxRateRPS, rateUnit(path))
	}
}

func rateUnit(path string) string {
	u := "requests/s"
	if leaf := lastField(path); leaf == "throughput_tokens_per_s" {
		u = "tokens/s"
	}
	return fmt.Sprintf("%s (%s)", u, clockBound)
}

// lastField is the name of the last field of a path: "a[1].b_us" → "b_us".
func lastField(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '.' {
			return path[i+1:]
		}
	}
	return path
}

// boundedDuration requires a Duration of at most MaxDuration (the sign is checked by the
// caller's own rule).
func boundedDuration(v *validator, path string, d Duration) {
	if d > Duration(MaxDuration) {
		v.add(path, d, "must be <= %s (%s)", MaxDuration, clockBound)
	}
}

// bandwidth requires a bandwidth in Gbit/s > 0 (or >= 0 when optional) and at most MaxNICGbps.
func bandwidth(v *validator, path string, x float64, optional bool) {
	switch {
	case optional && !(finite(x) && x >= 0):
		v.add(path, x, "must be >= 0")
	case !optional && !(finite(x) && x > 0):
		v.add(path, x, "must be > 0")
	case x > MaxNICGbps:
		v.add(path, x, "must be <= %g Gbit/s", MaxNICGbps)
	}
}
