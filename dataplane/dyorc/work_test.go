package dyorc

import (
	"math"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// workMeta is a one-service, one-node deployment description for the work model: base 1 ms,
// 100 µs per item, spread s.
func workMeta(s float64, items int) (*Meta, *dataplane.Stage) {
	m := &Meta{W: &Workflow{
		Services: []Service{{Name: "llm", BaseUs: 1000, PerItemUs: 100, MaxBatch: 32, Spread: s}},
		Apps:     []App{{Name: "a", Nodes: []Node{{Svc: 0, Items: items, Name: "llm"}}}},
	}}
	return m, &dataplane.Stage{App: 0, Index: 0, Model: "llm"}
}

func reqs(keys ...int64) []*dataplane.Request {
	out := make([]*dataplane.Request, len(keys))
	for i, k := range keys {
		out[i] = &dataplane.Request{ID: dataplane.ReqID(1000 + i), Attrs: dataplane.Attrs{Trace: k + 1}}
	}
	return out
}

func TestWork(t *testing.T) {
	tests := []struct {
		name    string
		spread  float64
		items   int
		reqs    []*dataplane.Request
		nominal dataplane.Time
		check   func(t *testing.T, got dataplane.Time)
	}{
		{"no spread is the nominal", 0, 1, reqs(1, 2, 3), 1300, func(t *testing.T, got dataplane.Time) {
			if got != 1300 {
				t.Errorf("got %d, want the nominal 1300", got)
			}
		}},
		{"ingress hop is the nominal", 0.5, 0, reqs(1), 1000, func(t *testing.T, got dataplane.Time) {
			if got != 1000 {
				t.Errorf("got %d, want 1000", got)
			}
		}},
		{"one request scales its whole batch", 0.5, 1, reqs(7), 1100, func(t *testing.T, got dataplane.Time) {
			f := workFactor(reqs(7)[0], &dataplane.Stage{}, 0.5)
			if want := dataplane.Time(math.Ceil(1100 * f)); got != want || f < 0.5 || f > 1.5 {
				t.Errorf("got %d, want %d (factor %.3f in [0.5, 1.5])", got, want, f)
			}
		}},
		{"the other stages' items count at the nominal", 0.5, 1, reqs(3), 2000, func(t *testing.T, got dataplane.Time) {
			// N = 10 items planned; this stage's one request has factor f: base·f + 100·(9 + f).
			f := workFactor(reqs(3)[0], &dataplane.Stage{}, 0.5)
			if want := dataplane.Time(math.Ceil(1000*f + 100*(9+f))); got != want {
				t.Errorf("got %d, want %d", got, want)
			}
		}},
		{"fan-out items share their request's factor", 0.5, 4, reqs(5), 1400, func(t *testing.T, got dataplane.Time) {
			f := workFactor(reqs(5)[0], &dataplane.Stage{}, 0.5)
			if want := dataplane.Time(math.Ceil(1400 * f)); got != want {
				t.Errorf("got %d, want %d", got, want)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, st := workMeta(tc.spread, max(tc.items, 1))
			if tc.items == 0 {
				st = &dataplane.Stage{App: 0, Name: "a/$in"} // the ingress stage: no service
			}
			tc.check(t, m.work(st, tc.reqs, tc.nominal))
		})
	}
}

// TestWorkFactorDistribution: the factors are uniform on [1−s, 1+s] (mean 1 within 1%, every
// decile populated), a function of the trace key and the visit only.
func TestWorkFactorDistribution(t *testing.T) {
	const n = 20000
	st := &dataplane.Stage{App: 1, Index: 2}
	var sum float64
	var deciles [10]int
	for k := range int64(n) {
		r := reqs(k)[0]
		f := workFactor(r, st, 0.5)
		if f < 0.5 || f > 1.5 {
			t.Fatalf("key %d: factor %g outside [0.5, 1.5]", k, f)
		}
		sum += f
		deciles[min(int((f-0.5)*10), 9)]++
	}
	if mean := sum / n; math.Abs(mean-1) > 0.01 {
		t.Errorf("mean factor %.4f, want 1 ± 0.01", mean)
	}
	for i, c := range deciles {
		if c < n/10*9/10 || c > n/10*11/10 {
			t.Errorf("decile %d holds %d of %d factors, want %d ± 10%%", i, c, n, n/10)
		}
	}
	a, b := reqs(42)[0], reqs(42)[0]
	b.ID = 7
	if workFactor(a, st, 0.5) != workFactor(b, st, 0.5) {
		t.Error("two requests with the same trace key but other IDs drew different factors")
	}
	if workFactor(a, st, 0.5) != workFactorAt(dataplane.TraceKey(a), 0, st, 0.5) {
		t.Error("workFactor is not workFactorAt of the request's key and batch count")
	}
	if workFactor(a, st, 0.5) == workFactorAt(dataplane.TraceKey(b), 1, st, 0.5) {
		t.Error("a later visit of the same stage drew the same factor")
	}
	if u := dataplane.EmulatedU(a, 0); workFactor(a, &dataplane.Stage{}, 0.5) == 1+0.5*(2*u-1) {
		t.Error("the work factor repeats the branch draw")
	}
}

// TestExpLat: the scheduler's expected batch latency matches the work model's mean over many
// drawn batches (within 1%), and is the nominal without a spread.
func TestExpLat(t *testing.T) {
	m, st := workMeta(0.5, 1)
	sv := &m.W.Services[0]
	for _, b := range []int{1, 2, 4, 8, 32} {
		const trials = 4000
		var sum float64
		for k := range int64(trials) {
			keys := make([]int64, b)
			for i := range keys {
				keys[i] = k*int64(b) + int64(i)
			}
			sum += float64(m.work(st, reqs(keys...), dataplane.Time(sv.Lat(b))))
		}
		mean := sum / trials
		if got := sv.ExpLat(b); math.Abs(got-mean) > 0.01*mean {
			t.Errorf("b=%d: ExpLat %.0f µs, the work model's mean %.0f µs", b, got, mean)
		}
	}
	m0, _ := workMeta(0, 1)
	if s := &m0.W.Services[0]; s.ExpLat(7) != s.Lat(7) {
		t.Errorf("no spread: ExpLat(7) = %g, Lat(7) = %g", s.ExpLat(7), s.Lat(7))
	}
}
