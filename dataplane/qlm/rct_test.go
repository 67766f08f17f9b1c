package qlm

import (
	"fmt"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/sim"
)

// rctRun serves the bundled Mistral-7B chat class (output 250 ± 150 tokens) on one A100
// under QLM: warm requests arriving evenly over the first 20 s saturate the instance so its
// throughput is profiled (QLM §2.4 Insight #1), then n requests arrive evenly over spread.
// It returns the RCT R² of the estimates made from 20 s on against the simulator's
// completions. A short spread builds the queue whose positions the paper's Fig. 3 and
// Fig. 14 plot; a spread as long as the drain time is steady service, where a request's own
// unknown output length dominates its completion.
func rctRun(t testing.TB, warm, n int, spread dataplane.Time) (float64, int) {
	cls, profs := bundled(t)
	c := cls[0]
	c.SLO = formats.Duration(time.Hour) // measure the estimator, not the SLO machinery
	dep, err := Build([]llmspec.LLMClass{c}, Setup{Profiles: profs, Instances: []Instance{{Name: "i0", GPU: "A100", Model: c.Model}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Registry().New(dep, dataplane.Config{Policy: PolicyQLM}, PolicyQLM)
	if err != nil {
		t.Fatal(err)
	}
	const from = 20 * dataplane.Second
	var at []dataplane.Time
	for i := 0; i < warm; i++ {
		at = append(at, from*dataplane.Time(i)/dataplane.Time(warm))
	}
	for i := 0; i < n; i++ {
		at = append(at, from+spread*dataplane.Time(i)/dataplane.Time(n))
	}
	done := map[dataplane.ReqID]dataplane.Time{}
	s, err := sim.New(dep, p, []sim.Source{&sim.Times{T: at}}, sim.Options{Duration: from + spread + dataplane.Second, Seed: 5,
		OnFinish: func(now dataplane.Time, r *dataplane.Request) { done[r.ID] = now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	return RCTR2(p.(*Policy).Stats(), done, from)
}

// TestRCTR2: the RCT estimator (QLM §6, Eq. 2–4) against the simulator's measured
// completion times for a queue of 8 000 requests after 20 s of saturating warm-up (the
// paper's setting, Fig. 3/14: R² 0.99; this test requires ≥ 0.95).
func TestRCTR2(t *testing.T) {
	r2, n := rctRun(t, 600, 8000, 2*dataplane.Second)
	t.Logf("RCT R² = %.4f over %d requests", r2, n)
	if n != 8000 {
		t.Fatalf("%d of 8000 requests scored", n)
	}
	if !(r2 >= 0.95) {
		t.Fatalf("RCT R² = %.4f < 0.95 over %d requests", r2, n)
	}
}

// BenchmarkRCTR2 reports the estimator's R² as a custom metric for queues of 1 500, 4 000
// and 8 000 requests and in steady service (4 000 arrivals spread over 400 s, about the
// drain time). Own output lengths are unknown (Normal(250, 150) tokens, ±7 s of decode), so
// R² grows with the waiting-time range a longer queue spans.
func BenchmarkRCTR2(b *testing.B) {
	for _, c := range []struct {
		n      int
		spread dataplane.Time
	}{{1500, 2 * dataplane.Second}, {4000, 2 * dataplane.Second}, {8000, 2 * dataplane.Second}, {4000, 400 * dataplane.Second}} {
		b.Run(fmt.Sprintf("n=%d/spread=%ds", c.n, c.spread/dataplane.Second), func(b *testing.B) {
			var r2 float64
			for b.Loop() {
				r2, _ = rctRun(b, 600, c.n, c.spread)
			}
			b.ReportMetric(r2, "R²")
		})
	}
}

// TestRCTR2Hand: R² of exact predictions is 1, of predicting the mean is 0.
func TestRCTR2Hand(t *testing.T) {
	st := &Stats{Predicted: map[dataplane.ReqID]dataplane.Time{0: 10, 1: 20, 2: 30}, PredictedAt: map[dataplane.ReqID]dataplane.Time{}}
	if r2, n := RCTR2(st, map[dataplane.ReqID]dataplane.Time{0: 10, 1: 20, 2: 30}, 0); r2 != 1 || n != 3 {
		t.Fatalf("exact: %g over %d", r2, n)
	}
	st.Predicted = map[dataplane.ReqID]dataplane.Time{0: 20, 1: 20, 2: 20}
	if r2, _ := RCTR2(st, map[dataplane.ReqID]dataplane.Time{0: 10, 1: 20, 2: 30}, 0); r2 != 0 {
		t.Fatalf("mean: %g", r2)
	}
}
