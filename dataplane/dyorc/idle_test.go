package dyorc

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"unsafe"

	"github.com/plan-dev/plan/dataplane"
)

// TestGroupedMatchesFlat: the DP with idle GPUs evaluated by class (dpGrouped) chooses the
// same GPUs with the same finishes and counts the same states as the DP that evaluates every
// GPU (dpFlat) and as the reference (availComp on every GPU), on random GPU states: idle GPUs
// with random residency and host caches (many ties), busy ones with queued tasks, reservations,
// a running batch or a load, down ones; across server layouts, one past the 64 GPUs a server
// the grouping handles, and with the load charge read literally or not.
func TestGroupedMatchesFlat(t *testing.T) {
	w := loadWorkflow(t, "workload.json")
	ns := len(w.Services)
	cases := []struct {
		gpus, per int
		literal   bool
		seed      uint64
	}{
		{1, 8, false, 1}, {3, 1, false, 2}, {8, 8, false, 3}, {12, 4, true, 4},
		{33, 8, false, 5}, {64, 8, false, 6}, {130, 8, true, 7}, {70, 70, false, 8},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("gpus=%d/per=%d/literal=%v", tc.gpus, tc.per, tc.literal), func(t *testing.T) {
			r := rand.New(rand.NewPCG(tc.seed, 17))
			dep, err := NewDeployment(w, Cluster{GPUs: tc.gpus, PerServer: tc.per, MemBytes: 80e9, Type: "A800"}, make([][]int, tc.gpus), DefaultNet)
			if err != nil {
				t.Fatal(err)
			}
			for iter := 0; iter < 60; iter++ {
				now := dataplane.Time(1e6)
				p := randomPolicy(t, dep, tc.literal, r, now)
				G := tc.gpus
				for call := 0; call < 5; call++ {
					c := randomCall(r, ns, G, now)
					svcs, its, src := c.svcs, c.its, c.src
					p.check = true
					devs, hs, states := c.dp(p, now)
					p.sparseAll = true
					sDevs, sHs, sStates := c.dp(p, now)
					p.sparseAll = false
					if !reflect.DeepEqual(devs, sDevs) || !reflect.DeepEqual(hs, sHs) || states != sStates {
						t.Fatalf("iter %d, chain %v items %v from GPU %d: grouped %v %v %d, sparse layers %v %v %d",
							iter, svcs, its, src, devs, hs, states, sDevs, sHs, sStates)
					}
					p.check, p.flat = false, true
					fDevs, fHs, fStates := c.dp(p, now)
					p.flat, p.ref = false, true
					rDevs, rHs, rStates := c.dp(p, now)
					p.ref = false
					if !reflect.DeepEqual(devs, fDevs) || !reflect.DeepEqual(hs, fHs) || states != fStates ||
						!reflect.DeepEqual(devs, rDevs) || !reflect.DeepEqual(hs, rHs) || states != rStates {
						t.Fatalf("iter %d, chain %v items %v from GPU %d: grouped %v %v %d, flat %v %v %d, reference %v %v %d",
							iter, svcs, its, src, devs, hs, states, fDevs, fHs, fStates, rDevs, rHs, rStates)
					}
					// The next call sees one GPU changed, as a call's placement changes it.
					d := r.IntN(G)
					p.devs[d].enqueue(&task{svc: svcs[0], items: its[0], ready: now + dataplane.Time(r.IntN(50))*1000, seq: int64(1000 + call)})
					p.touch(d)
				}
			}
		})
	}
}

// randomPolicy is a fresh DyOrc policy on dep (the load charge read literally or not),
// attached to an engine, its GPUs in random states at now (randomStates).
func randomPolicy(t *testing.T, dep *dataplane.Deployment, literal bool, r *rand.Rand, now dataplane.Time) *Policy {
	t.Helper()
	p := New("dyorc", Options{Mode: ModeSpec, Literal: literal})
	if _, err := dataplane.NewEngine(dep, p, nopFx{}); err != nil {
		t.Fatal(err)
	}
	randomStates(p, r, now)
	return p
}

