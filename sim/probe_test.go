package sim

import (
	"reflect"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
)

// TestProbeWatchStopsAtTheFirstFailure: a probe's watch (first) stops the run when the first
// application is certain to fail, where a prediction's waits for every one and a miss of
// MaxLoadTarget; the limits are the same.
func TestProbeWatchStopsAtTheFirstFailure(t *testing.T) {
	dep := &dataplane.Deployment{Apps: []dataplane.App{{Name: "a", SLO: dataplane.Second}, {Name: "b", SLO: dataplane.Second, SLOPercentile: 0.9}}}
	j := judge{targets: appTargets(dep, nil), dep: dep}
	for _, tc := range []struct {
		name  string
		first bool
		// stops is whether each step stops the run: a misses twice (it fails), then b.
		stops []bool
	}{
		{"probe", true, []bool{false, true, false, true}},
		{"prediction", false, []bool{false, false, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newSettleWatch(j, []int64{100, 10}, tc.first)
			if !reflect.DeepEqual(w.apps, newSettleWatch(j, []int64{100, 10}, !tc.first).apps) {
				t.Fatalf("the modes set different limits")
			}
			cols := make([]appCol, 2)
			for i, app := range []int{0, 0, 1, 1} {
				cols[app].requests++
				cols[app].late++
				if got := w.finished(dataplane.AppID(app), &cols[app]); got != tc.stops[i] {
					t.Errorf("step %d (app %d): stop %t, want %t", i, app, got, tc.stops[i])
				}
			}
		})
	}
}

// TestPoissonProbeMatchesPoint: PoissonProbe judges as PoissonPoint on QLM's three LLM classes
// (E2E, TTFT and TPOT lines) at rates below, near and past capacity: a probe that holds is
// the point, metric for metric; one that stops is a point that fails, and so are its own
// metrics; the rates test both.
func TestPoissonProbeMatchesPoint(t *testing.T) {
	cfg := qlmSweep(t)
	var classes []llmspec.LLMClass
	for i, a := range cfg.Dep.Apps {
		classes = append(classes, llmspec.LLMClass{Name: a.Name, Model: cfg.LLM[i].Model, InputTokens: cfg.LLM[i].In, OutputTokens: cfg.LLM[i].Out,
			TTFTSLO: formats.Duration(2 * time.Second), TTFTPercentile: "p90", TPOTSLO: formats.Duration(60 * time.Millisecond), TPOTPercentile: "p95"})
	}
	stopped, kept := 0, 0
	for _, load := range []float64{1.5, 6, 12, 24} {
		dep := *cfg.Dep
		dep.Apps = append([]dataplane.App(nil), dep.Apps...)
		for i := range dep.Apps {
			dep.Apps[i].RateRPS *= load
		}
		const dur = 10 * dataplane.Second
		full, err := PoissonPoint(&dep, cfg.Policies, cfg.Policy.Policy, classes, dur, -1, cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		got, err := PoissonProbe(&dep, cfg.Policies, cfg.Policy.Policy, classes, dur, -1, cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		llm := LLMClassesOf(&dep, classes)
		j := judge{targets: appTargets(&dep, llm), llm: llm, dep: &dep}
		if !got.Stopped {
			kept++
			if !reflect.DeepEqual(got, full) {
				t.Errorf("load %g: a probe that went on differs from the point:\n got %+v\nwant %+v", load, got.Total, full.Total)
			}
			continue
		}
		stopped++
		t.Logf("load %g: stopped after %d events of %d", load, got.Events, full.Events)
		if j.all(full) {
			t.Errorf("load %g: the probe stopped, but the point holds every class", load)
		}
		got.Stopped = false
		if j.all(got) {
			t.Errorf("load %g: the stopped probe's own metrics hold every class", load)
		}
	}
	if stopped == 0 || kept == 0 {
		t.Fatalf("%d probes stopped, %d went on: the rates must test both", stopped, kept)
	}
}
