package ppipe

import (
	"path/filepath"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
)

type nopEffects struct{}

func (nopEffects) RunBatch(dataplane.Time, dataplane.WorkerID, dataplane.BatchID, int, dataplane.StageID, int, dataplane.Time) {
}
func (nopEffects) Transfer(dataplane.Time, dataplane.BatchID, int, dataplane.ServerID, dataplane.ServerID, int64, dataplane.Time) {
}
func (nopEffects) SetTimer(dataplane.Time, int64)            {}
func (nopEffects) Finish(dataplane.Time, *dataplane.Request) {}

func loadFixture(tb testing.TB, name string) *dataplane.Deployment {
	tb.Helper()
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "sim", name), intree.Sections())
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
			if _, err := dataplane.NewEngine(dep, p, nopEffects{}); err != nil {
				b.Fatal(err)
			}
			a := &p.apps[0]
			gap := dataplane.Time(1e6 / dep.Apps[0].RateRPS)
			var now dataplane.Time
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				now += gap
				best := dataplane.Never
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
						for r >= 0 {
							x, ok := p.res.first(r)
							if !ok || x.e > now {
								break
							}
							p.res.correct(r, x.e, now)
						}
					}
				}
			}
		})
	}
}
