package load

import (
	"math"
	"time"

	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/internal/quantile"
)

// Every percentile plan load reports, in its KServe report (summarizeUs, Outcomes' p99s) and
// its OpenAI report (distOf, the vllm-bench result), is internal/quantile's: numpy's linear
// interpolation, as `vllm bench serve` computes its own. The same samples therefore give the
// same p50 and p99 through either path.

// summarizeUs is workload.Summarize's report (µs) with internal/quantile's percentiles.
func summarizeUs(us []float64) workload.Latency {
	if len(us) == 0 {
		return workload.Latency{}
	}
	s := quantile.Sorted(us)
	q := func(p float64) int64 { return int64(math.Round(quantile.Percentile(s, p))) }
	return workload.Latency{
		MeanUs: workload.Round6(quantile.Mean(s)),
		P50Us:  q(50), P90Us: q(90), P99Us: q(99), P999Us: q(99.9), MaxUs: int64(s[len(s)-1]),
	}
}

// durationPercentile is the q-th percentile (0-100) of ds, rounded to the nanosecond.
func durationPercentile(ds []float64, q float64) time.Duration {
	return time.Duration(math.Round(quantile.Of(ds, q)))
}
