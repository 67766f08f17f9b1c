package formats

// The verdict rule: how the runs a prediction makes of an application at one load turn into
// "meets". One function decides it (AppMeets), and everything that states or checks a
// verdict calls it: the simulator when it assembles a prediction, the plan writer's
// validation, `plan check`, and the headroom and sustained-rate searches (a load is held
// where AppMeets would say so of its runs).
//
// The rule is the exact one-sided sign test: an application meets its target at a load when
// every one of the k independent runs (the first and its replications, other arrival seeds)
// holds it. Under "the median run falls short of the target" the chance that k runs all hold
// is at most 2^-k (1/8 for the three runs a prediction makes), so a plan that meets is one
// whose typical run is at or above target with 87.5% confidence, without assuming the runs
// are normal: misses come in bursts (a queue that builds makes many requests late at once),
// so one run's attainment scatters far more than its binomial says, and a pooled
// normal-approximation interval over three runs would claim a precision they do not have.
// The spread of the runs is reported beside it (AppPrediction.Margin).

// VerdictEveryRun is the verdict rule a prediction records (Prediction.Rule): an
// application meets its target when every run holds it (AppMeets).
const VerdictEveryRun = "every run"

// RunOutcome is one simulated run of an application at a prediction's load: its arrival
// seed, how many requests arrived, the share answered within the SLO, for an LLM class each
// SLO's share (parallel to AppPrediction.SLOs), and whether the simulator stopped it early
// once it was certain to miss (its counts are then partial, and the run misses).
type RunOutcome struct {
	Seed       int64     `json:"seed"`
	Requests   int64     `json:"requests"`
	Attainment float64   `json:"attainment"`
	SLOShares  []float64 `json:"slo_shares,omitempty"`
	Stopped    bool      `json:"stopped,omitempty"`
}

// RunHolds says whether one run holds the application's target: a run with no requests
// holds (nothing arrived to miss), a stopped run misses, an LLM class holds when each SLO's
// share reaches its percentile, any other application when its attainment reaches target.
func RunHolds(r RunOutcome, target float64, slos []PredictedSLO) bool {
	switch {
	case r.Requests == 0:
		return true
	case r.Stopped:
		return false
	case len(slos) > 0:
		for i, s := range slos {
			if i >= len(r.SLOShares) || r.SLOShares[i] < s.Percentile {
				return false
			}
		}
		return true
	default:
		return r.Attainment >= target
	}
}

// AppMeets is the verdict for application a under rule VerdictEveryRun: every run in
// a.Runs holds its target (RunHolds). A prediction written before runs were recorded has
// only its first run, summarised in a itself, and is judged on that.
func AppMeets(a *AppPrediction) bool {
	if len(a.Runs) == 0 {
		if len(a.SLOs) > 0 {
			for _, s := range a.SLOs {
				if s.Share < s.Percentile {
					return false
				}
			}
			return true
		}
		return a.Attainment >= a.Target
	}
	for _, r := range a.Runs {
		if !RunHolds(r, a.Target, a.SLOs) {
			return false
		}
	}
	return true
}
