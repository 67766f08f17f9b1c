package ppipe

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// probeLinear is the reference: the probe as first written (PPipe A.3, Alg. 2), scoring every
// worker of each pool in pool order and keeping the first of the least scores. The pool
// index must reproduce its results exactly.
func (p *PPipe) probeLinear(pp *ppPipe, b int, now dataplane.Time, out *probeResult) {
	t := now
	var work dataplane.Time
	for d := range pp.stages {
		inf := pp.lat[d][b]
		net := pp.net[d][b]
		work += inf + net
		best := dataplane.Never
		var bw dataplane.WorkerID
		var bts, bxs, bend dataplane.Time
		var src dataplane.ServerID
		if d > 0 {
			src = p.server[out.path[d-1].Worker]
		}
		for _, w := range pp.pools[d] {
			tw := t
			var xs dataplane.Time
			dst := p.server[w]
			if d > 0 {
				tw = p.res.earliest2(p.nw+int(src), p.nw+p.ns+int(dst), tw, net)
				xs = tw
				tw += net
			}
			ts := p.res.earliest1(int(w), tw, inf)
			end := ts + inf
			score := end
			if d < pp.last {
				if u := p.res.busyUntil(p.nw + int(dst)); u > score {
					score = u
				}
			}
			if score < best {
				best, bw, bts, bxs, bend = score, w, ts, xs, end
			}
		}
		out.path[d] = dataplane.PathHop{Stage: pp.stages[d], Worker: bw, ResStart: bts}
		if d > 0 {
			out.path[d-1].OutStart = bxs
		}
		t = bend
	}
	out.finish = t
	out.wait = t - now - work
	out.b = b
	out.now = now
}

// sameProbe compares two probe results of pipeline pp.
func sameProbe(pp *ppPipe, a, b *probeResult) error {
	n := len(pp.stages)
	if a.finish != b.finish || a.wait != b.wait || a.b != b.b || !slices.Equal(a.path[:n], b.path[:n]) {
		return fmt.Errorf("index: finish %d wait %d path %+v\nscan:  finish %d wait %d path %+v",
			a.finish, a.wait, a.path[:n], b.finish, b.wait, b.path[:n])
	}
	return nil
}

// attachCheck makes every probe of p also run the reference scan and report a difference.
func attachCheck(tb testing.TB, p *PPipe, probes *int64) {
	ref := probeResult{}
	p.checkProbe = func(pp *ppPipe, b int, now dataplane.Time, out *probeResult) {
		if len(ref.path) < len(out.path) {
			ref.path = make([]dataplane.PathHop, len(out.path))
		}
		p.probeLinear(pp, b, now, &ref)
		*probes++
		if err := sameProbe(pp, out, &ref); err != nil {
			tb.Fatalf("probe of %d at %d differs:\n%v", b, now, err)
		}
		if f := p.waitFloor(pp, b, now); f > out.wait {
			tb.Fatalf("probe of %d at %d: wait %d below its floor %d", b, now, out.wait, f)
		}
	}
}

// busyNICs puts an attached dispatcher's every resource back in busy-until mode, shared
// servers' NICs included, and rebuilds the index: the pure busy-until tables, which the
// default dispatcher keeps only on deployments whose servers each serve one stage.
func busyNICs(p *PPipe) {
	for i := range p.res.fill {
		p.res.fill[i] = false
	}
	p.ix.build(p)
}

// scaleUp makes a Sample deployment k times wider: every pool gets k times the workers,
// spread over k times the servers (copies placed round-robin, some servers shared by
// several pools and slices), and the rate grows k-fold.
func scaleUp(d *dataplane.Deployment, k int, r *rand.Rand) *dataplane.Deployment {
	ns := len(d.Topo.Servers)
	for c := 1; c < k; c++ {
		for s := 0; s < ns; s++ {
			sv := d.Topo.Servers[s]
			sv.Name = fmt.Sprintf("%s-%d", sv.Name, c)
			d.Topo.Servers = append(d.Topo.Servers, sv)
		}
	}
	nsrv := len(d.Topo.Servers)
	for si := range d.Stages {
		st := &d.Stages[si]
		orig := len(st.Pool)
		for c := 1; c < k; c++ {
			for j := 0; j < orig; j++ {
				w0 := d.Topo.Workers[st.Pool[j]]
				sv := dataplane.ServerID(r.IntN(nsrv))
				d.Topo.GPUs = append(d.Topo.GPUs, dataplane.GPU{Type: w0.Type, Server: sv})
				w := dataplane.WorkerID(len(d.Topo.Workers))
				w0.Name = fmt.Sprintf("w%d", w)
				w0.GPU = len(d.Topo.GPUs) - 1
				w0.Server = sv
				d.Topo.Workers = append(d.Topo.Workers, w0)
				st.Pool = append(st.Pool, w)
			}
		}
		// Shuffle the pool so pool order and server order disagree.
		r.Shuffle(len(st.Pool), func(i, j int) { st.Pool[i], st.Pool[j] = st.Pool[j], st.Pool[i] })
	}
	for a := range d.Apps {
		d.Apps[a].RateRPS *= float64(k)
	}
	return d
}

