package dyorc

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/sim"
)

func loadWorkflow(t testing.TB, name string) *Workflow {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "dyorc", name))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := formats.Decode(name, data, intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	wl, ok := doc.(*formats.Workload)
	if !ok {
		t.Fatalf("%s: not a workload", name)
	}
	w, err := Compile(dyorcsec.WorkflowsOf(wl))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

type run struct {
	m     *sim.Metrics
	stats Stats
	seen  map[dataplane.ReqID]int
}

// simulate runs policy name on workload file wf over g GPUs for dur of arrivals at rate×
// each app's rate_rps; requests carry a sample (their ground truth) when samples is set.
func simulate(t testing.TB, wf string, g int, policy string, rate float64, dur dataplane.Time, seed uint64, samples bool) run {
	t.Helper()
	w := loadWorkflow(t, wf)
	warm := make([][]int, g)
	for sv := range w.Services {
		warm[sv%g] = append(warm[sv%g], sv)
	}
	// Keep the warm placement within memory: drop what does not fit.
	c := Cluster{GPUs: g, PerServer: 8, MemBytes: 80e9, Type: "A800"}
	for k := range warm {
		var used int64
		keep := warm[k][:0]
		for _, sv := range warm[k] {
			if used+w.Services[sv].Bytes <= c.MemBytes {
				keep = append(keep, sv)
				used += w.Services[sv].Bytes
			}
		}
		warm[k] = keep
	}
	dep, err := NewDeployment(w, c, warm, DefaultNet)
	if err != nil {
		t.Fatal(err)
	}
	sp, _ := Registry().Lookup(policy)
	pol, err := sp.New(dataplane.Config{Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	var srcs []sim.Source
	for a := range dep.Apps {
		s, err := sim.ArrivalSpec{Kind: "poisson"}.New(max(dep.Apps[a].RateRPS, 0.5)*rate, dep.Apps[a].Name, seed+uint64(a))
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, s)
	}
	res := run{seen: map[dataplane.ReqID]int{}}
	opts := sim.Options{Duration: dur, Seed: seed, Jitter: 0.05, OnFinish: func(_ dataplane.Time, r *dataplane.Request) { res.seen[r.ID]++ }}
	if samples {
		opts.Attrs = func(a dataplane.AppID, n int64) dataplane.Attrs {
			return dataplane.Attrs{Sample: int64(seed)*1_000_003 + n*31 + int64(a) + 1}
		}
	}
	s, err := sim.New(dep, pol, srcs, opts)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Run()
	if err != nil {
		t.Fatalf("%s: %v", policy, err)
	}
	res.m = m
	res.stats = *pol.(*Policy).Stats()
	return res
}

// TestEveryRequestFinishesOnce: every policy on the bundled examples finishes every request
// exactly once (conformance style), and each request travels every call of its path.
func TestEveryRequestFinishesOnce(t *testing.T) {
	for _, wf := range []string{"small.json", "workload.json"} {
		for _, sp := range Policies() {
			t.Run(wf+"/"+sp.Name, func(t *testing.T) {
				r := simulate(t, wf, 4, sp.Name, 1, 20*dataplane.Second, 3, true)
				if r.m.Total.Requests == 0 {
					t.Fatal("no requests")
				}
				if int64(len(r.seen)) != r.m.Total.Requests {
					t.Fatalf("%d requests, %d finished", r.m.Total.Requests, len(r.seen))
				}
				for id, n := range r.seen {
					if n != 1 {
						t.Fatalf("request %d finished %d times", id, n)
					}
				}
				// Only overload shedding drops (shed.go): this workload's queues
				// grow on 4 GPUs, and the schedulers that estimate finishes shed there.
				if r.m.Total.Dropped != r.stats.Shed {
					t.Fatalf("%d dropped, %d of them shed", r.m.Total.Dropped, r.stats.Shed)
				}
			})
		}
	}
}

// TestDeterministic: one seed, one result.
func TestDeterministic(t *testing.T) {
	a := simulate(t, "workload.json", 4, "dyorc", 1, 10*dataplane.Second, 7, false)
	b := simulate(t, "workload.json", 4, "dyorc", 1, 10*dataplane.Second, 7, false)
	if !reflect.DeepEqual(a.m, b.m) || !reflect.DeepEqual(a.stats, b.stats) {
		t.Fatalf("two runs with seed 7 differ:\n%+v\n%+v", a.m.Total, b.m.Total)
	}
}

// TestOracleNeverMispredicts: given the true future, every call after the first matches its
// reservation.
func TestOracleNeverMispredicts(t *testing.T) {
	r := simulate(t, "workload.json", 4, "dyorc-oracle", 1, 10*dataplane.Second, 5, true)
	if r.stats.Mispredicts != 0 {
		t.Fatalf("oracle mispredicted %d times", r.stats.Mispredicts)
	}
	if r.stats.Hits == 0 {
		t.Fatal("oracle matched no reservation")
	}
	for a := range r.stats.StepTotal {
		if r.stats.StepHit[a] != r.stats.StepTotal[a] {
			t.Fatalf("app %d: oracle step accuracy %d/%d", a, r.stats.StepHit[a], r.stats.StepTotal[a])
		}
	}
}

// TestPredictorKnownChain: on sequences from a known first-order chain, argmax prediction
// reaches the chain's best achievable per-step accuracy and sampling its Σp² accuracy.
func TestPredictorKnownChain(t *testing.T) {
	// States 0..2 and End; P[prev+1] over (End, 0, 1, 2).
	P := [][]float64{
		{0, 0.7, 0.3, 0},   // start
		{0.1, 0, 0.6, 0.3}, // after 0
		{0.5, 0.2, 0, 0.3}, // after 1
		{0.8, 0, 0.2, 0},   // after 2
	}
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func(row []float64) int {
		u, acc := rng.Float64(), 0.0
		for i, p := range row {
			acc += p
			if u < acc {
				return i - 1
			}
		}
		return len(row) - 2
	}
	gen := func() []int {
		var seq []int
		prev := -1
		for len(seq) < 30 {
			n := draw(P[prev+1])
			if n == End {
				break
			}
			seq = append(seq, n)
			prev = n
		}
		return seq
	}
	for _, tc := range []struct {
		argmax bool
	}{{true}, {false}} {
		pr := NewPredictor(3, 9)
		pr.Argmax = tc.argmax
		for i := 0; i < 5000; i++ {
			pr.Observe(gen())
		}
		hit, total := 0, 0
		for i := 0; i < 5000; i++ {
			prev := -1
			seq := append(gen(), End)
			for _, s := range seq {
				if pr.Step(prev) == s {
					hit++
				}
				total++
				prev = s
			}
		}
		// Expected accuracy: Σ_prev π(prev)·(max_i p_i or Σ p_i²), estimated by the same walk.
		got := float64(hit) / float64(total)
		want := expectedAccuracy(P, tc.argmax)
		if math.Abs(got-want) > 0.03 {
			t.Errorf("argmax=%v: accuracy %.3f, want %.3f ± 0.03", tc.argmax, got, want)
		}
	}
}

// expectedAccuracy is the per-step accuracy of a perfect predictor of chain P: the stationary
// visit frequency of each state times max p (argmax) or Σp² (sampling).
func expectedAccuracy(P [][]float64, argmax bool) float64 {
	// Expected visits per sequence: v = e_start + v·Q over transient states.
	visits := make([]float64, len(P))
	visits[0] = 1
	for it := 0; it < 200; it++ {
		nv := make([]float64, len(P))
		nv[0] = 1
		for s := range P {
			for j := 1; j < len(P[s]); j++ {
				nv[j] += visits[s] * P[s][j]
			}
		}
		visits = nv
	}
	var acc, tot float64
	for s, row := range P {
		var q float64
		for _, p := range row {
			if argmax {
				q = max(q, p)
			} else {
				q += p * p
			}
		}
		acc += visits[s] * q
		tot += visits[s]
	}
	return acc / tot
}

// TestDPMatchesBruteForce: on tiny cases the DP's finish equals the best of every placement.
func TestDPMatchesBruteForce(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		dep := Sample(r)
		m, _ := MetaOf(dep)
		p := New("dyorc", Options{Mode: ModeSpec})
		if _, err := dataplane.NewEngine(dep, p, nopFx{}); err != nil {
			t.Fatal(err)
		}
		// Random device state: residency, loads in flight, queued work.
		G := len(p.devs)
		ns := len(m.W.Services)
		for d := 0; d < G; d++ {
			for sv := 0; sv < ns; sv++ {
				p.devs[d].setResident(sv, r.IntN(2) == 0)
			}
			if r.IntN(3) == 0 {
				p.devs[d].running, p.devs[d].runEnd = true, dataplane.Time(r.IntN(50000))
			}
			for k := r.IntN(3); k > 0; k-- {
				p.devs[d].enqueue(&task{svc: r.IntN(ns), items: 1 + r.IntN(2), ready: dataplane.Time(r.IntN(30000)), seq: int64(k)})
			}
		}
		n := 1 + r.IntN(4)
		svcs, its := make([]int, n), make([]int, n)
		for k := range svcs {
			svcs[k], its[k] = r.IntN(ns), 1+r.IntN(2)
		}
		src, ss := r.IntN(G+1)-1, r.IntN(ns)
		_, hs, states := p.DP(0, 100, src, ss, 1, svcs, its)
		if want := G + (n-1)*G*G; states != want {
			t.Fatalf("seed %d: %d states, want %d", seed, states, want)
		}
		best := math.Inf(1)
		place := make([]int, n)
		var rec func(k int)
		rec = func(k int) {
			if k == n {
				var h float64
				for j := 0; j < n; j++ {
					ready := 100 + m.Comm(src, place[0], ss, 1)
					if j > 0 {
						ready = h + m.Comm(place[j-1], place[j], svcs[j-1], its[j-1])
					}
					if j == 0 {
						h = p.availComp(0, place[j], svcs[j], its[j], ready)
					} else {
						h = p.availCompPred(0, place[j], svcs[j], its[j], ready)
					}
				}
				best = min(best, h)
				return
			}
			for d := 0; d < G; d++ {
				place[k] = d
				rec(k + 1)
			}
		}
		rec(0)
		if math.Abs(hs[n-1]-best) > 1e-6 {
			t.Fatalf("seed %d: DP finish %.3f, brute force %.3f (G=%d, n=%d)", seed, hs[n-1], best, G, n)
		}
	}
}

type nopFx struct{}

func (nopFx) RunBatch(dataplane.Time, dataplane.WorkerID, dataplane.BatchID, int, dataplane.StageID, int, dataplane.Time) {
}
func (nopFx) Transfer(dataplane.Time, dataplane.BatchID, int, dataplane.ServerID, dataplane.ServerID, int64, dataplane.Time) {
}
func (nopFx) SetTimer(dataplane.Time, int64)            {}
func (nopFx) Finish(dataplane.Time, *dataplane.Request) {}

// TestLiteralBindsDefaultReplans: read literally (DyOrc §5.3) a call that matches its reservation
// binds without a DP; by default every call re-runs the DP (no binds) while its reservations
// still count as hits.
func TestLiteralBindsDefaultReplans(t *testing.T) {
	lit := simulate(t, "workload.json", 4, "dyorc-literal", 1, 20*dataplane.Second, 5, true)
	def := simulate(t, "workload.json", 4, "dyorc", 1, 20*dataplane.Second, 5, true)
	if lit.stats.Binds == 0 || lit.stats.Binds != lit.stats.Hits {
		t.Fatalf("literal: binds %d, hits %d", lit.stats.Binds, lit.stats.Hits)
	}
	if def.stats.Binds != 0 || def.stats.Hits == 0 {
		t.Fatalf("default: binds %d, hits %d", def.stats.Binds, def.stats.Hits)
	}
	if def.stats.DPRuns != def.stats.Calls {
		t.Fatalf("default: %d DP runs for %d calls", def.stats.DPRuns, def.stats.Calls)
	}
}

// TestUtilizationAtMostOne: DyOrc runs a service batch across workflows as one engine batch per
// stage on the same GPU at once; the simulator must count that GPU busy once (it reported
// over 100 % when it summed its workers), so under a heavy load every GPU type's busy share
// is in (0, 1].
func TestUtilizationAtMostOne(t *testing.T) {
	for _, pol := range []string{"dyorc", "dyorc-greedy"} {
		r := simulate(t, "workload.json", 2, pol, 6, 8*dataplane.Second, 3, false)
		for _, u := range r.m.GPUTypes {
			if u.Name != "A800" {
				continue
			}
			if u.Busy <= 0 || u.Busy > 1 {
				t.Fatalf("%s: %s busy %.3f", pol, u.Name, u.Busy)
			}
			t.Logf("%s: %s busy %.3f", pol, u.Name, u.Busy)
		}
	}
}

// TestPredictedLoadCharged: a predicted task's missing service costs its load after the task's
// input is ready (unless Literal, where Eq.1's load from now hides it), so a far-ahead guess
// does not pull a new replica next to its predecessor.
func TestPredictedLoadCharged(t *testing.T) {
	w := loadWorkflow(t, "gill.json")
	warm := [][]int{{w.SvcIndex["llm7b"], w.SvcIndex["sd15"]}, {w.SvcIndex["llm7b"]}}
	dep, err := NewDeployment(w, Cluster{GPUs: 2, PerServer: 8, MemBytes: 80e9, Type: "A800"}, warm, DefaultNet)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := MetaOf(dep)
	sd := w.SvcIndex["sd15"]
	for _, lit := range []bool{false, true} {
		p := New("dyorc", Options{Mode: ModeSpec, Literal: lit})
		if _, err := dataplane.NewEngine(dep, p, nopFx{}); err != nil {
			t.Fatal(err)
		}
		for g, svcs := range warm {
			for _, sv := range svcs {
				p.devs[g].setResident(sv, true)
			}
		}
		p.setHost(0, sd, true)
		ready := 10e6 // 10 s ahead: longer than any load
		lat := w.Services[sd].Lat(1)
		if h := p.availCompPred(0, 0, sd, 1, ready); math.Abs(h-(ready+lat)) > 1 {
			t.Fatalf("literal=%v resident: %.0f, want %.0f", lit, h, ready+lat)
		}
		want := ready + m.LoadUs(sd, false) + lat
		if lit {
			want = ready + lat
		}
		if h := p.availCompPred(0, 1, sd, 1, ready); math.Abs(h-want) > 1 {
			t.Fatalf("literal=%v missing: %.0f, want %.0f", lit, h, want)
		}
		// The chain llm → sd15 from GPU 1's llm: the DP keeps sd15 where it is resident
		// unless literal, where the load hidden behind the LLM makes GPU 1 win by the
		// transfer it saves.
		devs, _, _ := p.DP(0, 0, 1, w.SvcIndex["llm7b"], 1, []int{w.SvcIndex["llm7b"], sd}, []int{1, 1})
		if want := map[bool]int{false: 0, true: 1}[lit]; devs[1] != want {
			t.Fatalf("literal=%v: sd15 placed on GPU %d, want %d", lit, devs[1], want)
		}
	}
}

// TestStaleReservationLeavesTimeline: a reservation counts in its GPU's planned timeline while
// its estimated input time is ahead; once that time has passed (its predecessor is late), or
// when it follows its predecessor with the same service on the same GPU, it stays out by
// default and counts under Literal.
func TestStaleReservationLeavesTimeline(t *testing.T) {
	w := loadWorkflow(t, "gill.json")
	llm := w.SvcIndex["llm7b"]
	dep, err := NewDeployment(w, Cluster{GPUs: 1, PerServer: 8, MemBytes: 80e9, Type: "A800"}, [][]int{{llm}}, DefaultNet)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		literal, follows bool
		ready            dataplane.Time
		want             int
	}{
		{false, false, 5e6, 1}, {false, false, 1e6, 0}, {true, false, 5e6, 1}, {true, false, 1e6, 1},
		{false, true, 5e6, 0}, {true, true, 5e6, 1},
	} {
		p := New("dyorc", Options{Mode: ModeSpec, Literal: tc.literal})
		if _, err := dataplane.NewEngine(dep, p, nopFx{}); err != nil {
			t.Fatal(err)
		}
		p.devs[0].setResident(llm, true)
		p.devs[0].reserve(&resv{svc: llm, items: 1, dev: 0, ready: tc.ready, seq: 1, follows: tc.follows})
		p.devs[0].dirty = true
		if got := len(p.plan(2e6, 0)); got != tc.want {
			t.Errorf("literal=%v follows=%v ready=%d at 2e6: %d planned batches, want %d", tc.literal, tc.follows, tc.ready, got, tc.want)
		}
	}
}

