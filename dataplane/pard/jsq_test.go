package pard

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// pickLinear is the reference: the module dispatcher as first written, a scan of every
// worker from m.rr on (round-robin tie-break) for the least join-shortest-queue load among
// those serving now. It reads m.rr but does not move it.
func (p *Pipeline) pickLinear(now dataplane.Time, m *pardModule) dataplane.WorkerID {
	best := dataplane.NoWorker
	bestLoad := math.MaxInt
	n := len(m.workers)
	for i := 0; i < n; i++ {
		w := m.workers[(m.rr+i)%n]
		pw := &p.workers[w]
		if pw.activeAt > now {
			continue
		}
		load := 2 * (pw.q.Len() + len(pw.forming))
		if pw.busy {
			load++
		}
		if load < bestLoad {
			best, bestLoad = w, load
		}
	}
	if best == dataplane.NoWorker {
		best = m.workers[0]
	}
	return best
}

// wideSpec is a random PARD pipeline like Sample's but with wide modules (up to 40
// workers, more for the autoscaler), so ties, cold workers and the round-robin wrap occur.
func wideSpec(r *rand.Rand) PipelineSpec {
	n := 2 + r.IntN(3)
	spec := PipelineSpec{Name: "app"}
	var sum dataplane.Time
	capMin := math.Inf(1)
	for k := 0; k < n; k++ {
		m := ModuleSpec{Name: fmt.Sprintf("m%d", k), GPU: "T4", Batch: 1 + r.IntN(8), Workers: 1 + r.IntN(40)}
		m.MaxWorkers = m.Workers + r.IntN(10)
		base := dataplane.Time(1000 + r.IntN(8000))
		m.LatUs = make([]dataplane.Time, m.Batch+1)
		for b := 1; b <= m.Batch; b++ {
			m.LatUs[b] = base + dataplane.Time(b-1)*base/3
		}
		if k > 0 {
			m.After = []string{fmt.Sprintf("m%d", k-1)}
		}
		capMin = min(capMin, float64(m.Workers*m.Batch)/(float64(m.LatUs[m.Batch])/1e6))
		sum += 2 * m.LatUs[m.Batch]
		spec.Modules = append(spec.Modules, m)
	}
	spec.SLO = sum + dataplane.Time(r.IntN(int(sum)+1))
	spec.RateRPS = capMin
	return spec
}

// TestPickMatchesScan runs whole simulations of every PARD pipeline policy on wide random
// pipelines and sample deployments, with and without the autoscaler (short cold starts),
// at loads around capacity, checking every pick against the scan.
func TestPickMatchesScan(t *testing.T) {
	var picks, cold int64
	for seed := uint64(0); seed < 8; seed++ {
		for _, name := range PipelinePolicies() {
			r := rand.New(rand.NewPCG(seed, 17))
			var dep *dataplane.Deployment
			if seed%3 == 0 {
				dep = Sample(r)
			} else {
				var err error
				if dep, err = NewPipelineDeployment([]PipelineSpec{wideSpec(r)}, DefaultHop); err != nil {
					t.Fatal(err)
				}
			}
			params := map[string]string{"samples": "200", "ring": "500"}
			if seed%2 == 1 {
				params["autoscale"] = "1"
				params["cold_start_s"] = "0.3"
				params["scale_window_s"] = "1"
				params["scale_down_s"] = "2"
			}
			pol, err := NewPolicy(dataplane.Config{Policy: name, Params: params})
			if err != nil {
				t.Fatal(err)
			}
			p := PipelineOf(pol)
			p.checkPick = func(now dataplane.Time, m *pardModule, got dataplane.WorkerID) {
				picks++
				for _, w := range m.workers {
					if at := p.workers[w].activeAt; at > now && at != dataplane.Never {
						cold++ // a provisioned worker still starting: the activation path
						break
					}
				}
				if want := p.pickLinear(now, m); got != want {
					t.Fatalf("%s seed %d at %d: picked %d, the scan picks %d", name, seed, now, got, want)
				}
			}
			rate := dep.Apps[0].RateRPS
			if rate <= 0 {
				rate = 200
			}
			load := 0.6 + 0.8*r.Float64()
			runSim(t, dep, pol, rate*load, 3*dataplane.Second, rand.New(rand.NewPCG(seed, 18)))
		}
	}
	t.Logf("%d picks compared, %d with a worker starting", picks, cold)
}