// dpCall is a call's chain as the DP tests draw it: 1–4 of ns services with 1–3 items each,
// sent from GPU src (-1: the API server) after service srcSvc, ready at t0.
type dpCall struct {
	svcs, its   []int
	src, srcSvc int
	t0          dataplane.Time
}

func randomCall(r *rand.Rand, ns, G int, now dataplane.Time) dpCall {
	n := 1 + r.IntN(4)
	c := dpCall{svcs: make([]int, n), its: make([]int, n)}
	for k := range c.svcs {
		c.svcs[k], c.its[k] = r.IntN(ns), 1+r.IntN(3)
	}
	c.src, c.srcSvc = r.IntN(G+1)-1, r.IntN(ns)
	if c.src < 0 {
		c.srcSvc = -1
	}
	c.t0 = now + dataplane.Time(r.IntN(4))*5000
	return c
}

// dp places the call with p's DP at now.
func (c dpCall) dp(p *Policy, now dataplane.Time) ([]int, []float64, int) {
	return p.DP(now, c.t0, c.src, c.srcSvc, 1, c.svcs, c.its)
}

// randomStates gives p's GPUs random states at now; times are multiples of 1 ms, so that
// finishes tie.
func randomStates(p *Policy, r *rand.Rand, now dataplane.Time) {
	ns := len(p.m.W.Services)
	ms := func(k int) dataplane.Time { return now + dataplane.Time(r.IntN(k))*1000 }
	for s := range p.hostC {
		for sv := range p.hostC[s] {
			p.setHost(s, sv, r.IntN(2) == 0)
		}
	}
	seq := int64(0)
	for d := range p.devs {
		dv := &p.devs[d]
		for sv := range dv.resident {
			dv.setResident(sv, r.IntN(3) == 0)
		}
		switch r.IntN(10) {
		case 0:
			dv.running, dv.runEnd = true, ms(40)
		case 1:
			sv := r.IntN(ns)
			dv.setResident(sv, false)
			dv.loading, dv.loadETA = sv, ms(40)
		case 2:
			for k := 1 + r.IntN(4); k > 0; k-- {
				seq++
				dv.enqueue(&task{svc: r.IntN(ns), items: 1 + r.IntN(3), ready: ms(60), seq: seq})
			}
		case 3:
			for k := 1 + r.IntN(3); k > 0; k-- {
				seq++
				dv.reserve(&resv{svc: r.IntN(ns), items: 1 + r.IntN(3), dev: d, ready: now + dataplane.Time(r.IntN(60)-10)*1000, seq: seq, follows: r.IntN(4) == 0})
			}
		case 4:
			if r.IntN(3) == 0 {
				p.down[d] = 1
				p.nDown++
			}
		}
		p.touch(d)
	}
}

// TestTierGPUs: tierGPUs' stand-ins are the first GPUs a scan in index order finds on the same
// server (not the GPU itself) and on another server, on uneven and interleaved layouts.
func TestTierGPUs(t *testing.T) {
	for _, srv := range [][]int{{0}, {0, 0, 0}, {0, 1, 2}, {0, 0, 1, 1, 2, 2}, {1, 1, 0, 0, 0}, {0, 1, 0, 1, 2}, {2, 2, 2, 0}} {
		near, far := tierGPUs(srv)
		for g := range srv {
			wn, wf := -1, -1
			for e := range srv {
				if wn < 0 && e != g && srv[e] == srv[g] {
					wn = e
				}
				if wf < 0 && srv[e] != srv[g] {
					wf = e
				}
			}
			if near[g] != wn || far[g] != wf {
				t.Errorf("servers %v, GPU %d: near %d far %d, want %d %d", srv, g, near[g], far[g], wn, wf)
			}
		}
	}
}

