package dataplane

import (
	"path/filepath"
	"testing"

	"github.com/plan-dev/plan/formats"
)

type nopEffects struct{}

func (nopEffects) RunBatch(Time, WorkerID, BatchID, int, StageID, int, Time)    {}
func (nopEffects) Transfer(Time, BatchID, int, ServerID, ServerID, int64, Time) {}
func (nopEffects) SetTimer(Time, int64)                                         {}
func (nopEffects) Finish(Time, *Request)                                        {}

func loadFixture(tb testing.TB, name string) *Deployment {
	tb.Helper()
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "testdata", "sim", name))
	if err != nil {
		tb.Fatal(err)
	}
	d, err := FromPlan(p)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// BenchmarkProbeReserve is the dispatch-cost target: step 1 (one probe per pipeline at its
// planned batch) plus the reservation of the winner, per dispatched batch, on the 100-GPU
// fixture (72 P4 → 23 L4 and 2 whole L4), in steady state at the plan's throughput.
func BenchmarkProbeReserve(b *testing.B) {
	for _, mode := range []struct {
		name     string
		interval bool
	}{{"busy-until", false}, {"interval", true}} {
		b.Run(mode.name, func(b *testing.B) {
			dep := loadFixture(b, "hc1-100.json")
			p := NewPPipe(PPipeOptions{Interval: mode.interval, Penalty: true, Admission: true})
			if _, err := NewEngine(dep, p, nopEffects{}); err != nil {
				b.Fatal(err)
			}
			a := &p.apps[0]
			gap := Time(1e6 / dep.Apps[0].RateRPS)
			var now Time
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				now += gap
				best := Never
				pi := 0
				for j := range a.pipes {
					p.probe(&a.pipes[j], a.pipes[j].bs, now, &p.cand)
					if p.cand.wait < best {
						best, pi = p.cand.wait, j
						p.cand, p.best = p.best, p.cand
					}
				}
				p.reserve(&a.pipes[pi], &p.best)
				// Retire what ended by now on the resources just used, as the completion
				// reports of a running system would.
				for d, h := range p.best.path[:len(a.pipes[pi].stages)] {
					rs := [3]int{int(h.Worker), -1, -1}
					if d > 0 {
						rs[1] = p.nw + int(p.server[p.best.path[d-1].Worker])
						rs[2] = p.nw + p.ns + int(p.server[h.Worker])
					}
					for _, r := range rs {
						for r >= 0 && len(p.res.list(r)) > 0 && p.res.list(r)[0].e <= now {
							p.res.correct(r, p.res.list(r)[0].e, now)
						}
					}
				}
			}
		})
	}
}
