package load

import (
	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/workload"
)

// addPercentiles gives each application whose SLO is judged at a percentile
// (dataplane.App.SLOPercentile: a cascade's p95) its latency there, as the simulator's report
// does: over the measured samples, a request not answered 200 counting as
// later than any.
func addPercentiles(rep *workload.Report, dep *dataplane.Deployment, samples []Sample, targets []target) {
	if dep == nil || len(rep.Points) == 0 {
		return
	}
	p := &rep.Points[0]
	lat := make([][]int64, len(targets))
	var all []int64
	for _, s := range samples {
		if s.Status == 200 && s.App >= 0 && s.App < len(targets) {
			lat[s.App] = append(lat[s.App], s.Latency.Microseconds())
			all = append(all, s.Latency.Microseconds())
		}
	}
	shared := -1.0
	for i, t := range targets {
		pc := 0.0
		if a := appIndex(dep, t.name); a >= 0 {
			pc = dep.Apps[a].SLOPercentile
		}
		if shared < 0 {
			shared = pc
		} else if shared != pc {
			shared = 0
		}
		if pc > 0 && i < len(p.Apps) {
			p.Apps[i].SLOPercentile = workload.AtPercentile(pc, lat[i], p.Apps[i].Requests, p.Apps[i].Attainment)
		}
	}
	if shared > 0 {
		p.Total.SLOPercentile = workload.AtPercentile(shared, all, p.Total.Requests, p.Total.Attainment)
	}
}
