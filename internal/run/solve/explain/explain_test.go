package explain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/planner"
)

// threshold is a fake system: the solve succeeds where --slo is at least minSLO or the
// cluster has at least minL4 L4s (0: no count does); it counts its solves.
type threshold struct {
	minSLO time.Duration
	minL4  int
	solves int
	// slow makes each solve take this long (the time limit's test).
	slow time.Duration
}

func (f *threshold) probe(ctx context.Context, in planner.Inputs, s planner.Settings) (Outcome, error) {
	f.solves++
	if f.slow > 0 {
		select {
		case <-time.After(f.slow):
		case <-ctx.Done():
			return Outcome{}, ctx.Err()
		}
	}
	l4, _ := in.Cluster.Pool("L4")
	if s.SLO >= f.minSLO || f.minL4 > 0 && l4.Count >= f.minL4 {
		return Outcome{Feasible: true, Plan: &formats.Plan{}}, nil
	}
	return Outcome{Refusal: fmt.Errorf("%w: slo %s", planner.ErrInfeasible, s.SLO)}, nil
}

func cluster(l4 int, available *int) *formats.Cluster {
	price := 0.5
	return &formats.Cluster{GPUs: []formats.GPUPool{{Type: "L4", Count: l4, PerServer: 4, PricePerHour: &price, Available: available}}}
}

// TestRelaxationIsTight: the stated SLO factor succeeds and 95% of it fails, it is within
// the tolerance and the rounding of the threshold, and the GPUs stated are the fewest.
func TestRelaxationIsTight(t *testing.T) {
	twenty := 20
	cases := []struct {
		name     string
		slo      time.Duration
		minSLO   time.Duration
		l4       int
		avail    *int
		minL4    int
		wantGPUs int // 0: none would
	}{
		{"ppipe-like: an SLO below the fastest pipeline", time.Millisecond, 4725 * time.Microsecond, 4, nil, 0, 0},
		{"just above 1", 100 * time.Millisecond, 103 * time.Millisecond, 4, nil, 0, 0},
		{"far off", 10 * time.Millisecond, 610 * time.Millisecond, 4, nil, 0, 0},
		{"GPUs help within available", 50 * time.Millisecond, 80 * time.Millisecond, 4, &twenty, 11, 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &threshold{minSLO: c.minSLO, minL4: c.minL4}
			in := planner.Inputs{Cluster: cluster(c.l4, c.avail)}
			st := planner.Settings{SLO: c.slo}
			fail, _ := f.probe(context.Background(), in, st)
			ex, err := Explain(context.Background(), Request{In: in, Settings: st, Probe: f.probe, Failure: fail})
			if err != nil || ex == nil {
				t.Fatalf("Explain: %v, %v", ex, err)
			}
			r := ex.SLO
			if !r.Found || !r.Narrowed || !r.CheckedOK {
				t.Fatalf("SLO relaxation %+v", r)
			}
			stated := time.Duration(float64(c.slo) * r.Scale)
			if stated < c.minSLO || float64(stated) > float64(c.minSLO)*(1+Tolerance)*1.01 {
				t.Errorf("stated SLO %s, threshold %s: not within %.0f%% and the rounding", stated, c.minSLO, 100*Tolerance)
			}
			for _, k := range []float64{r.Scale, CheckShare * r.Scale} {
				s := st
				s.SLO = scaleDuration(c.slo, k)
				out, _ := f.probe(context.Background(), in, s)
				if want := k == r.Scale; out.Feasible != want {
					t.Errorf("at SLO ×%g (%s): feasible %v, want %v", k, s.SLO, out.Feasible, want)
				}
			}
			if got := r.SLOs[0].Relaxed; got != scaleDuration(c.slo, r.Scale).String() {
				t.Errorf("relaxed --slo %q, want %s", got, scaleDuration(c.slo, r.Scale))
			}
			if c.wantGPUs == 0 {
				if len(ex.GPUs) != 0 || !strings.HasPrefix(ex.GPUsNone, "none would") {
					t.Errorf("GPUs %+v, none %q: want none would", ex.GPUs, ex.GPUsNone)
				}
				return
			}
			if len(ex.GPUs) != 1 || ex.GPUs[0].Add != c.wantGPUs || !ex.GPUs[0].Narrowed || ex.GPUs[0].PricePerHour == nil || *ex.GPUs[0].PricePerHour != 0.5*float64(c.wantGPUs) {
				t.Fatalf("GPUs %+v (%s), want +%d L4 at 0.5/h each", ex.GPUs, ex.GPUsNone, c.wantGPUs)
			}
			if ex.CutShort != "" || ex.Solves != f.solves-3 {
				t.Errorf("cut short %q; %d solves reported, %d run by the search", ex.CutShort, ex.Solves, f.solves-3)
			}
		})
	}
}

