package sim

import (
	"context"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/pardsec"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// TestPredictHeadroom: the headroom is the highest load at which every load at or below
// it holds the target, whatever order the points come in; one application's headroom
// looks at that application alone, and an application with no requests at a load holds.
func TestPredictHeadroom(t *testing.T) {
	pt := func(load float64, att ...float64) Point {
		p := Point{Load: load}
		for _, a := range att {
			n := int64(100)
			if a < 0 { // no requests at this load
				a, n = 0, 0
			}
			p.Apps = append(p.Apps, AppMetrics{Attainment: a, Requests: n})
		}
		return p
	}
	tests := []struct {
		name   string
		points []Point
		all    float64
		apps   []float64
	}{
		{"holds everywhere", []Point{pt(2, 1, 1), pt(1, 0.995, 1), pt(1.5, 0.99, 1)}, 2, []float64{2, 2}},
		{"gap above a miss", []Point{pt(1, 1, 1), pt(1.5, 0.5, 1), pt(2, 1, 1)}, 1, []float64{1, 2}},
		{"misses at the lowest", []Point{pt(0.25, 0.9, 1), pt(0.5, 1, 1)}, 0, []float64{0, 0.5}},
		{"no requests holds", []Point{pt(1, -1, 1), pt(2, 0.5, 0.2)}, 1, []float64{1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := judge{targets: []float64{MaxLoadTarget, MaxLoadTarget}}
			if got := headroom(tc.points, j); got != tc.all {
				t.Errorf("headroom %g, want %g", got, tc.all)
			}
			for a, want := range tc.apps {
				if got := appHeadroom(tc.points, a, j); got != want {
					t.Errorf("app %d: headroom %g, want %g", a, got, want)
				}
			}
		})
	}
}

// TestPredictSustained: a headroom found on one seed stands only where the replications at
// that load hold too; otherwise the next lower load tried is checked, per application or
// for all of them (-1). The replication points are given, so nothing is simulated.
func TestPredictSustained(t *testing.T) {
	pt := func(load float64, att ...float64) Point {
		p := Point{Load: load}
		for _, a := range att {
			p.Apps = append(p.Apps, AppMetrics{Attainment: a, Requests: 100})
		}
		return p
	}
	first := []Point{pt(1, 1, 1), pt(1.25, 1, 1), pt(1.5, 0.995, 1), pt(2, 0.9, 0.9)}
	tests := []struct {
		name string
		reps map[float64][]Point
		h    float64
		app  int
		want float64
	}{
		{"replications hold", map[float64][]Point{1.5: {pt(1.5, 0.99, 1), pt(1.5, 1, 1)}}, 1.5, -1, 1.5},
		{"a lucky seed steps down", map[float64][]Point{1.5: {pt(1.5, 0.97, 1), pt(1.5, 1, 1)}, 1.25: {pt(1.25, 1, 1), pt(1.25, 1, 1)}}, 1.5, -1, 1.25},
		{"the lucky app steps down", map[float64][]Point{1.5: {pt(1.5, 0.97, 1), pt(1.5, 1, 1)}, 1.25: {pt(1.25, 1, 1), pt(1.25, 1, 1)}}, 1.5, 0, 1.25},
		{"the other app stands", map[float64][]Point{1.5: {pt(1.5, 0.97, 1), pt(1.5, 1, 1)}}, 1.5, 1, 1.5},
		{"none holds", map[float64][]Point{1: {pt(1, 0.9, 1), pt(1, 1, 1)}}, 1, -1, 0},
		{"headroom 0 stays 0", map[float64][]Point{}, 0, -1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := &sustainCheck{j: judge{targets: []float64{MaxLoadTarget, MaxLoadTarget}}, points: first, reps: tc.reps}
			got, err := v.sustained(t.Context(), tc.h, tc.app)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("sustained(%g, app %d) = %g, want %g", tc.h, tc.app, got, tc.want)
			}
		})
	}
}

