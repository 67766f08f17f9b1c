package predict

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/sim"
)

// clock is a test's clock: it moves only when a fake planner or prediction spends time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time                   { return c.t }
func (c *clock) spend(d time.Duration)            { c.t = c.t.Add(d) }
func (c *clock) since(t0 time.Time) time.Duration { return c.t.Sub(t0) }

// limitPlanner records the time limit of each solve and spends spend[i] of it on solve i
// (the clock's, not the wall's; a negative spend[i] spends the whole limit).
type limitPlanner struct {
	c      *clock
	spend  []time.Duration
	limits []time.Duration
}

func (p *limitPlanner) Options() any { return nil }

func (p *limitPlanner) Solve(_ context.Context, in planner.Inputs, s planner.Settings) (*formats.Plan, error) {
	i := len(p.limits)
	p.limits = append(p.limits, s.TimeLimit)
	switch {
	case i < len(p.spend) && p.spend[i] < 0:
		p.c.spend(s.TimeLimit)
	case i < len(p.spend):
		p.c.spend(p.spend[i])
	}
	return &formats.Plan{Provenance: formats.Provenance{Embedded: &formats.EmbeddedInputs{Workload: in.Workload}}}, nil
}

// TestResolveBudget: when a plan misses at its rates, the re-solves at a margin share what is
// left of the command's time limit less the prediction each re-solved plan needs (the first
// plan's verdict, measured, times predictionGrowth; each an equal share of the remainder,
// what one leaves passed on), so that the limit bounds the whole command; with too little
// left none starts, with a note saying so. Time is the test clock's, so the limits are exact.
func TestResolveBudget(t *testing.T) {
	w, err := formats.ReadInto[*formats.Workload]("../../../testdata/ppipe/workload-rate.yaml", intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	const predictCost = time.Second // each prediction's, on the clock: 8 s left for each re-solve's
	s := time.Second
	for _, tc := range []struct {
		name  string
		limit time.Duration
		spend []time.Duration // per solve: the solve at the rates, then the re-solves (-1: all its limit)
		want  []time.Duration // the limit each solve is given (nil: only the count, len(spend), is checked)
	}{
		// 60 s: the solve at the rates and its prediction take 21 s, 39 s are left, less 8 s
		// for the re-solved plan's prediction, for six margins: 31/6 s each; the first ends
		// at once (its prediction 1 s), so 38 − 8 s are left for five (6 s each), then 29 s
		// for four, 28 s for three, 27 s for two, then 26 s for the last.
		{name: "shared", limit: 60 * s, spend: []time.Duration{20 * s, 0, 0, 0, 0, 0, 0},
			want: []time.Duration{60 * s, 31 * s / 6, 6 * s, 7250 * time.Millisecond, 28 * s / 3, 13500 * time.Millisecond, 26 * s}},
		// Each re-solve runs its whole share: the total stays within 60 s.
		{name: "each runs its share", limit: 60 * s, spend: []time.Duration{19 * s, -1, -1, -1, -1, -1, -1}},
		// The solve at the rates and its prediction took all but 0.2 s: no re-solve starts.
		{name: "none left", limit: 10 * s, spend: []time.Duration{8800 * time.Millisecond},
			want: []time.Duration{10 * s}},
		// 6 s are left, but a re-solved plan's prediction is expected to take 8 s: none starts.
		{name: "prediction too long", limit: 10 * s, spend: []time.Duration{3 * s},
			want: []time.Duration{10 * s}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			t0 := c.now()
			pl := &limitPlanner{c: c, spend: tc.spend}
			miss := func(*formats.Plan) (*sim.Prediction, *formats.Prediction, error) {
				c.spend(predictCost)
				return nil, &formats.Prediction{Basis: formats.PredictionBasisRates}, nil
			}
			var notes []string
			_, _, err := attempt(context.Background(), pl, planner.Inputs{Workload: w}, planner.Settings{TimeLimit: tc.limit},
				func(n string) { notes = append(notes, n) }, newBudget(context.Background(), tc.limit, c.now), miss)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if len(pl.limits) != len(tc.spend) {
					t.Fatalf("limits %v: want %d solves (notes %q)", pl.limits, len(tc.spend), notes)
				}
				for i, l := range pl.limits[1:] {
					if l < minResolve {
						t.Errorf("re-solve %d: limit %v, below %v", i+1, l, minResolve)
					}
				}
			} else if len(pl.limits) != len(tc.want) {
				t.Fatalf("limits %v, want %v (notes %q)", pl.limits, tc.want, notes)
			}
			for i := range tc.want {
				if pl.limits[i] != tc.want[i] {
					t.Errorf("solve %d: limit %v, want %v", i, pl.limits[i], tc.want[i])
				}
			}
			if len(tc.want) == 1 && (len(notes) != 1 || !strings.Contains(notes[0], "no time is left within --time-limit")) {
				t.Errorf("notes %q: want one saying no time is left", notes)
			}
			if got := c.since(t0); got > tc.limit {
				t.Errorf("the solves and predictions took %v of the clock, past the limit %v", got, tc.limit)
			}
		})
	}
}

