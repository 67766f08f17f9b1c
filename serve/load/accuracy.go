package load

import (
	"strconv"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/workload"
)

// readLabel records the label a 200 answer carries in its parameters (serve's
// parameters.label: which class the answering model gave; for a cascade's emulated workers, 1
// where that model was right on the replayed sample).
func (s *Sample) readLabel(body []byte) {
	if v, ok := field(body, "label"); ok {
		if x, err := strconv.ParseInt(v, 10, 32); err == nil {
			s.Label, s.HasLabel = int32(x), true
		}
	}
}

// addAccuracy puts the accuracy over answered requests into rep where the deployment
// judges answers (Deployment.Judge: a cascade plan's records, replayed by the server's
// emulated workers), as `plan simulate` reports it.
func addAccuracy(rep *workload.Report, dep *dataplane.Deployment, samples []Sample, targets []target) {
	if dep == nil || dep.Judge == nil || len(rep.Points) == 0 {
		return
	}
	right, judged := make([]int64, len(targets)), make([]int64, len(targets))
	for _, s := range samples {
		if s.Status != 200 || !s.HasLabel || s.App < 0 || s.App >= len(targets) {
			continue
		}
		judged[s.App]++
		if s.Label == 1 {
			right[s.App]++
		}
	}
	p := &rep.Points[0]
	var tr, tj int64
	for i := range targets {
		tr, tj = tr+right[i], tj+judged[i]
		if judged[i] > 0 && i < len(p.Apps) {
			a := workload.Round6(float64(right[i]) / float64(judged[i]))
			p.Apps[i].Accuracy = &a
		}
	}
	if tj > 0 {
		a := workload.Round6(float64(tr) / float64(tj))
		p.Total.Accuracy = &a
		rep.AccuracyOn = dep.JudgeOn + " (as the server's emulated workers answered them)"
	}
}
