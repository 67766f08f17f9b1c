package sim

import (
	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/workload"
)

// DefaultWarmup is the warm-up window of a run of the given duration on dep when none is
// given: min(max(5 × the largest SLO, 2 s), 20% of the run) (workload.DefaultWarmup, the rule
// plan load shares).
func DefaultWarmup(dep *dataplane.Deployment, duration dataplane.Time) dataplane.Time {
	return workload.DefaultWarmup(dep, duration)
}
