package kservegrpc

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/serve/load"
	"github.com/plan-dev/plan/sim"
)

// TestLoadOverGRPC: `plan load --grpc` — the load generator's requests go over gRPC (typed,
// raw and FP16 raw), plan and metadata over HTTP, and every one is served.
func TestLoadOverGRPC(t *testing.T) {
	s, _, conn := start(t, serve.Options{Plan: loadPlan(t, "wide.json")})
	ts := httptest.NewServer(s)
	defer ts.Close()
	for _, tc := range []struct {
		name      string
		raw, half bool
	}{{"typed", false, false}, {"raw", true, false}, {"fp16", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := load.Run(context.Background(), load.Options{URL: ts.URL, Deploy: testDeploy, Sections: testSections, Rate: 400,
				Duration: 250 * time.Millisecond, Arrival: sim.ArrivalSpec{Kind: "poisson"}, Seed: 1, Send: Sender(conn, tc.raw, tc.half)})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Samples) == 0 {
				t.Fatal("no requests sent")
			}
			// Every request is answered by the server: 200 with the server's latency, or — on a
			// machine too busy to keep the schedule — a drop that says why. Never a transport
			// error, never a drop without a reason.
			ok := 0
			for _, smp := range res.Samples {
				switch {
				case smp.Status == 200 && smp.ServerLatency > 0:
					ok++
				case smp.Status == 503 && smp.Reason != "":
				default:
					t.Fatalf("sample %+v: want 200 with the server's latency or 503 with a reason", smp)
				}
			}
			if ok == 0 {
				t.Fatalf("no request of %d answered 200", len(res.Samples))
			}
		})
	}
}
