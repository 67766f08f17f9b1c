package cli

import (
	"fmt"
	"math"

	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/sim"
)

// tailSamples is how many measured requests beyond an SLO's percentile a run needs for that
// percentile to mean anything: a p95 estimated from 20 requests is one request (so
// at least 20/(1−p), 400 for a p95).
const tailSamples = 20

// warnFewForPercentile warns on stderr about every application whose SLO is judged at a
// percentile (a cascade's p95) and that has, at some load point, fewer than 20/(1−p)
// measured requests.
func warnFewForPercentile(app *App, rep *sim.Report, remedy string) {
	for a := range rep.BaseRPS {
		fewest, at, p := int64(-1), 0.0, 0.0
		for _, pt := range rep.Points {
			if a >= len(pt.Apps) || pt.Apps[a].SLOPercentile == nil {
				continue
			}
			if n := pt.Apps[a].Requests; fewest < 0 || n < fewest {
				fewest, at, p = n, pt.Load, pt.Apps[a].SLOPercentile.Percentile
			}
		}
		if fewest < 0 || p >= 1 {
			continue
		}
		if need := int64(math.Ceil(tailSamples/(1-p) - run.AbsTol)); fewest < need {
			fmt.Fprintf(app.Err, "warning: application %q has %d measured requests at load %.2f: too few for its p%g SLO (at least %d, %d beyond the percentile): %s\n",
				rep.BaseRPS[a].App, fewest, at, 100*p, need, tailSamples, remedy)
		}
	}
}
