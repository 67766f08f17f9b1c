package dyorc

import (
	"fmt"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/sim"
)

// TestWorkerFailure: a worker failure under every policy of the system. The run drains and
// every request finishes exactly once; while a GPU has a failed worker nothing runs on any of
// its workers and nothing loads onto it; with live GPUs left, the released calls are placed
// again (rerouted) and no request fails; with none left (one GPU, down for good), requests
// are dropped as worker-failed, only from the failure on; a failed API-server worker's
// ingresses go to the app's other one.
func TestWorkerFailure(t *testing.T) {
	const at = 3 * dataplane.Second
	for _, tc := range []struct {
		name    string
		gpus    int
		until   dataplane.Time // 0 = down for good
		ingress bool           // fail an API-server worker instead of a GPU's
		failed  bool           // requests must be dropped as worker-failed
	}{
		{name: "gpu-recovers", gpus: 4, until: 6 * dataplane.Second},
		{name: "gpu-permanent", gpus: 4},
		{name: "api-server", gpus: 4, until: 6 * dataplane.Second, ingress: true},
		{name: "only-gpu-permanent", gpus: 1, failed: true},
	} {
		for _, sp := range Policies() {
			t.Run(fmt.Sprintf("%s/%s", tc.name, sp.Name), func(t *testing.T) {
				w := loadWorkflow(t, "workload.json")
				warm := make([][]int, tc.gpus)
				c := Cluster{GPUs: tc.gpus, PerServer: 8, MemBytes: 80e9, Type: "A800"}
				used := make([]int64, tc.gpus)
				for sv := range w.Services {
					if g := sv % tc.gpus; used[g]+w.Services[sv].Bytes <= c.MemBytes {
						warm[g] = append(warm[g], sv)
						used[g] += w.Services[sv].Bytes
					}
				}
				dep, err := NewDeployment(w, c, warm, DefaultNet)
				if err != nil {
					t.Fatal(err)
				}
				m, _ := MetaOf(dep)
				// A warm service's holder on GPU 0: the failure takes a resident model too.
				fw := m.Holder[0][m.Warm[0][0]]
				if tc.ingress {
					fw = m.IngressWorkers[0][0]
				}
				sp, _ := Registry().Lookup(sp.Name)
				pol, err := sp.New(dataplane.Config{Policy: sp.Name})
				if err != nil {
					t.Fatal(err)
				}
				var srcs []sim.Source
				for a := range dep.Apps {
					s, err := sim.ArrivalSpec{Kind: "poisson"}.New(max(dep.Apps[a].RateRPS, 0.5), dep.Apps[a].Name, uint64(a)+11)
					if err != nil {
						t.Fatal(err)
					}
					srcs = append(srcs, s)
				}
				end := tc.until
				if end == 0 {
					end = dataplane.Never
				}
				// The failed worker's GPU: every worker on it is out while it is down.
				onFailed := map[dataplane.WorkerID]bool{fw: true}
				if g := m.DevOf[fw]; g >= 0 {
					for _, x := range m.WorkerOf[g] {
						if x != dataplane.NoWorker {
							onFailed[x] = true
						}
					}
				}
				finished := map[dataplane.ReqID]int{}
				var failed int
				opts := sim.Options{Duration: 10 * dataplane.Second, Seed: 5, Jitter: 0.05,
					Horizon:  1000 * dataplane.Second,
					Failures: []sim.Failure{{Worker: fw, At: at, Until: tc.until}},
					Attrs: func(a dataplane.AppID, n int64) dataplane.Attrs {
						return dataplane.Attrs{Sample: 5*1_000_003 + n*31 + int64(a) + 1}
					},
					OnFinish: func(_ dataplane.Time, r *dataplane.Request) {
						finished[r.ID]++
						if r.Reason() == dataplane.DropWorkerFailed {
							failed++
							if r.Done < at || r.Done >= end {
								t.Errorf("request %d dropped as worker-failed at %d µs, outside the failure", r.ID, r.Done)
							}
						}
					},
					Observe: func(now dataplane.Time, ev *dataplane.Event, ds []dataplane.Decision) {
						if now < at || now >= end {
							return
						}
						for _, d := range ds {
							if (d.Kind == dataplane.DLoad || d.Kind == dataplane.DEvict) && onFailed[d.Worker] ||
								d.Kind == dataplane.DDispatch && onFailed[d.Path[0].Worker] {
								t.Errorf("%v onto the failed GPU at %d µs (after %v)", d.Kind, now, ev.Kind)
							}
						}
					}}
				s, err := sim.New(dep, pol, srcs, opts)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Run(); err != nil {
					t.Fatal(err)
				}
				reqs := s.Engine.Requests()
				if len(reqs) == 0 {
					t.Fatal("no requests")
				}
				for i := range reqs {
					r := &reqs[i]
					if finished[r.ID] != 1 {
						t.Fatalf("request %d (%v) finished %d times", r.ID, r.Outcome, finished[r.ID])
					}
				}
				for _, b := range s.Engine.Batches() {
					if b.Lost {
						continue
					}
					for i, h := range b.Hops {
						// The GPU's other workers finish what they ran when it failed.
						if h.Start >= 0 && (h.Worker == fw && h.End > at || onFailed[h.Worker] && h.Start >= at) && h.Start < end {
							t.Errorf("batch %d hop %d ran on the failed GPU at [%d, %d)", b.ID, i, h.Start, h.End)
						}
					}
				}
				st := pol.(*Policy).Stats()
				if tc.failed {
					if failed == 0 {
						t.Error("no request dropped as worker-failed with no live GPU left")
					}
					return
				}
				if failed != 0 || st.FailDropped != 0 {
					t.Errorf("%d requests dropped as worker-failed (policy: %d) with live workers left", failed, st.FailDropped)
				}
				if st.Rerouted == 0 && !tc.ingress {
					t.Error("the failure released nothing to re-route: it hit nothing")
				}
			})
		}
	}
}