// TestIndexMatchesScanRandomStates drives the reservation tables through random bookings
// and completion reports (early, late and on time) on scaled-up sample deployments, and at
// every step compares the index's probe with the scan's for every pipeline and batch size,
// in both reservation modes.
func TestIndexMatchesScanRandomStates(t *testing.T) {
	for seed := uint64(0); seed < 150; seed++ {
		for _, mode := range []string{"busy-until", "shared NICs fill gaps", "interval"} {
			interval := mode == "interval"
			r := rand.New(rand.NewPCG(seed, 99))
			dep := scaleUp(Sample(r), 1+r.IntN(12), r)
			// Some zero transfers and latencies: the bounds' corner cases.
			for si := range dep.Stages {
				if r.IntN(4) == 0 {
					dep.Stages[si].XferPerSampleUs = 0
					dep.Stages[si].OutBytes = 0
				}
				if r.IntN(8) == 0 {
					dep.Stages[si].LatUs[1] = 0
				}
			}
			p := NewPPipe(PPipeOptions{Interval: interval, Penalty: true, Admission: true})
			if _, err := dataplane.NewEngine(dep, p, nopEffects{}); err != nil {
				t.Fatal(err)
			}
			if mode == "busy-until" {
				busyNICs(p)
			}
			ref := probeResult{path: make([]dataplane.PathHop, len(p.cand.path))}
			var now dataplane.Time
			for step := 0; step < 400; step++ {
				now += dataplane.Time(r.IntN(3000))
				a := &p.apps[r.IntN(len(p.apps))]
				for pi := range a.pipes {
					pp := &a.pipes[pi]
					for b := 1; b <= pp.bs; b++ {
						p.probe(pp, b, now, &p.cand)
						p.probeLinear(pp, b, now, &ref)
						if err := sameProbe(pp, &p.cand, &ref); err != nil {
							t.Fatalf("seed %d %s step %d pipe %d b %d: %v", seed, mode, step, pi, b, err)
						}
						if f := p.waitFloor(pp, b, now); f > ref.wait {
							t.Fatalf("seed %d %s step %d pipe %d b %d: wait %d below its floor %d", seed, mode, step, pi, b, ref.wait, f)
						}
					}
				}
				// Book a random probe's result.
				pp := &a.pipes[r.IntN(len(a.pipes))]
				p.probe(pp, 1+r.IntN(pp.bs), now, &p.best)
				p.reserve(pp, &p.best)
				// Report completions of some resources, off by up to ±2 ms.
				for k := 0; k < 3; k++ {
					i := r.IntN(len(p.res.iv))
					if l := p.res.list(i); len(l) > 0 && (l[0].e <= now || r.IntN(3) == 0) {
						end := max(l[0].e+dataplane.Time(r.IntN(4001)-2000), now)
						p.res.correct(i, end, now)
					}
				}
			}
		}
	}
}

// TestIndexMatchesScanSimulations runs whole simulations of scaled-up sample deployments
// with every probe checked against the scan, under every PPipe dispatcher configuration.
func TestIndexMatchesScanSimulations(t *testing.T) {
	var probes int64
	for seed := uint64(0); seed < 10; seed++ {
		for _, o := range []PPipeOptions{
			{Penalty: true, Admission: true},
			{Interval: true, Penalty: true, Admission: true},
			{},
			{Interval: true},
		} {
			r := rand.New(rand.NewPCG(seed, 5))
			dep := scaleUp(Sample(r), 1+r.IntN(12), r)
			p := NewPPipe(o)
			attachCheck(t, p, &probes)
			runSim(t, dep, p, 0.5+r.Float64(), dataplane.Second, rand.New(rand.NewPCG(seed, 6)))
		}
	}
	// The fixtures too: hc1-100 (one GPU per server), the NIC-bound and the mixed plans.
	for _, name := range []string{"hc1-100.json", "nic.json", "mixed.json"} {
		for _, interval := range []bool{false, true} {
			for _, load := range []float64{0.9, 1.3} {
				p := NewPPipe(PPipeOptions{Interval: interval, Penalty: true, Admission: true})
				attachCheck(t, p, &probes)
				runSim(t, loadFixture(t, name), p, load, dataplane.Second/2, rand.New(rand.NewPCG(1, 2)))
			}
		}
	}
	t.Logf("%d probes compared", probes)
}