// miniSim is a bare event loop for this package's tests (the sim package imports this
// one): Poisson arrivals, batches and transfers that take their nominal time ±30%, timers.
type miniSim struct {
	h   dataplane.TimeHeap[dataplane.Event]
	seq uint64
	r   *rand.Rand
}

func (s *miniSim) push(at dataplane.Time, ev dataplane.Event) {
	s.seq++
	s.h.Push(dataplane.Timed[dataplane.Event]{At: at, Seq: s.seq, Val: ev})
}

func (s *miniSim) jit(d dataplane.Time) dataplane.Time {
	return max(d+dataplane.Time((s.r.Float64()-0.5)*0.6*float64(d)), 0)
}

func (s *miniSim) RunBatch(now dataplane.Time, w dataplane.WorkerID, b dataplane.BatchID, hop int, _ dataplane.StageID, _ int, nominal dataplane.Time) {
	end := now + s.jit(nominal)
	s.push(end, dataplane.Event{Kind: dataplane.EvBatchDone, Batch: b, Hop: int32(hop), Worker: w, Start: now, End: end})
}

func (s *miniSim) Transfer(now dataplane.Time, b dataplane.BatchID, hop int, _, _ dataplane.ServerID, _ int64, nominal dataplane.Time) {
	end := now + s.jit(nominal)
	s.push(end, dataplane.Event{Kind: dataplane.EvTransferDone, Batch: b, Hop: int32(hop), Start: now, End: end})
}

func (s *miniSim) SetTimer(at dataplane.Time, key int64) {
	s.push(at, dataplane.Event{Kind: dataplane.EvTimer, Key: key})
}

func (s *miniSim) Finish(dataplane.Time, *dataplane.Request) {}

// runSim runs dep's first application under pol at rps for dur, then stops (ticks would
// go on forever).
func runSim(tb testing.TB, dep *dataplane.Deployment, pol dataplane.Policy, rps float64, dur dataplane.Time, r *rand.Rand) {
	tb.Helper()
	s := &miniSim{r: r}
	e, err := dataplane.NewEngine(dep, pol, s)
	if err != nil {
		// Some samples are outside a policy's reach (two sinks): nothing to compare.
		tb.Logf("skipped: %v", err)
		return
	}
	const arrival = dataplane.EventKind(255) // ours: the loop's own arrival ticks
	gap := func() dataplane.Time { return dataplane.Time(r.ExpFloat64() * 1e6 / rps) }
	s.push(gap(), dataplane.Event{Kind: arrival})
	for len(s.h) > 0 {
		it := s.h.Pop()
		if it.At > dur+2*dataplane.Second {
			break
		}
		if it.Val.Kind == arrival {
			if it.At < dur {
				if _, err := e.Arrive(it.At, 0, 0); err != nil {
					tb.Fatal(err)
				}
				s.push(it.At+gap(), it.Val)
			}
			continue
		}
		if err := e.Handle(it.At, it.Val); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkPick is the module dispatcher's cost per request against the module's width:
// the index (pick) and the reference scan, each followed by a change of the chosen
// worker's load as a real arrival would make.
func BenchmarkPick(b *testing.B) {
	for _, n := range []int{16, 256, 4096} {
		for _, scan := range []bool{false, true} {
			name := fmt.Sprintf("workers=%d/index", n)
			if scan {
				name = fmt.Sprintf("workers=%d/scan", n)
			}
			b.Run(name, func(b *testing.B) {
				lat := []dataplane.Time{0, 5000}
				dep, err := NewPipelineDeployment([]PipelineSpec{{Name: "b", SLO: dataplane.Second,
					Modules: []ModuleSpec{{Name: "m", Batch: 1, LatUs: lat, Workers: n}}}}, 0)
				if err != nil {
					b.Fatal(err)
				}
				pol, err := NewPolicy(dataplane.Config{Policy: "pard", Params: map[string]string{"samples": "100"}})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := dataplane.NewEngine(dep, pol, &dataplane.Recorder{}); err != nil {
					b.Fatal(err)
				}
				p := PipelineOf(pol)
				m := &p.mods[0]
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					var w dataplane.WorkerID
					if scan {
						w = p.pickLinear(0, m)
						m.rr = (m.rr + 1) % n
					} else {
						w = p.pick(0, m)
					}
					pw := &p.workers[w]
					pw.busy = !pw.busy
					p.reload(w)
				}
			})
		}
	}
}