// TestPredictMargins: the sampling margin is the binomial's 95% range, at least one
// request's share (1 with no requests); the replication margin 1.96 sample deviations.
func TestPredictMargins(t *testing.T) {
	sampling := []struct {
		a    float64
		n    int64
		want float64
	}{
		{0.99, 2000, 0.004361}, // 1.96·√(0.99·0.01/2000)
		{1, 2000, 0.0005},      // no variance: one request's share
		{0.5, 0, 1},
	}
	for _, tc := range sampling {
		if got := samplingMargin(tc.a, tc.n); got != tc.want {
			t.Errorf("samplingMargin(%g, %d) = %g, want %g", tc.a, tc.n, got, tc.want)
		}
	}
	replication := []struct {
		xs   []float64
		want float64
	}{
		{[]float64{0.99}, 0},
		{[]float64{0.99, 0.99, 0.99}, 0},
		{[]float64{0.98, 1}, math.Round(1.96*math.Sqrt(0.0002)*1e6) / 1e6},
	}
	for _, tc := range replication {
		if got := replicationMargin(tc.xs); got != tc.want {
			t.Errorf("replicationMargin(%v) = %g, want %g", tc.xs, got, tc.want)
		}
	}
}

// TestWorkloadRate: an application's rate is what its workload section says
// (formats.RateTargeter) — models, pipelines, LLM classes, workflow apps and a section no
// in-tree system owns alike; a cascade's qps_max bounds a range and is no rate asked for;
// none is 0.
func TestWorkloadRate(t *testing.T) {
	w := llmspec.SetClasses(pardsec.SetPipelines(ppipesec.SetModels(&formats.Workload{}, []ppipesec.ModelWorkload{{Name: "m", RateRPS: 1}}), []pardsec.Pipeline{{Name: "p", RateRPS: 2}}), []llmspec.LLMClass{{Name: "c", RateRPS: 3}})
	cascadesec.SetCascades(w, []cascadesec.Cascade{{Name: "s", QPSMax: 5}})
	dyorcsec.SetWorkflows(w, &dyorcsec.Workflows{Apps: map[string]dyorcsec.App{"a": {RateRPS: 6}}})
	formats.SetWorkload(w, sixthJobs{formats.SectionOf[sixthJob]{Name: "sixth", Sys: "sixth"}}, &sixthJob{Name: "j", RateRPS: 7})
	for name, want := range map[string]float64{"m": 1, "p": 2, "c": 3, "s": 0, "a": 6, "j": 7, "x": 0} {
		if got := workloadRate(w, name); got != want {
			t.Errorf("%s: %g, want %g", name, got, want)
		}
	}
	if got := workloadRate(nil, "m"); got != 0 {
		t.Errorf("nil workload: %g", got)
	}
}

// sixthJob is a workload section of a system formats and sim do not know, one application.
type sixthJob struct {
	Name    string  `json:"name"`
	RateRPS float64 `json:"rate_rps"`
}

type sixthJobs struct{ formats.SectionOf[sixthJob] }

func (s sixthJobs) Targets(w *formats.Workload) []formats.RateTarget {
	if j := s.OfWorkload(w); j != nil {
		return []formats.RateTarget{{Name: j.Name, RateRPS: j.RateRPS}}
	}
	return nil
}

func (s sixthJobs) WithRates(w *formats.Workload, rate func(string, float64) float64) {
	if j := s.OfWorkload(w); j != nil {
		c := *j
		c.RateRPS = rate(c.Name, c.RateRPS)
		formats.SetWorkload(w, s, &c)
	}
}