// TestGPUsWithinAvailable: a throughput plan adds at most available − count, and says none
// would where even all of them fail.
func TestGPUsWithinAvailable(t *testing.T) {
	six := 6
	f := &threshold{minSLO: time.Hour, minL4: 9}
	in := planner.Inputs{Cluster: cluster(4, &six)}
	st := planner.Settings{SLO: time.Millisecond}
	fail, _ := f.probe(context.Background(), in, st)
	ex, err := Explain(context.Background(), Request{In: in, Settings: st, Probe: f.probe, Failure: fail})
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.GPUs) != 0 || !strings.Contains(ex.GPUsNone, "no count up to +2 (count 4 → 6)") {
		t.Errorf("GPUs %+v, none %q", ex.GPUs, ex.GPUsNone)
	}
	if ex.SLO.Found {
		t.Errorf("an SLO relaxation %+v where only GPUs help", ex.SLO)
	}
}

// TestBudgetCutsShort: a search past its solves or its time says so and states nothing it
// did not check.
func TestBudgetCutsShort(t *testing.T) {
	for _, c := range []struct {
		name      string
		maxProbes int
		limit     time.Duration
		slow      time.Duration
		want      string
	}{
		{"solves", 3, 0, 0, "solves was spent"},
		{"time", 0, 150 * time.Millisecond, 40 * time.Millisecond, "--time-limit 150ms passed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &threshold{minSLO: 610 * time.Millisecond, slow: c.slow}
			in := planner.Inputs{Cluster: cluster(4, nil)}
			st := planner.Settings{SLO: 10 * time.Millisecond}
			fail := Outcome{Refusal: planner.ErrInfeasible}
			start := time.Now()
			ex, err := Explain(context.Background(), Request{In: in, Settings: st, Probe: f.probe, Failure: fail, MaxProbes: c.maxProbes, Limit: c.limit})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(ex.CutShort, c.want) {
				t.Errorf("cut short %q, want %q", ex.CutShort, c.want)
			}
			if ex.SLO.Found && ex.SLO.Narrowed {
				t.Errorf("a narrowed relaxation %+v from a search cut short", ex.SLO)
			}
			if c.limit > 0 && time.Since(start) > c.limit+c.slow+100*time.Millisecond {
				t.Errorf("took %s past a %s limit", time.Since(start), c.limit)
			}
			if !strings.Contains(strings.Join(ex.Lines(), "\n"), "the search was cut short") {
				t.Errorf("the text does not say it was cut short:\n%s", strings.Join(ex.Lines(), "\n"))
			}
		})
	}
}

// TestBadInputIsNotExplained: a refusal that names no target, which no knob at its bound
// changes, gets no explanation.
func TestBadInputIsNotExplained(t *testing.T) {
	bad := func(context.Context, planner.Inputs, planner.Settings) (Outcome, error) {
		return Outcome{Refusal: &planner.InputError{Problems: []string{"workload: models[0]: unknown model"}}}, nil
	}
	in := planner.Inputs{Cluster: cluster(4, nil)}
	ex, err := Explain(context.Background(), Request{In: in, Settings: planner.Settings{SLO: time.Second}, Probe: bad,
		Failure: Outcome{Refusal: &planner.InputError{Problems: []string{"x"}}}})
	if err != nil || ex != nil {
		t.Errorf("got %+v, %v; want no explanation", ex, err)
	}
	// A probe error that is no verdict stops the explanation with it.
	boom := errors.New("solver crashed")
	failing := func(context.Context, planner.Inputs, planner.Settings) (Outcome, error) { return Outcome{}, boom }
	if _, err := Explain(context.Background(), Request{In: in, Settings: planner.Settings{SLO: time.Second}, Probe: failing,
		Failure: Outcome{Refusal: planner.ErrInfeasible}}); !errors.Is(err, boom) {
		t.Errorf("error %v, want %v", err, boom)
	}
}

