package pard

import (
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// pardBench builds an engine running policy on one module (batch 8, 50 ms) whose worker is
// busy, with a full forming batch and depth requests waiting in its DEPQ.
func pardBench(tb testing.TB, policy string, depth int) (*Pipeline, *dataplane.Engine, dataplane.WorkerID) {
	tb.Helper()
	lat := make([]dataplane.Time, 9)
	for b := 1; b <= 8; b++ {
		lat[b] = 50 * dataplane.Millisecond
	}
	dep, err := NewPipelineDeployment([]PipelineSpec{{Name: "b", SLO: 1000 * dataplane.Second,
		Modules: []ModuleSpec{{Name: "m", Batch: 8, LatUs: lat, Workers: 1}}}}, 0)
	if err != nil {
		tb.Fatal(err)
	}
	pol, err := NewPolicy(dataplane.Config{Policy: policy, Params: map[string]string{"samples": "100"}})
	if err != nil {
		tb.Fatal(err)
	}
	e, err := dataplane.NewEngine(dep, pol, &dataplane.Recorder{})
	if err != nil {
		tb.Fatal(err)
	}
	p := PipelineOf(pol)
	if err := e.Handle(0, dataplane.Event{Kind: dataplane.EvTimer, Key: dataplane.TickToken}); err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < 1+8+depth; i++ { // r0 runs; 8 form the next batch; the rest wait
		if _, err := e.Arrive(dataplane.Time(i)*dataplane.Microsecond, 0, 0); err != nil {
			tb.Fatal(err)
		}
	}
	w := dep.Stages[0].Pool[0]
	if pw := &p.workers[w]; !pw.busy || len(pw.forming) != 8 || pw.q.Len() != depth {
		tb.Fatalf("setup: busy %v, forming %d, queued %d", pw.busy, len(pw.forming), pw.q.Len())
	}
	return p, e, w
}

// BenchmarkPARDBroker measures the request broker's decision at t_b: pop from the DEPQ (HBF
// or LBF end), the Eq. 3 estimate, adding to the forming batch with the planner's samples,
// and (to keep the queue depth constant) the push that enqueued the request.
func BenchmarkPARDBroker(b *testing.B) {
	for _, tc := range []struct {
		policy string
		depth  int
	}{{"pard-hbf", 64}, {"pard-lbf", 64}, {"pard", 1024}, {"nexus", 1024}} {
		b.Run(tc.policy, func(b *testing.B) {
			p, e, w := pardBench(b, tc.policy, tc.depth)
			pw := &p.workers[w]
			var dec dataplane.Decisions
			now := 10 * dataplane.Millisecond
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				pw.forming = pw.forming[:0] // as if the forming batch had launched
				p.fill(now, w, &dec)
				dec.Reset()
				for _, id := range pw.forming {
					r := e.View().Req(id)
					key := r.Deadline
					if p.variant.order == orderFIFO {
						key = now
					}
					pw.q.Push(key, id, now)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(8*b.N), "ns/decision")
		})
	}
}

// TestPARDBrokerSetup keeps the benchmark's set-up honest: every fill decides 8 requests.
func TestPARDBrokerSetup(t *testing.T) {
	p, _, w := pardBench(t, "pard", 16)
	pw := &p.workers[w]
	pw.forming = pw.forming[:0]
	var dec dataplane.Decisions
	p.fill(10*dataplane.Millisecond, w, &dec)
	if len(pw.forming) != 8 || dec.Len() != 0 || pw.q.Len() != 8 {
		t.Fatalf("forming %d, decisions %d, queued %d", len(pw.forming), dec.Len(), pw.q.Len())
	}
}
