package export

import (
	"math"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// twoPipelinePlan is a PPipe plan of model demo: pipeline 0 carries 100 rps (one pool of 4
// slices), pipeline 1 300 rps (pools of 12 and 3), pipeline 2 states no throughput; the
// plan targets 200 rps. predicted adds a prediction: demo sustains 360 rps at 200, and
// application other (no PPipe model) 50 rps.
func twoPipelinePlan(predicted bool) *formats.Plan {
	part := func(count int) ppipesec.Partition { return ppipesec.Partition{GPU: "L4", VGPU: 1, Count: count} }
	p := ppipesec.SetPlan(&formats.Plan{}, &ppipesec.PPipePlan{Models: []ppipesec.PPipeModelPlan{{
		Model: "demo", ThroughputRPS: 400, TargetRPS: 200,
		Pipelines: []ppipesec.PPipePipeline{
			{ThroughputRPS: 100, Partitions: []ppipesec.Partition{part(4)}},
			{ThroughputRPS: 300, Partitions: []ppipesec.Partition{part(12), part(3)}},
			{Partitions: []ppipesec.Partition{part(2)}},
		}}}})
	if predicted {
		p.Prediction = &formats.Prediction{Apps: []formats.AppPrediction{
			{Name: "demo", SustainedRPS: 360, RateRPS: 200, P50Ms: 10},
			{Name: "other", SustainedRPS: 50, RateRPS: 40, P50Ms: 10},
		}}
	}
	return p
}

// TestUnitScale pins each pipeline's threshold, query and range: a pool scales on its own
// pipeline's rate against the pipeline's capacity over the pool's replicas — the model's
// sustained rate times the pipeline's share of the plan's throughput (100/400, 300/400), or
// without a prediction the pipeline's throughput — and falls back to the model's rate where
// the pipeline's capacity is unknown or the worker is no pipeline's.
func TestUnitScale(t *testing.T) {
	const (
		q0   = `sum(rate(plan_pipeline_requests_total{model="demo",pipeline="0"}[1m]))`
		q1   = `sum(rate(plan_pipeline_requests_total{model="demo",pipeline="1"}[1m]))`
		q01  = `sum(rate(plan_pipeline_requests_total{model="demo",pipeline=~"0|1"}[1m]))`
		qDem = `sum(rate(plan_requests_total{model="demo"}[1m]))`
	)
	for _, tc := range []struct {
		name      string
		predicted bool
		keys      []string
		count     int
		threshold float64
		min       int
		query     string
		pipeline  string // the HPA selector's pipeline label ("" = none)
		basis     string // a part of the Basis
	}{
		// 360·¼ = 90 rps over 4 replicas; the plan's rate 200·¼ = 50 needs ⌈50/22.5⌉ = 3.
		{"p0 pool", true, []string{"demo/p0/s0"}, 4, 22.5, 3, q0, "0", "25% of it on pipeline 0"},
		// 360·¾ = 270 over 12; 150 rps need ⌈150/22.5⌉ = 7.
		{"p1 first pool", true, []string{"demo/p1/s0"}, 12, 22.5, 7, q1, "1", "75% of it on pipeline 1 (its share of the plan's throughput): 270 rps on 12 replica(s)"},
		// The same 270 over the 3 replicas of the second pool; 150 rps need 2.
		{"p1 second pool", true, []string{"demo/p1/s1"}, 3, 90, 2, q1, "1", "scaled on the rate the dispatcher sends pipeline 1"},
		// One server holding pools of both pipelines (stage rounding): their sum.
		{"shared server", true, []string{"demo/p0/s0", "demo/p1/s0"}, 1, 360, 1, q01, "0_1", "100% of it on pipelines 0, 1"},
		// Without a prediction: the pipelines' own throughput, the target's share as the rate.
		{"p0 pool, plan throughput", false, []string{"demo/p0/s0"}, 4, 25, 2, q0, "0", "the plan's throughput: pipeline 0 of demo carries 100 rps"},
		{"p1 second pool, plan throughput", false, []string{"demo/p1/s1"}, 3, 100, 2, q1, "1", "pipeline 1 of demo carries 300 rps within its SLO on 3 replica(s)"},
		// Pipeline 2 states no throughput: the model's scale, 360 over 2, said in the Basis.
		{"pipeline without throughput", true, []string{"demo/p2/s0"}, 2, 180, 2, qDem, "", "on the model's rate, not its pipeline's: the plan gives pipeline 2 of demo no throughput_rps"},
		{"server with a non-pipeline pool", true, []string{"demo/p0/s0", "other/x"}, 2, 180, 2, qDem, "", `the worker also serves "other/x"`},
		// Not a PPipe pool at all: the application's scale as before, with no remark.
		{"other application", true, []string{"other/x"}, 2, 25, 2, `sum(rate(plan_requests_total{model="other"}[1m]))`, "", "other sustains 50 rps within its SLO on 2 replica(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, ok := CapacityOf(twoPipelinePlan(tc.predicted)).unitScale(tc.keys, tc.count, 0)
			if !ok {
				t.Fatal("no scale")
			}
			if math.Abs(sc.Threshold-tc.threshold) > 1e-9 || sc.Min != tc.min || sc.Max != tc.count || sc.Query != tc.query || !sc.PerPod {
				t.Errorf("threshold %g, range [%d, %d], query %s, per pod %v; want %g, [%d, %d], %s, true",
					sc.Threshold, sc.Min, sc.Max, sc.Query, sc.PerPod, tc.threshold, tc.min, tc.count, tc.query)
			}
			if got := sc.Selector["pipeline"]; got != tc.pipeline {
				t.Errorf("selector %v: pipeline %q, want %q", sc.Selector, got, tc.pipeline)
			}
			wantMetric := RequestRateMetric
			if tc.pipeline != "" {
				wantMetric = PipelineRateMetric
			}
			if sc.Metric != wantMetric {
				t.Errorf("metric %s, want %s", sc.Metric, wantMetric)
			}
			// A pipeline pool on its model's scale says why; no other scale remarks on it.
			fellBack := tc.pipeline == "" && strings.HasPrefix(tc.keys[0], "demo/")
			if !strings.Contains(sc.Basis, tc.basis) || fellBack != strings.Contains(sc.Basis, "on the model's rate, not its pipeline's") {
				t.Errorf("basis %q lacks %q (or says it fell back: %v)", sc.Basis, tc.basis, !fellBack)
			}
		})
	}
}

// TestUnitScaleNoCapacity: a pipeline pool whose model has neither a prediction nor a
// pipeline throughput gets no rate scale (the target's own fallback then applies).
func TestUnitScaleNoCapacity(t *testing.T) {
	p := twoPipelinePlan(false)
	if sc, ok := CapacityOf(p).unitScale([]string{"demo/p2/s0"}, 2, 0); ok {
		t.Errorf("a scale without any capacity: %+v", sc)
	}
	// With the target's per-replica fallback (KServe's rps target) it scales on the model.
	sc, ok := CapacityOf(p).unitScale([]string{"demo/p2/s0"}, 2, 30)
	if !ok || sc.Threshold != 30 || sc.Query != `sum(rate(plan_requests_total{model="demo"}[1m]))` || !strings.Contains(sc.Basis, "no throughput_rps") {
		t.Errorf("fallback scale %+v", sc)
	}
}
