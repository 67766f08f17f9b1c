package dyorc

// The speculative DP (DyOrc §5.3, Algorithm 1) over the GPUs that can matter. A task on a GPU
// that neither holds its service nor is loading it waits for a load, from host RAM where the
// server's host cache holds the service (hostC) and from disk elsewhere; the disk load is
// seconds, the tasks' latencies tens of milliseconds. dpSparse evaluates, in each layer, only
// the GPUs that hold or load the layer's service and those of servers whose host cache holds
// it (candidates); every other GPU finishes no earlier than now + the disk load + the task's
// latency (lbCold), and where that exceeds the layer's least finish (plus the largest
// transfer, before the last layer) such a GPU is neither the DP's last GPU nor any GPU's
// predecessor, so leaving it out changes no choice. Where it does not (a layer whose
// candidates all finish later, as when every replica is swamped), dpSparse gives up and
// dpGrouped evaluates every GPU. Its cost per DP follows the replicas and warm servers of the
// chain's services, not the cluster: on the scale benchmark's 128 GPUs a layer evaluates about
// 20 GPUs where dpGrouped evaluates 44 units, and 97% of the layers need no fallback.

import (
	"fmt"
	"math"

	"github.com/plan-dev/plan/dataplane"
)

// sparseSet is dpSparse's kept record of each service's candidates: the GPUs holding or
// loading it (svDevs[sv], with each GPU's place in it at svPos[d*ns+sv], -1 when not there),
// synced with the idle set, and the servers whose host cache holds it (warm[sv]), which
// only ever grows.
type sparseSet struct {
	svDevs [][]int32
	svPos  []int32
	warm   [][]int32
	// DP scratch: layer k's candidates are units[off[k]:off[k+1]] with finishes h[off[k]:...];
	// mark[d] is the layer stamp at which GPU d was last taken; pos[d] is d's place in the
	// layer before's candidates, -1 when none; sm and touched are the per-server two least
	// finishes of the layer before (sm all empty but for touched servers).
	units   []unit
	h, x    []float64
	cn, cx  []float64
	off     []int
	mark    []int64
	stamp   int64
	pos     []int32
	sm      []srvBest
	touched []int
	// Counts: DPs dpSparse made, and DPs it handed back to dpGrouped.
	made, missed int64
}

// initSparse lays out the candidate sets, every GPU's membership unknown until synced, and
// the warm servers from the host cache.
func (p *Policy) initSparse() {
	ss := &p.idle.sp
	G, ns := len(p.devs), len(p.m.W.Services)
	ss.svDevs = make([][]int32, ns)
	ss.svPos = make([]int32, G*ns)
	for i := range ss.svPos {
		ss.svPos[i] = -1
	}
	ss.warm = make([][]int32, ns)
	for s := range p.hostC {
		for sv, w := range p.hostC[s] {
			if w {
				ss.warm[sv] = append(ss.warm[sv], int32(s))
			}
		}
	}
	ss.mark = make([]int64, G)
	ss.pos = make([]int32, G)
	for i := range ss.pos {
		ss.pos[i] = -1
	}
	ss.sm = make([]srvBest, len(p.idle.srvDevs))
	for i := range ss.sm {
		ss.sm[i] = emptyBest()
	}
}

func emptyBest() srvBest {
	inf := math.Inf(1)
	return srvBest{v1: inf, v2: inf, a1: -1, a2: -1}
}

// warmHost records that server srv's host cache now holds service sv (startLoad).
func (p *Policy) warmHost(srv, sv int) {
	if p.idle.ok && !p.hostC[srv][sv] {
		p.idle.sp.warm[sv] = append(p.idle.sp.warm[sv], int32(srv))
	}
	p.hostC[srv][sv] = true
}

// syncSparse brings GPU d's membership of the candidate sets up to date (syncIdle).
func (p *Policy) syncSparse(d int) {
	ss := &p.idle.sp
	dv := &p.devs[d]
	ns := len(dv.resident)
	for sv, r := range dv.resident {
		in := r || dv.loading == sv
		at := &ss.svPos[d*ns+sv]
		switch {
		case in && *at < 0:
			*at = int32(len(ss.svDevs[sv]))
			ss.svDevs[sv] = append(ss.svDevs[sv], int32(d))
		case !in && *at >= 0:
			l := ss.svDevs[sv]
			last := l[len(l)-1]
			l[*at] = last
			ss.svPos[int(last)*ns+sv] = *at
			ss.svDevs[sv] = l[:len(l)-1]
			*at = -1
		}
	}
}

