package serve

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	ap "github.com/plan-dev/plan/dataplane/autopilot"
	"github.com/plan-dev/plan/formats"
)

// spinSolver stands for a re-solve: it keeps one core busy (as HiGHS does, threads=1) until
// its context ends or stop closes.
type spinSolver struct{ stop chan struct{} }

func (s spinSolver) Solve(ctx context.Context, _ ap.Demand) (ap.Candidate, error) {
	x := 0
	for {
		select {
		case <-ctx.Done():
			return ap.Candidate{}, ctx.Err()
		case <-s.stop:
			return ap.Candidate{}, context.Canceled
		default:
		}
		for i := 0; i < 1e5; i++ {
			x += i
		}
		_ = x
	}
}

// BenchmarkAutopilotResolveP99 measures the request path's p99 at half the plan's rate with
// the autopilot idle and with a background re-solve running the whole time (issue 35: the
// p99 must not rise by more than 10%). It reports p99-ms; compare the two sub-benchmarks.
func BenchmarkAutopilotResolveP99(b *testing.B) {
	for _, resolving := range []bool{false, true} {
		name := "idle"
		if resolving {
			name = "resolving"
		}
		b.Run(name, func(b *testing.B) {
			p := loadPlan(b, "one-gpu.json")
			rate := p.PPipe.Models[0].ThroughputRPS
			stop := make(chan struct{})
			capacity := rate // inside the band: no re-solve
			if resolving {
				capacity = 100 * rate // far above the load: a re-solve is due at once
			}
			pilot := NewAutopilot(AutopilotOptions{
				Loop:   ap.Config{Window: 50 * dataplane.Millisecond, Hold: 1},
				Solver: spinSolver{stop}, Apps: []string{"m1"}, SolveTimeout: time.Hour,
				Describe: func(*formats.Plan) (ap.Candidate, error) {
					return ap.Candidate{GPUs: 1, Capacity: []float64{capacity}}, nil
				},
			})
			_, ts := testServer(b, Options{Plan: p, Frontends: []Frontend{pilot}})
			if err := pilot.Start(); err != nil {
				b.Fatal(err)
			}
			defer close(stop)
			url := ts.URL + "/v2/models/m1/infer"
			gap := time.Duration(float64(time.Second) / (0.5 * rate))
			var lat []float64
			var mu sync.Mutex
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var wg sync.WaitGroup
				start := time.Now()
				for k := 0; k < 200; k++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						t0 := time.Now()
						resp, err := http.Post(url, "application/json", strings.NewReader(inferBody(1)))
						if err != nil {
							return
						}
						resp.Body.Close()
						mu.Lock()
						lat = append(lat, float64(time.Since(t0).Microseconds())/1e3)
						mu.Unlock()
					}()
					time.Sleep(time.Until(start.Add(time.Duration(k+1) * gap)))
				}
				wg.Wait()
			}
			b.StopTimer()
			if resolving && !pilot.loop.Status().Solving {
				b.Error("no re-solve ran during the measurement")
			}
			sort.Float64s(lat)
			if len(lat) > 0 {
				b.ReportMetric(lat[len(lat)*99/100], "p99-ms")
			}
		})
	}
}
