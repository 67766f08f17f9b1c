package serve

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

func TestDeliveryTracker(t *testing.T) {
	for _, tc := range []struct {
		name string
		draw func(r *rand.Rand) int64
		lo   int64 // the estimate after 200k answers lies in [lo, hi]
		hi   int64
	}{
		// p99 of U(0, 1000) µs is 990.
		{"uniform 0-1ms", func(r *rand.Rand) int64 { return r.Int64N(1000) }, 900, 1000},
		// 2% of answers take 20 ms, the rest 100 µs: the p99 is 20 ms.
		{"2% slow", func(r *rand.Rand) int64 {
			if r.IntN(100) < 2 {
				return 20000
			}
			return 100
		}, 15000, 20000},
		// 0.5% slow: the p99 is the fast mode.
		{"0.5% slow", func(r *rand.Rand) int64 {
			if r.IntN(1000) < 5 {
				return 20000
			}
			return 100
		}, 0, 400},
		{"constant", func(*rand.Rand) int64 { return 250 }, 250, 250},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d deliveryTracker
			r := rand.New(rand.NewPCG(1, 2))
			for range 200000 {
				d.observe(tc.draw(r))
			}
			if q := d.q.Load(); q < tc.lo || q > tc.hi {
				t.Errorf("estimate %d µs, want in [%d, %d]", q, tc.lo, tc.hi)
			}
		})
	}
}

func TestDeliveryMarginCap(t *testing.T) {
	var d deliveryTracker
	d.q.Store(50000)
	if got := d.margin(200 * dataplane.Millisecond); got != 20*dataplane.Millisecond {
		t.Errorf("margin = %d µs, want the cap of a tenth of the SLO (20 ms)", got)
	}
	if got := d.margin(1000 * dataplane.Millisecond); got != 50000 {
		t.Errorf("margin = %d µs, want the estimate 50000", got)
	}
}

// TestDeliveryMargin: the engine plans against the deadline less the delivery margin. On the
// demo plan a lone request takes 5.5 ms on its fastest pipeline; with a 6.8 ms deadline it is
// served, and once answers take 1.4 ms (the cap, a tenth of the 14.2 ms SLO) to reach their
// clients the same request is refused (its answer would arrive after 6.8 ms).
func TestDeliveryMargin(t *testing.T) {
	p := loadPlan(t, "demo-plan.json")
	s, _ := testServer(t, Options{Plan: p})
	req := Request{Model: ppipesec.PlanOf(p).Models[0].Model, ID: "m", Deadline: 6800 * time.Microsecond}
	if a := submitRetry(t, s, req); a.Status != 200 {
		t.Fatalf("margin 0: status %d %s %s", a.Status, a.Reason, a.Err)
	}
	s.d.delivery.q.Store(5000)
	a, err := s.Submit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != 503 {
		t.Fatalf("margin 1.4 ms: status %d outcome %s, want 503", a.Status, a.Outcome)
	}
}