// TestDeviceLayout checks the device record's layout by use (device): what a sparse layer's
// walk of a GPU's plan reads lies in its first cache line, what devStart and availComp add
// in its second, and the record fills whole lines.
func TestDeviceLayout(t *testing.T) {
	var dv device
	if n := unsafe.Sizeof(dv); n%64 != 0 {
		t.Errorf("device is %d bytes, not whole 64-byte lines", n)
	}
	// Each field and the number of leading cache lines it must end within (a plan walk reads
	// the first line's, devStart and availComp the second's too).
	for _, c := range []struct {
		name  string
		end   uintptr
		lines uintptr
	}{
		{"plan", unsafe.Offsetof(dv.plan) + unsafe.Sizeof(dv.plan), 1},
		{"pmask", unsafe.Offsetof(dv.pmask) + unsafe.Sizeof(dv.pmask), 1},
		{"pnext", unsafe.Offsetof(dv.pnext) + unsafe.Sizeof(dv.pnext), 1},
		{"dirty", unsafe.Offsetof(dv.dirty) + unsafe.Sizeof(dv.dirty), 1},
		{"pend", unsafe.Offsetof(dv.pend) + unsafe.Sizeof(dv.pend), 1},
		{"runEnd", unsafe.Offsetof(dv.runEnd) + unsafe.Sizeof(dv.runEnd), 2},
		{"loading", unsafe.Offsetof(dv.loading) + unsafe.Sizeof(dv.loading), 2},
		{"loadETA", unsafe.Offsetof(dv.loadETA) + unsafe.Sizeof(dv.loadETA), 2},
		{"running", unsafe.Offsetof(dv.running) + unsafe.Sizeof(dv.running), 2},
		{"resident", unsafe.Offsetof(dv.resident) + unsafe.Sizeof(dv.resident), 2},
		{"pendAt", unsafe.Offsetof(dv.pendAt) + unsafe.Sizeof(dv.pendAt), 2},
	} {
		if c.end > 64*c.lines {
			t.Errorf("device.%s ends at byte %d, past the first %d cache line(s)", c.name, c.end, c.lines)
		}
	}
}

// TestResidentMask: the resident mask (device.resM) that hotOf and allResident read equals
// the resident flags after random sequences of loads and evictions, with services past 63
// (no bit) among them.
func TestResidentMask(t *testing.T) {
	for _, ns := range []int{1, 32, 64, 70} {
		r := rand.New(rand.NewPCG(uint64(ns), 3))
		dv := device{resident: make([]bool, ns)}
		for step := 0; step < 2000; step++ {
			dv.setResident(r.IntN(ns), r.IntN(2) == 0)
			var want uint64
			for sv, ok := range dv.resident {
				if ok && sv < 64 {
					want |= 1 << sv
				}
			}
			if dv.resM != want {
				t.Fatalf("%d services, step %d: mask %#x, want %#x", ns, step, dv.resM, want)
			}
		}
	}
}

// TestHostMask: the servers that evalSparse's disk-load fallback visits for a service
// (hostM's bits) are those whose host cache holds it (hostC), after random sequences of
// setHost; past 64 servers there is no mask and the fallback reads hostC.
func TestHostMask(t *testing.T) {
	for _, c := range []struct{ nsrv, ns int }{{1, 4}, {16, 32}, {64, 7}, {65, 3}} {
		r := rand.New(rand.NewPCG(uint64(c.nsrv), uint64(c.ns)))
		var p Policy
		p.initHost(c.nsrv, c.ns)
		if (p.hostM == nil) != (c.nsrv > 64) {
			t.Fatalf("%d servers: mask kept %v", c.nsrv, p.hostM != nil)
		}
		for step := 0; step < 3000; step++ {
			p.setHost(r.IntN(c.nsrv), r.IntN(c.ns), r.IntN(3) > 0)
			if p.hostM == nil {
				continue
			}
			for sv := 0; sv < c.ns; sv++ {
				var want uint64
				for s := range p.hostC {
					if p.hostC[s][sv] {
						want |= 1 << s
					}
				}
				if p.hostM[sv] != want {
					t.Fatalf("%d servers, step %d, service %d: mask %#x, want %#x", c.nsrv, step, sv, p.hostM[sv], want)
				}
			}
		}
	}
}