// checkSparse panics where the candidate sets differ from the GPUs' state (Policy.check).
func (p *Policy) checkSparse() {
	ss := &p.idle.sp
	ns := len(p.m.W.Services)
	for d := range p.devs {
		dv := &p.devs[d]
		for sv, r := range dv.resident {
			at := ss.svPos[d*ns+sv]
			if (r || dv.loading == sv) != (at >= 0) || at >= 0 && ss.svDevs[sv][at] != int32(d) {
				panic(fmt.Sprintf("dyorc: GPU %d: kept candidacy for service %d differs", d, sv))
			}
		}
	}
	for s := range p.hostC {
		for sv, w := range p.hostC[s] {
			found := false
			for _, t := range ss.warm[sv] {
				found = found || int(t) == s
			}
			if w && !found {
				panic(fmt.Sprintf("dyorc: server %d: host cache of service %d not kept", s, sv))
			}
		}
	}
}

// dpSparse is the DP over each layer's candidates (see above), into devs; false, having made
// no choice, where it does not apply or a layer's left-out GPUs could matter. It is dpGrouped
// (whose idle set it syncs and whose evalLayer it runs) on fewer units: a candidate is a unit
// of its own (an idle one, not the source, is not walked, as a class in dpGrouped), and each
// layer's per-server minima (bestPred) are over the layer's candidates alone. A layer takes
// the GPUs holding or loading its service first, and those of the warm servers only where a
// load from host RAM could beat them.
func (p *Policy) dpSparse(now, t0 dataplane.Time, src, srcSvc, srcItems int, svcs, its, devs []int) bool {
	n := len(svcs)
	is := &p.idle
	ss := &is.sp
	ss.cn, ss.cx = ss.cn[:0], ss.cx[:0]
	for k, sv := range svcs {
		if !p.latUp[sv] {
			return false // a walk may then beat its bound (evalLayer), the left-out GPUs' too
		}
		var cn, cx float64
		if k > 0 {
			if cn, cx = p.tiers(svcs[k-1], its[k-1]); !(cn >= 0 && cx >= 0) {
				return false
			}
		}
		ss.cn, ss.cx = append(ss.cn, cn), append(ss.cx, cx)
	}
	if !p.syncIdle(now) || len(is.srvDevs) < 2 {
		// On one server the warm servers' GPUs are every GPU (its host cache holds every
		// service it ever loaded): dpSparse would evaluate at least dpGrouped's units, and
		// all of them again where it gives up (a quarter of the DPs on the benchmark's 8 GPUs).
		return false
	}
	ss.units, ss.off = ss.units[:0], append(ss.off[:0], 0)
	ss.h = ss.h[:0]
	for k := 0; k < n; k++ {
		lc := p.layerOf(now, svcs[k], its[k], k > 0, t0, src, srcSvc, srcItems, k == 0)
		last := k == n-1
		slack := math.NaN()
		if !last {
			slack = max(ss.cn[k+1], ss.cx[k+1])
		}
		// Whether every GPU left out finishes no earlier than lb: then none matters (see above).
		enough := func(bi int, bv, lb float64) bool {
			return bi >= 0 && (last && lb > bv || !last && lb > bv+slack)
		}
		s1, s2 := -1, -1
		if k > 0 {
			s1, s2 = p.sparseBest(k - 1)
		}
		lo := len(ss.units)
		e := layerEval{lc: &lc, first: k == 0, last: last, src: src, slack: slack, bv: math.Inf(1), bi: -1, wait: is.wait[:0]}
		p.sparseTier(&e, k, lo, lo, s1, s2, false)
		// A GPU without the service finishes no earlier than now + its load + the task's
		// latency (devStart: t ≥ svcReady; a walk no earlier than t + latency where ExpLat
		// grows, latUp), the load from host RAM on the warm servers, from disk elsewhere. The
		// walks whose bounds reach the first wait: where the warm servers' GPUs are needed,
		// their finishes may prune them.
		lbWarm := (lc.fnow + min(lc.warmUs, lc.coldUs)) + lc.lat
		p.walks(now, &e, lbWarm)
		if !enough(e.bi, e.bv, lbWarm) {
			p.sparseTier(&e, k, lo, len(ss.units), s1, s2, true)
			p.walks(now, &e, math.Inf(1))
			if !enough(e.bi, e.bv, (lc.fnow+lc.coldUs)+lc.lat) {
				is.wait = e.wait
				ss.missed++
				if k > 0 {
					p.clearPos(k - 1)
				}
				return false
			}
		}
		is.wait = e.wait
		bi := e.bi
		if k > 0 {
			p.clearPos(k - 1)
		}
		ss.off = append(ss.off, len(ss.units))
		for i, u := range ss.units[lo:] {
			ss.pos[u.dev] = int32(i)
		}
		if last {
			devs[n-1] = ss.units[lo+bi].dev
		}
	}
	p.clearPos(n - 1)
	// Back along the chain: layer k's predecessor of its GPU d, from layer k−1's minima.
	d := devs[n-1]
	for k := n - 1; k > 0; k-- {
		s1, s2 := p.sparseBest(k - 1)
		hd := math.Inf(1)
		for i, u := range ss.units[ss.off[k-1]:ss.off[k]] {
			if u.dev == d {
				hd = ss.h[ss.off[k-1]+i]
			}
		}
		_, d = predOf(d, p.m.GPUServer[d], hd, ss.sm, s1, s2, ss.cn[k], ss.cx[k])
		devs[k-1] = d
	}
	ss.made++
	return true
}