func TestRound3(t *testing.T) {
	for _, c := range []struct{ in, up, down float64 }{
		{4.7253, 4.73, 4.72}, {4.73, 4.73, 4.73}, {31.06, 31.1, 31}, {0.032284, 0.0323, 0.0322}, {2, 2, 2}, {1.0000001, 1.01, 1},
	} {
		if got := roundUp3(c.in); math.Abs(got-c.up) > 1e-12 {
			t.Errorf("roundUp3(%g) = %g, want %g", c.in, got, c.up)
		}
		if got := roundDown3(c.in); math.Abs(got-c.down) > 1e-12 {
			t.Errorf("roundDown3(%g) = %g, want %g", c.in, got, c.down)
		}
	}
}

// TestMissedPlanIsClosest: a plan that missed in simulation is the closest plan, each
// missing application with its attainment, its target and how far short it is; the JSON
// report carries the same.
func TestMissedPlanIsClosest(t *testing.T) {
	plan := &formats.Plan{Prediction: &formats.Prediction{Basis: formats.PredictionBasisRates, Apps: []formats.AppPrediction{
		{Name: "chat", RateRPS: 30, Target: 0.99, Attainment: 0.9512, Meets: false, SustainedRPS: 24.5},
		{Name: "rag", RateRPS: 4, Target: 0.9, Attainment: 0.97, Meets: true},
	}}}
	plan.Provenance.Strategy = "load"
	f := &threshold{minSLO: 200 * time.Millisecond}
	in := planner.Inputs{Cluster: cluster(2, nil)}
	st := planner.Settings{SLO: 100 * time.Millisecond}
	ex, err := Explain(context.Background(), Request{In: in, Settings: st, Probe: f.probe, Failure: Outcome{Plan: plan}})
	if err != nil || ex == nil {
		t.Fatalf("Explain: %v, %v", ex, err)
	}
	if !strings.Contains(ex.Closest.Basis, "as given") || len(ex.Closest.Misses) != 1 ||
		ex.Closest.Misses[0] != "chat: 95.12% within its SLO at 30 req/s, target 99% (3.88 points short); it holds the target up to 24.5 req/s" {
		t.Errorf("closest %+v", ex.Closest)
	}
	js, err := json.Marshal(ex)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"closest":{"basis":"the plan solved at the targets as given`, `"slo":{"found":true`, `"relaxed":"200ms"`, `"tolerance":0.02`} {
		if !strings.Contains(string(js), w) {
			t.Errorf("JSON lacks %s:\n%s", w, js)
		}
	}
}

// TestDeadlineBoundsTheSearch: the failed command's deadline, where earlier than its own
// limit, ends the search: passed already, no probe runs and the error says there was no
// time; a deadline that passes while the one deciding probe (every knob at its bound) is
// under way gives no explanation either, rather than "no knob explains it".
func TestDeadlineBoundsTheSearch(t *testing.T) {
	in := planner.Inputs{Cluster: cluster(4, nil)}
	st := planner.Settings{SLO: 10 * time.Millisecond}
	for _, c := range []struct {
		name     string
		deadline time.Duration // from now
		slow     time.Duration
		fail     Outcome
		solves   int
	}{
		{"passed", -time.Second, 0, Outcome{Refusal: planner.ErrInfeasible}, 0},
		{"passed during the deciding probe", 50 * time.Millisecond, time.Second, Outcome{Refusal: &planner.InputError{Problems: []string{"x"}}}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &threshold{minSLO: 610 * time.Millisecond, slow: c.slow}
			ex, err := Explain(context.Background(), Request{In: in, Settings: st, Probe: f.probe, Failure: c.fail,
				Limit: time.Hour, Deadline: time.Now().Add(c.deadline)})
			if ex != nil || !errors.Is(err, ErrNoTime) {
				t.Fatalf("got %+v, %v; want no explanation for want of time", ex, err)
			}
			if f.solves != c.solves {
				t.Errorf("%d probes, want %d", f.solves, c.solves)
			}
		})
	}
}