// TestBudgetContextDeadline: a context's deadline earlier than the limit bounds the
// re-solves; no limit and no deadline leaves the caller's limit (0).
func TestBudgetContextDeadline(t *testing.T) {
	c := &clock{t: time.Now()}
	ctx, cancel := context.WithDeadline(context.Background(), c.now().Add(8*time.Second))
	defer cancel()
	if got, ok := newBudget(ctx, time.Minute, c.now).share(4); !ok || got != 2*time.Second {
		t.Errorf("share under an 8 s deadline: %v, %v; want 2s", got, ok)
	}
	if got, ok := newBudget(context.Background(), 0, c.now).share(4); !ok || got != 0 {
		t.Errorf("share without a limit: %v, %v; want 0 (the caller's)", got, ok)
	}
	// The command's deadline (planner.Settings.Deadline, from its start) bounds the
	// re-solves where it is earlier than the limit from the solve's start; a later one not.
	b := newBudget(context.Background(), time.Minute, c.now)
	b.by(c.now().Add(4 * time.Second))
	b.by(c.now().Add(time.Hour))
	if got, ok := b.share(4); !ok || got != time.Second {
		t.Errorf("share under a 4 s command deadline: %v, %v; want 1s", got, ok)
	}
}

// TestRecordedTimeLimit: a re-solved plan records the command's --time-limit, not the
// share of it its re-solve had, and every other byte of its options as they were.
func TestRecordedTimeLimit(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"max_batch":16,"time_limit":"19.891200657s","gap":0.001}`, `{"max_batch":16,"time_limit":"1m0s","gap":0.001}`},
		{`{"max_batch":16}`, `{"max_batch":16}`},
		{`not json`, `not json`},
	} {
		if got := string(recordedTimeLimit(json.RawMessage(tc.in), time.Minute)); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestResolvePredictionCutKeepsFirst: where the limit ends the prediction of a plan
// re-solved at a margin (sim.ErrPredictionDeadline), the plan solved at the rates stands with
// its miss and a note says why; where it ends the first plan's, that is the command's error.
func TestResolvePredictionCutKeepsFirst(t *testing.T) {
	w, err := formats.ReadInto[*formats.Workload]("../../../testdata/ppipe/workload-rate.yaml", intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	calls := 0
	cutSecond := func(*formats.Plan) (*sim.Prediction, *formats.Prediction, error) {
		calls++
		if calls > 1 {
			return nil, nil, sim.ErrPredictionDeadline
		}
		return nil, &formats.Prediction{Basis: formats.PredictionBasisRates}, nil
	}
	var notes []string
	pl := &limitPlanner{c: c}
	plan, _, err := attempt(context.Background(), pl, planner.Inputs{Workload: w}, planner.Settings{TimeLimit: time.Minute},
		func(n string) { notes = append(notes, n) }, newBudget(context.Background(), time.Minute, c.now), cutSecond)
	if err != nil || plan == nil || calls != 2 || len(pl.limits) != 2 {
		t.Fatalf("plan %v, err %v after %d predictions and %d solves: want the first plan kept after the second's prediction was cut", plan, err, calls, len(pl.limits))
	}
	if last := notes[len(notes)-1]; !strings.Contains(last, "could not be checked within --time-limit 1m0s") {
		t.Errorf("last note %q: want it to say the re-solved plan was not checked in time", last)
	}
	cutFirst := func(*formats.Plan) (*sim.Prediction, *formats.Prediction, error) {
		return nil, nil, sim.ErrPredictionDeadline
	}
	if _, _, err := attempt(context.Background(), &limitPlanner{c: c}, planner.Inputs{Workload: w}, planner.Settings{TimeLimit: time.Minute},
		func(string) {}, newBudget(context.Background(), time.Minute, c.now), cutFirst); !errors.Is(err, sim.ErrPredictionDeadline) {
		t.Errorf("the first plan's prediction cut: %v, want ErrPredictionDeadline", err)
	}
}
