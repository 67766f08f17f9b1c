package cascadebench

import (
	"context"
	"math"
	"testing"

	pc "github.com/plan-dev/plan/planner/cascade"
)

// TestTally: a dropped request is counted as dropped, never as a wrong answer; accuracy is
// over answered requests (and over all requests, labelled as such); the p95 over all
// requests counts a drop as a miss.
func TestTally(t *testing.T) {
	type fin struct {
		dropped bool
		lat     float64
		ok      bool
	}
	tests := []struct {
		name string
		fins []fin
		want Served
	}{
		{"none", nil, Served{}},
		{"all answered", []fin{{false, 10, true}, {false, 20, false}, {false, 30, true}, {false, 40, true}},
			Served{Requests: 4, Answered: 4, Accuracy: 0.75, AccuracyAll: 0.75, P95Ms: 40, P95AllMs: 40}},
		{"drops are not wrong answers", []fin{{false, 10, true}, {false, 20, true}, {true, 1, false}, {true, 2, false}},
			Served{Requests: 4, Answered: 2, Dropped: 2, Accuracy: 1, AccuracyAll: 0.5, P95Ms: 20, P95AllMs: -1}},
		{"a few drops below the tail", append(repeat(fin{false, 5, true}, 39), fin{true, 0, false}),
			Served{Requests: 40, Answered: 39, Dropped: 1, Accuracy: 1, AccuracyAll: 0.975, P95Ms: 5, P95AllMs: 5}},
		{"everything dropped", []fin{{true, 3, false}},
			Served{Requests: 1, Dropped: 1, P95AllMs: -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var tl tally
			for _, f := range tc.fins {
				tl.add(f.dropped, f.lat, f.ok)
			}
			if got := tl.served(); got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func repeat[T any](x T, n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = x
	}
	return out
}

// TestReplayCountsDrops: past the plan's peak the gear policy sheds requests (dataplane/cascade
// shed.go); the replay reports them as dropped, accuracy over the answered ones, and a run
// that sheds more than the SLO's tail does not meet a p95 SLO.
func TestReplayCountsDrops(t *testing.T) {
	d, err := prepare(Setups[0], syntheticQPS(), 2000)
	if err != nil {
		t.Fatal(err)
	}
	plan, _, err := pc.Solve(context.Background(), d.in, pc.Options{Latency: d.s.Latency, GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	win := peakWindow(d.qps, 30)
	for _, tc := range []struct {
		load  float64
		drops bool
	}{{1, false}, {5, true}} {
		q := make([]float64, len(win))
		var want int64
		for i, x := range win {
			q[i] = x * tc.load
			want += int64(math.Round(q[i]))
		}
		sv, err := d.serve(plan, "", q)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("load ×%g: %+v", tc.load, sv)
		if sv.Requests != want || sv.Answered+sv.Dropped != sv.Requests {
			t.Errorf("load ×%g: %d requests = %d answered + %d dropped, want %d arrivals", tc.load, sv.Requests, sv.Answered, sv.Dropped, want)
		}
		if (sv.Dropped > 0) != tc.drops {
			t.Errorf("load ×%g: %d dropped, want drops: %v", tc.load, sv.Dropped, tc.drops)
		}
		right := sv.Accuracy * float64(sv.Answered)
		if math.Abs(right-sv.AccuracyAll*float64(sv.Requests)) > 1e-6 {
			t.Errorf("load ×%g: accuracy %.4f over %d answered and %.4f over %d requests count different right answers", tc.load, sv.Accuracy, sv.Answered, sv.AccuracyAll, sv.Requests)
		}
		if tc.drops && (sv.Accuracy < 0.8 || sv.meets(400, 0.8)) {
			t.Errorf("load ×%g: accuracy over answered %.4f (drops are not wrong answers); meets p95 ≤ 400 ms by shedding: %v", tc.load, sv.Accuracy, sv.meets(400, 0.8))
		}
	}
}
