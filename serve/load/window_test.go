package load

import (
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
)

// TestArrivalWindow: without --duration a Trace file is sent whole (its recorded span, not
// the default 10 s) and --max-requests bounds the run by count (it wins over the default
// duration); an explicit --duration cuts both.
func TestArrivalWindow(t *testing.T) {
	counts := workload.ArrivalSpec{Kind: "counts", Name: "c", Trace: &formats.Trace{Counts: &formats.RateSeries{
		Interval: formats.Duration(time.Second), Counts: []int64{10, 30, 20, 40, 10, 30, 20, 40, 10, 30, 20, 40, 10, 30, 20, 40}}}} // 16 s, 400 requests
	poisson, err := workload.ParseArrival("poisson")
	if err != nil {
		t.Fatal(err)
	}
	dep := &dataplane.Deployment{Apps: []dataplane.App{{Name: "m"}}}
	targets := []target{{name: "m", rate: 25}}
	tests := []struct {
		name        string
		spec        workload.ArrivalSpec
		duration    time.Duration
		set         bool
		max         int
		window      time.Duration // the run's window
		n           int           // arrivals (-1: any)
		lastBeforeS float64       // every arrival before this many seconds
	}{
		{"trace whole by default", counts, 10 * time.Second, false, 0, 16 * time.Second, -1, 16},
		{"trace cut by --duration", counts, 4 * time.Second, true, 0, 4 * time.Second, -1, 4},
		{"--max-requests wins over the default duration", poisson, 10 * time.Second, false, 1000, -1, 1000, 1e9},
		{"--duration cuts --max-requests", poisson, 10 * time.Second, true, 1000, 10 * time.Second, -1, 10},
		{"poisson default", poisson, 10 * time.Second, false, 0, 10 * time.Second, -1, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Arrival: tc.spec, Duration: tc.duration, DurationSet: tc.set, MaxRequests: tc.max, Seed: 1}
			plan := &formats.Plan{}
			o.Duration = defaultWindow(o, plan)
			arr, err := arrivalsOf(o, plan, dep, targets, 1)
			if err != nil {
				t.Fatal(err)
			}
			win := replayWindow(o, plan, arr)
			if tc.n >= 0 && len(arr) != tc.n {
				t.Errorf("%d arrivals, want %d", len(arr), tc.n)
			}
			if tc.window >= 0 && win != tc.window {
				t.Errorf("window %s, want %s", win, tc.window)
			}
			if len(arr) == 0 {
				t.Fatal("no arrivals")
			}
			last := time.Duration(arr[len(arr)-1].t) * time.Microsecond
			if last.Seconds() >= tc.lastBeforeS || (tc.window < 0 && win <= last) {
				t.Errorf("last arrival at %s, window %s", last, win)
			}
			// a trace sent whole reaches its last seconds (the default 10 s stopped at 10)
			if tc.name == "trace whole by default" && last < 12*time.Second {
				t.Errorf("last arrival at %s: the trace's last seconds were not sent", last)
			}
		})
	}
}
