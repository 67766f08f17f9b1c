package load

import (
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/workload"
)

// TestAccuracy: `plan load` of a cascade plan reports accuracy over the answered requests
// from the labels the server's emulated workers answered (1 = right), per application and in
// total, and only where the deployment judges answers.
func TestAccuracy(t *testing.T) {
	bodies := []string{
		`{"model_name":"a","parameters":{"answered_by":"bert-base","hops":2,"certainty":0.9,"label":1},"timing":{"latency_us":10}}`,
		`{"model_name":"a","parameters":{"answered_by":"bert-tiny","hops":1,"certainty":0.7,"label":0},"timing":{"latency_us":10}}`,
		`{"model_name":"a","parameters":{"answered_by":"bert-base","hops":2,"certainty":0.8,"label":1},"timing":{"latency_us":10}}`,
		`{"model_name":"a","timing":{"latency_us":10}}`, // no label: not judged
	}
	var samples []Sample
	for _, b := range bodies {
		var s Sample
		record(&s, 200, []byte(b))
		samples = append(samples, s)
	}
	samples = append(samples, Sample{Status: 503, Label: 1, HasLabel: true}) // a drop: not answered
	targets := []target{{name: "a"}}
	newRep := func() *workload.Report {
		return &workload.Report{Points: []workload.Point{{Metrics: workload.Metrics{Apps: []workload.AppMetrics{{Name: "a"}}}}}}
	}
	judged := &dataplane.Deployment{Judge: func(*dataplane.Request) bool { return false }, JudgeOn: "test records"}
	rep := newRep()
	addAccuracy(rep, judged, samples, targets)
	p := rep.Points[0]
	if p.Total.Accuracy == nil || *p.Total.Accuracy != 0.666667 || p.Apps[0].Accuracy == nil || *p.Apps[0].Accuracy != 0.666667 {
		t.Fatalf("accuracy %v / %v, want 2 right of 3 labelled answers", p.Total.Accuracy, p.Apps[0].Accuracy)
	}
	if rep.AccuracyOn == "" {
		t.Error("no accuracy_on")
	}
	rep = newRep()
	addAccuracy(rep, &dataplane.Deployment{}, samples, targets)
	if rep.Points[0].Total.Accuracy != nil {
		t.Error("accuracy reported for a deployment that does not judge answers")
	}
}