// sparseTier appends layer k's candidates of one tier (warm: the warm servers' GPUs, else the
// GPUs holding or loading the service), from units[from:] on (the layer's from lo on), with
// their inputs from layer k−1's minima (s1, s2: its two best servers), to e, and bounds them.
func (p *Policy) sparseTier(e *layerEval, k, lo, from, s1, s2 int, warm bool) {
	ss := &p.idle.sp
	p.candidates(e.lc.sv, e.src, warm)
	ss.h = grow(ss.h, len(ss.units))
	ss.x = grow(ss.x, len(ss.units)-lo)
	if k > 0 {
		for i, u := range ss.units[from:] {
			hd := math.Inf(1)
			if j := ss.pos[u.dev]; j >= 0 {
				hd = ss.h[ss.off[k-1]+int(j)]
			}
			ss.x[from-lo+i], _ = predOf(u.dev, u.srv, hd, ss.sm, s1, s2, ss.cn[k], ss.cx[k])
		}
	}
	e.us, e.x, e.h = ss.units[lo:], ss.x, ss.h[lo:]
	p.bounds(e, from-lo)
}

// clearPos forgets the places of layer k's candidates.
func (p *Policy) clearPos(k int) {
	ss := &p.idle.sp
	for _, u := range ss.units[ss.off[k]:ss.off[k+1]] {
		ss.pos[u.dev] = -1
	}
}

// candidates appends to the sparse set's units the GPUs of layer service sv not yet taken in
// the layer: those up and holding or loading sv, or (warm) those up on servers whose host
// cache holds sv.
func (p *Policy) candidates(sv, src int, warm bool) {
	is := &p.idle
	ss := &is.sp
	if !warm {
		ss.stamp++
	}
	add := func(d int) {
		if ss.mark[d] == ss.stamp || p.down[d] > 0 {
			return
		}
		ss.mark[d] = ss.stamp
		u := unit{dev: d, dev2: -1, srv: p.m.GPUServer[d]}
		if is.busyAt[d] < 0 && d != src {
			// Idle and not the source: not walked, as its class in dpGrouped.
			u.mask = 1 << is.local[d]
		}
		ss.units = append(ss.units, u)
	}
	if !warm {
		for _, d := range ss.svDevs[sv] {
			add(int(d))
		}
		return
	}
	for _, s := range ss.warm[sv] {
		for _, d := range is.srvDevs[s] {
			add(d)
		}
	}
}

// sparseBest fills the sparse set's per-server minima with layer k's candidates (emptying the
// servers of the layer before) and returns the two best servers (bestServers).
func (p *Policy) sparseBest(k int) (s1, s2 int) {
	ss := &p.idle.sp
	for _, s := range ss.touched {
		ss.sm[s] = emptyBest()
	}
	ss.touched = ss.touched[:0]
	for i, u := range ss.units[ss.off[k]:ss.off[k+1]] {
		b := &ss.sm[u.srv]
		if b.a1 < 0 {
			ss.touched = append(ss.touched, u.srv)
		}
		b.add(ss.h[ss.off[k]+i], u.dev)
	}
	s1, s2 = -1, -1
	sm := ss.sm
	for _, i := range ss.touched {
		switch {
		case s1 < 0 || lessVA(sm[i].v1, sm[i].a1, sm[s1].v1, sm[s1].a1):
			s1, s2 = i, s1
		case s2 < 0 || lessVA(sm[i].v1, sm[i].a1, sm[s2].v1, sm[s2].a1):
			s2 = i
		}
	}
	return s1, s2
}

// grow is s resized to n, its contents kept.
func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		t := make([]float64, n, 2*n)
		copy(t, s)
		return t
	}
	return s[:n]
}
