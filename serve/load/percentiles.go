package load

import (
	"math"
	"time"

	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/internal/base/quantile"
)

// Every percentile plan load reports, in its KServe report (workload.Summarize, Outcomes'
// p99s) and its OpenAI report (distOf, the vllm-bench result), is internal/base/quantile's, as the
// simulator's are: numpy's linear interpolation, as `vllm bench serve` computes its own. The
// same samples therefore give the same p50 and p99 through every path.

// summarizeUs is workload.Summarize of a sorted copy of us (us is left as it was).
func summarizeUs(us []float64) workload.Latency { return workload.Summarize(quantile.Sorted(us)) }

// durationPercentile is the q-th percentile (0-100) of ds, rounded to the nanosecond.
func durationPercentile(ds []float64, q float64) time.Duration {
	return time.Duration(math.Round(quantile.Of(ds, q)))
}