// miniSim is a bare event loop for the package's tests (the sim package imports this one):
// Poisson arrivals per application, batches and transfers that take their nominal time
// ±30% (so completion reports correct the reservations both ways), and timers.
type miniSim struct {
	h   dataplane.TimeHeap[dataplane.Event]
	seq uint64
	r   *rand.Rand
	// jitter spreads each batch's and transfer's time uniformly within ±jitter of its
	// nominal one (0.3: ±30%).
	jitter float64
	// finish, when set, sees every request at its outcome.
	finish func(*dataplane.Request)
}

func (s *miniSim) push(at dataplane.Time, ev dataplane.Event) {
	s.seq++
	s.h.Push(dataplane.Timed[dataplane.Event]{At: at, Seq: s.seq, Val: ev})
}

func (s *miniSim) jit(d dataplane.Time) dataplane.Time {
	return max(d+dataplane.Time((s.r.Float64()-0.5)*2*s.jitter*float64(d)), 0)
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

func (s *miniSim) Finish(_ dataplane.Time, r *dataplane.Request) {
	if s.finish != nil {
		s.finish(r)
	}
}

// runSim runs dep under pol at load × each application's rate for dur, then drains.
func runSim(tb testing.TB, dep *dataplane.Deployment, pol dataplane.Policy, load float64, dur dataplane.Time, r *rand.Rand) {
	tb.Helper()
	runSimObserved(tb, dep, pol, load, dur, r, nil)
}

// runSimObserved is runSim with an observer of every policy call (Engine.Observe).
func runSimObserved(tb testing.TB, dep *dataplane.Deployment, pol dataplane.Policy, load float64, dur dataplane.Time, r *rand.Rand, obs func(dataplane.Time, *dataplane.Event, []dataplane.Decision)) {
	tb.Helper()
	runMini(tb, &miniSim{r: r, jitter: 0.3}, dep, pol, load, dur, obs)
}

// runMini is runSimObserved on a given miniSim (its finish hook set by the caller).
func runMini(tb testing.TB, s *miniSim, dep *dataplane.Deployment, pol dataplane.Policy, load float64, dur dataplane.Time, obs func(dataplane.Time, *dataplane.Event, []dataplane.Decision)) {
	tb.Helper()
	r := s.r
	e, err := dataplane.NewEngine(dep, pol, s)
	if err != nil {
		tb.Fatal(err)
	}
	e.Observe(obs)
	const arrival = dataplane.EventKind(255) // ours: the loop's own arrival ticks
	gap := func(a int) dataplane.Time {
		return dataplane.Time(r.ExpFloat64() * 1e6 / (load * dep.Apps[a].RateRPS))
	}
	for a := range dep.Apps {
		s.push(gap(a), dataplane.Event{Kind: arrival, Key: int64(a)})
	}
	for len(s.h) > 0 {
		it := s.h.Pop()
		if it.Val.Kind == arrival {
			if it.At >= dur {
				continue
			}
			a := int(it.Val.Key)
			if _, err := e.Arrive(it.At, dataplane.AppID(a), 0); err != nil {
				tb.Fatal(err)
			}
			s.push(it.At+gap(a), it.Val)
			continue
		}
		if err := e.Handle(it.At, it.Val); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestWaitFloorKeepsDecisions runs the same simulations with step 1's floor pruning on and
// off (noFloor) and requires identical decision streams: skipping a probe that cannot win
// must change nothing but the work.
func TestWaitFloorKeepsDecisions(t *testing.T) {
	type rec struct {
		now dataplane.Time
		ds  string
	}
	run := func(dep *dataplane.Deployment, o PPipeOptions, noFloor bool, load float64, seed uint64) ([]rec, PPipeStats) {
		p := NewPPipe(o)
		p.noFloor = noFloor
		var out []rec
		runSimObserved(t, dep, p, load, dataplane.Second/2, rand.New(rand.NewPCG(seed, 6)), func(now dataplane.Time, _ *dataplane.Event, ds []dataplane.Decision) {
			if len(ds) > 0 {
				out = append(out, rec{now, fmt.Sprint(ds)})
			}
		})
		return out, p.Stats()
	}
	var skipped int64
	for _, name := range []string{"hc1-100.json", "nic.json", "mixed.json"} {
		for _, load := range []float64{0.5, 0.9, 1.3} {
			o := PPipeOptions{Penalty: true, Admission: true}
			a, sa := run(loadFixture(t, name), o, false, load, 1)
			b, sb := run(loadFixture(t, name), o, true, load, 1)
			if !slices.Equal(a, b) {
				t.Fatalf("%s at load %.1f: %d decision steps with the floor, %d without, or they differ", name, load, len(a), len(b))
			}
			skipped += sb.Probes - sa.Probes
		}
	}
	if skipped <= 0 {
		t.Errorf("the floor skipped %d probes: the test exercises nothing", skipped)
	}
	t.Logf("%d probes skipped", skipped)
}