// TestPredictArrivals: a prediction's arrival process is a generator (Poisson by default),
// recorded in one spelling so that plan check re-runs it; trace files and bad parameters are
// refused naming the value.
func TestPredictArrivals(t *testing.T) {
	tests := []struct {
		in, kind, canon string
		cv              float64
		err             string
	}{
		{in: "", kind: "poisson", canon: "poisson"},
		{in: "poisson", kind: "poisson", canon: "poisson"},
		{in: "bursty", kind: "bursty", canon: "bursty:3", cv: 3},
		{in: "bursty:2", kind: "bursty", canon: "bursty:2", cv: 2},
		{in: "bursty:0.5", kind: "bursty", canon: "bursty:0.5", cv: 0.5},
		{in: "mmpp", kind: "mmpp", canon: "mmpp"},
		{in: "bursty:0", err: `"bursty:0": the coefficient of variation must be a number in [0.01, 100]`},
		{in: "bursty:x", err: `"bursty:x": the coefficient of variation`},
		// A CV whose Gamma shape 1/CV² overflows ran the generator without end.
		{in: "bursty:1e-155", err: `"bursty:1e-155": the coefficient of variation must be a number in [0.01, 100]`},
		{in: "bursty:0.009", err: `"bursty:0.009": the coefficient of variation must be a number in [0.01, 100]`},
		{in: "bursty:0.01", kind: "bursty", canon: "bursty:0.01", cv: 0.01},
		{in: "poisson:2", err: `"poisson:2": poisson takes no parameter`},
		{in: "day.csv", err: `"day.csv": must be poisson, bursty[:CV] or mmpp`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			spec, canon, err := PredictArrivals(tc.in)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err && !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if spec.Kind != tc.kind || canon != tc.canon || spec.CV != tc.cv {
				t.Errorf("got %s %q cv %g, want %s %q cv %g", spec.Kind, canon, spec.CV, tc.kind, tc.canon, tc.cv)
			}
			if again, c2, err := PredictArrivals(canon); err != nil || c2 != canon || again.Kind != spec.Kind || again.CV != spec.CV {
				t.Errorf("the recorded spelling %q reads back as %s %q cv %g (%v)", canon, again.Kind, c2, again.CV, err)
			}
		})
	}
}

// searchCases are the two predictions whose searches the tests below take apart: the
// bundled QLM plan (its search above 1) and a PPipe deployment of two models at 2× its
// rates (a miss at 1, so the loads below), with the QLM sweep's config.
func searchCases(t *testing.T) (*SweepConfig, *formats.Plan, dataplane.Deployment) {
	t.Helper()
	cfg := qlmSweep(t)
	plan, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "testdata", "export", "qlm", "plan.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	over := *loadDep(t, "mixed.json")
	over.Apps = slices.Clone(over.Apps)
	for i := range over.Apps {
		over.Apps[i].RateRPS *= 2
	}
	return cfg, plan, over
}

// TestPredictionInTwoParts: a prediction started and then completed is Predict's, byte for
// byte, and its verdict at the rates (Rates, what RatesOnly returns) is the complete one
// without the search's fields: for the bundled QLM plan (its search above 1) and for a PPipe
// deployment past its rates (a miss at 1, so the loads below).
func TestPredictionInTwoParts(t *testing.T) {
	cfg, plan, over := searchCases(t)
	for _, tc := range []struct {
		name string
		in   PredictInput
		miss bool
	}{
		{"qlm plan", PredictInput{Plan: plan, Dep: cfg.Dep, Policies: cfg.Policies, Policy: cfg.Policy.Policy}, false},
		{"ppipe past its rates", PredictInput{Plan: &formats.Plan{}, Dep: &over, Policies: testPolicies, Policy: "ppipe"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Seed, in.SpanScale = 1, 0.1
			whole, err := Predict(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if whole.Meets == tc.miss || (whole.Headroom < 1) != tc.miss {
				t.Fatalf("meets %v, headroom %g: want a plan that meets %v", whole.Meets, whole.Headroom, !tc.miss)
			}
			p, err := StartPrediction(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			rates := p.Rates()
			got, err := p.Complete(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, whole) {
				t.Fatalf("started and completed:\n%+v\nPredict:\n%+v", got, whole)
			}
			want := *whole
			want.Headroom, want.Apps = 0, slices.Clone(whole.Apps)
			for i := range want.Apps {
				want.Apps[i].SustainedRPS = 0
			}
			if !reflect.DeepEqual(rates, &want) {
				t.Fatalf("Rates:\n%+v\nwant the complete prediction without its search:\n%+v", rates, &want)
			}
			in.RatesOnly = true
			if only, err := Predict(context.Background(), in); err != nil || !reflect.DeepEqual(only, rates) {
				t.Fatalf("RatesOnly: %+v (%v), want %+v", only, err, rates)
			}
		})
	}
}