// TestBestPredMatchesScan: the tier-minima transition picks, for every GPU, the predecessor
// and value the quadratic scan over all GPUs picks (lowest index on ties), on random finishes
// with ties and infinities, across server layouts.
func TestBestPredMatchesScan(t *testing.T) {
	w := loadWorkflow(t, "gill.json")
	r := rand.New(rand.NewPCG(11, 12))
	for _, tc := range []struct{ gpus, per int }{{1, 8}, {2, 8}, {8, 8}, {12, 4}, {33, 8}, {64, 8}} {
		warm := make([][]int, tc.gpus)
		dep, err := NewDeployment(w, Cluster{GPUs: tc.gpus, PerServer: tc.per, MemBytes: 80e9, Type: "A800"}, warm, DefaultNet)
		if err != nil {
			t.Fatal(err)
		}
		p := New("dyorc", Options{Mode: ModeSpec})
		if _, err := dataplane.NewEngine(dep, p, nopFx{}); err != nil {
			t.Fatal(err)
		}
		srv := p.m.GPUServer
		for iter := 0; iter < 200; iter++ {
			G := tc.gpus
			h := make([]float64, G)
			for d := range h {
				switch r.IntN(6) {
				case 0:
					h[d] = math.Inf(1)
				case 1:
					h[d] = 1000 // ties
				default:
					h[d] = float64(r.IntN(5000))
				}
			}
			cn := float64(r.IntN(300))
			cx := cn + float64(r.IntN(300))
			arg, x := make([]int, G), make([]float64, G)
			p.bestPred(h, cn, cx, arg, x)
			for d := 0; d < G; d++ {
				best, a := math.Inf(1), 0
				for e := 0; e < G; e++ {
					v := h[e]
					switch {
					case e == d:
					case srv[e] == srv[d]:
						v += cn
					default:
						v += cx
					}
					if v < best {
						best, a = v, e
					}
				}
				if arg[d] != a || x[d] != best {
					t.Fatalf("%d GPUs, %d per server, d=%d: got (%d, %v), scan (%d, %v); h=%v", G, tc.per, d, arg[d], x[d], a, best, h)
				}
			}
		}
	}
}
