package workload

import "math"

// The prediction's simulation rule, shared by `plan solve`'s prediction (sim's Predict) and
// the planners that size by simulation (planner/qlm's InstanceRate): a
// capacity a planner sizes with and quotes is then judged on the very runs the prediction
// makes of a plan at that rate, so the rate a refusal names is one a plan is accepted at.
const (
	// PredictionSeed seeds the prediction's arrivals: a plan's prediction is reproducible.
	PredictionSeed = 1
	// PredictionMinRequests is how many requests each application gets at least (within
	// the duration bounds below): at 99% the sampling error 1.96·√(a(1−a)/n) is then ±0.44
	// points, small beside the 1-point miss budget (20 / (1 − target)).
	PredictionMinRequests = 2000
	// PredictionMinSeconds and PredictionMaxSeconds bound the simulated span;
	// PredictionMaxRequests bounds one load point's arrivals over all applications, so that
	// a prediction takes seconds, not minutes, whatever the rates.
	PredictionMinSeconds  = 20.0
	PredictionMaxSeconds  = 600.0
	PredictionMaxRequests = 200_000
	// PredictionReplications are the runs beside the first whose spread bounds a
	// prediction's margin; ReplicationSeedStride keeps their seeds (seed + r·stride) clear
	// of the seeds a caller passes for an independent run (seed + 1000 in the property test).
	PredictionReplications = 2
	ReplicationSeedStride  = 7919
)

// PredictionSpan is the simulated span in seconds for applications at rates (req/s): long
// enough for PredictionMinRequests of the slowest, within the bounds.
func PredictionSpan(rates []float64) float64 {
	secs, total := PredictionMinSeconds, 0.0
	for _, r := range rates {
		if r > 0 {
			secs = max(secs, PredictionMinRequests/r)
			total += r
		}
	}
	secs = min(secs, PredictionMaxSeconds)
	if total > 0 {
		secs = min(secs, PredictionMaxRequests/total)
	}
	return math.Round(secs*1000) / 1000
}
