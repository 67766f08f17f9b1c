package dyorc

// The speculative scheduler's dynamic program (DyOrc §5.3, Algorithm 1) and the device
// model's finish estimates it is built on (avail and comp of Eq. 1).

import (
	"math"
	"math/bits"

	"github.com/plan-dev/plan/dataplane"
)

// DP is the speculative scheduler's dynamic program (DyOrc §5.3, Algorithm 1) over a chain of
// tasks svcs[0..n) with items its[k]; the first consumes the output of service srcSvc on GPU src
// (-1 = the request input) ready at t0. A state is (GPU of the latest task, its finish h);
// within a layer a state is dominated by one on the same GPU with smaller h, and the
// predecessor's triple is redundant once its consumer is placed, so each layer keeps at most
// one state per GPU: |D| + (n−1)·|D|² states are expanded. It returns the GPU of every task,
// their estimated finishes and the states expanded. The states are the paper's count, charged
// to the scheduler's time (DyOrc §8.5), whatever our evaluation costs: dpGrouped (idle.go)
// evaluates the idle GPUs by class, with the choices of dpFlat's evaluation of every GPU.
func (p *Policy) DP(now, t0 dataplane.Time, src, srcSvc, srcItems int, svcs, its []int) ([]int, []float64, int) {
	return p.dp(now, t0, src, srcSvc, srcItems, svcs, its, make([]int, len(svcs)), make([]float64, len(svcs)))
}

// dp is DP writing the placement and the finishes into devs and hs (len(svcs) each).
func (p *Policy) dp(now, t0 dataplane.Time, src, srcSvc, srcItems int, svcs, its, devs []int, hs []float64) ([]int, []float64, int) {
	G := len(p.devs)
	n := len(svcs)
	states := G + (n-1)*G*G
	clear(devs)
	if p.ref || p.flat || !p.dpGrouped(now, t0, src, srcSvc, srcItems, svcs, its, devs) {
		p.dpFlat(now, t0, src, srcSvc, srcItems, svcs, its, devs)
	}
	// Re-derive each task's finish along the chosen chain (the layers were overwritten).
	r := float64(t0) + p.m.Comm(src, devs[0], srcSvc, srcItems)
	for k := 0; k < n; k++ {
		if k > 0 {
			r = hs[k-1] + p.m.Comm(devs[k-1], devs[k], svcs[k-1], its[k-1])
		}
		if k == 0 {
			hs[k] = p.availComp(now, devs[k], svcs[k], its[k], r)
		} else {
			hs[k] = p.availCompPred(now, devs[k], svcs[k], its[k], r)
		}
	}
	return devs, hs, states
}

// tiers returns the transfer of a task's outputs within a server (cn) and across servers (cx):
// comm depends only on the tier (same GPU, same server, other server).
func (p *Policy) tiers(sv, it int) (cn, cx float64) {
	G := len(p.devs)
	if G > 1 {
		cn = p.m.Comm(0, 1, sv, it)
	}
	cx = cn
	srv := p.m.GPUServer
	for g := 1; g < G; g++ {
		if srv[g] != srv[0] {
			cx = p.m.Comm(0, g, sv, it)
			break
		}
	}
	return cn, cx
}

// dpFlat is the DP with every GPU evaluated in every layer, into devs.
func (p *Policy) dpFlat(now, t0 dataplane.Time, src, srcSvc, srcItems int, svcs, its, devs []int) {
	G := len(p.devs)
	n := len(svcs)
	if cap(p.h) < G {
		p.h, p.h2, p.bestX = make([]float64, G), make([]float64, G), make([]float64, G)
	}
	h, h2 := p.h[:G], p.h2[:G]
	for len(p.bp) < n {
		p.bp = append(p.bp, nil)
	}
	for k := 0; k < n; k++ {
		if cap(p.bp[k]) < G {
			p.bp[k] = make([]int, G)
		}
		p.bp[k] = p.bp[k][:G]
	}
	if p.ref {
		for d := 0; d < G; d++ {
			r := float64(t0) + p.m.Comm(src, d, srcSvc, srcItems)
			h[d] = p.availComp(now, d, svcs[0], its[0], r)
		}
	} else {
		p.layer(now, svcs[0], its[0], false, t0, src, srcSvc, srcItems, nil, h)
	}
	for k := 1; k < n; k++ {
		cn, cx := p.tiers(svcs[k-1], its[k-1])
		bp := p.bp[k]
		p.bestPred(h, cn, cx, bp, p.bestX)
		if p.ref {
			for d := 0; d < G; d++ {
				h2[d] = p.availCompPred(now, d, svcs[k], its[k], p.bestX[d])
			}
		} else {
			p.layer(now, svcs[k], its[k], true, 0, 0, 0, 0, p.bestX[:G], h2)
		}
		h, h2 = h2, h
	}
	last := 0
	for d := 1; d < G; d++ {
		if h[d] < h[last] {
			last = d
		}
	}
	devs[n-1] = last
	for k := n - 1; k > 0; k-- {
		devs[k-1] = p.bp[k][devs[k]]
	}
	p.h, p.h2 = h, h2
}

// layer evaluates one layer of the DP: into h[d], for every GPU d, availComp (pred: availCompPred)
// of a task of items of service sv whose input is ready at ready[d], or, for the first layer
// (ready nil), at t0 plus the transfer of srcItems outputs of srcSvc from GPU src. It computes
// the same values, in the same floating-point operations, as calling availComp on every GPU
// (Policy.ref), and rebuilds the same GPUs' plans (every GPU that is not down: a plan is kept
// with the time of its rebuild), but takes what depends on the layer alone (the service, the
// task's latency, load times, transfer times by tier) once, and an empty plan's finish,
// max(now, ready, avail, running batch's end) + latency, without the timeline walk: at 128
// GPUs three quarters of the GPUs have empty plans at a call.
func (p *Policy) layer(now dataplane.Time, sv, items int, pred bool, t0 dataplane.Time, src, srcSvc, srcItems int, ready, h []float64) {
	lc := p.layerOf(now, sv, items, pred, t0, src, srcSvc, srcItems, ready == nil)
	inf := math.Inf(1)
	for d := range p.devs {
		if p.down[d] > 0 {
			h[d] = inf
			continue
		}
		var r float64
		if ready != nil {
			r = ready[d]
		} else {
			r = lc.first(d, src, p.m.GPUServer)
		}
		h[d] = p.devFinish(now, d, &lc, r, false)
	}
}

// layerConst is what a layer's GPU evaluations share (see layer).
type layerConst struct {
	s                   *Service
	sv, items           int
	lat, warmUs, coldUs float64
	chargeLoad          bool
	fnow                float64
	// Layer 0's input times by tier (Comm depends only on same GPU / same server / other).
	rSelf, rNear, rFar float64
}

func (p *Policy) layerOf(now dataplane.Time, sv, items int, pred bool, t0 dataplane.Time, src, srcSvc, srcItems int, first bool) layerConst {
	s := &p.m.W.Services[sv]
	lc := layerConst{s: s, sv: sv, items: items, lat: s.ExpLat(items), fnow: float64(now),
		warmUs: p.m.LoadUs(sv, false), coldUs: p.m.LoadUs(sv, true), chargeLoad: pred && !p.opt.Literal}
	if first {
		lc.rSelf = float64(t0) + p.m.Comm(src, src, srcSvc, srcItems)
		lc.rNear, lc.rFar = lc.rSelf, lc.rSelf
		if src >= 0 {
			if e := p.nearOf[src]; e >= 0 {
				lc.rNear = float64(t0) + p.m.Comm(src, e, srcSvc, srcItems)
			}
			if e := p.farOf[src]; e >= 0 {
				lc.rFar = float64(t0) + p.m.Comm(src, e, srcSvc, srcItems)
			}
		}
	}
	return lc
}

// tierGPUs returns, for every GPU g of the servers srv (GPU → server), the first GPU other than
// g on its server and the first on another server (-1: none): layerOf's stand-ins for the
// transfer tiers, found once instead of by a scan of the GPUs at every DP (at 128 GPUs up to
// 120 GPUs scanned for a source on the last server).
func tierGPUs(srv []int) (near, far []int) {
	G := len(srv)
	near, far = make([]int, G), make([]int, G)
	ns := 0
	for _, s := range srv {
		ns = max(ns, s+1)
	}
	first, second := make([]int, ns), make([]int, ns)
	for s := range first {
		first[s], second[s] = -1, -1
	}
	other := -1 // the first GPU not on GPU 0's server
	for g, s := range srv {
		switch {
		case first[s] < 0:
			first[s] = g
		case second[s] < 0:
			second[s] = g
		}
		if other < 0 && s != srv[0] {
			other = g
		}
	}
	for g, s := range srv {
		near[g] = first[s]
		if near[g] == g {
			near[g] = second[s]
		}
		far[g] = 0
		if s == srv[0] {
			far[g] = other
		}
	}
	return near, far
}

// first is GPU d's input time in layer 0 (the output of GPU src).
func (lc *layerConst) first(d, src int, srv []int) float64 {
	switch {
	case src < 0 || d == src:
		return lc.rSelf
	case srv[d] == srv[src]:
		return lc.rNear
	}
	return lc.rFar
}

// devFinish is layer's value of GPU d (not down) for input ready at r. idle says that d is
// idle (see idleNow): its plan is empty whether or not it is rebuilt, so it is not.
func (p *Policy) devFinish(now dataplane.Time, d int, lc *layerConst, r float64, idle bool) float64 {
	var pl []pbatch
	if !idle {
		pl = p.devPlan(now, d)
	}
	r, sr, t := p.devStart(d, lc, r)
	if len(pl) == 0 {
		return t + lc.lat
	}
	return availScan(now, pl, &p.devs[d], lc.s, p.latTab[lc.sv], p.latUp[lc.sv], lc.sv, lc.items, r, sr, t, lc.lat)
}

// devPlan is GPU d's plan, rebuilt if dirty.
func (p *Policy) devPlan(now dataplane.Time, d int) []pbatch {
	if dv := &p.devs[d]; !dv.dirty {
		return dv.plan
	}
	return p.plan(now, d)
}

// devStart is what devFinish's walk of GPU d's plan starts from: the input time r (with
// availCompPred's load charge), svcReady sr, and the earliest start t. t + lc.lat is the
// finish on an empty plan, and no finish on any plan is earlier (availScan: a gap starts at t
// or later; a joined batch starts no earlier than t and runs no shorter, ExpLat growing with
// the batch).
func (p *Policy) devStart(d int, lc *layerConst, r float64) (rr, sr, t float64) {
	dv := &p.devs[d]
	sv := lc.sv
	fnow := lc.fnow
	// svcReady and availCompPred's load charge.
	switch {
	case dv.resident[sv]:
		sr = fnow
	case dv.loading == sv:
		sr = float64(dv.loadETA)
	default:
		r, sr = lc.missing(fnow, dv.loading >= 0, float64(dv.loadETA), p.hostC[p.m.GPUServer[d]][sv], r)
	}
	t = max(fnow, r, sr)
	if dv.running {
		t = max(t, float64(dv.runEnd))
	}
	return r, sr, t
}

// missing is devStart's svcReady of the layer's service on a GPU that neither holds nor loads
// it, after the GPU's current load (loading, ending at loadETA) and its own, from host RAM
// (warm) or disk, and the input time r with availCompPred's load charge (fnow: lc.fnow).
func (lc *layerConst) missing(fnow float64, loading bool, loadETA float64, warm bool, r float64) (rr, sr float64) {
	base := fnow
	if loading {
		base = max(base, loadETA)
	}
	load := lc.coldUs
	if warm {
		load = lc.warmUs
	}
	if lc.chargeLoad {
		r += load
	}
	return r, base + load
}

// srvBest holds, for one server, the two smallest finishes of the previous layer (value,
// then GPU index: the first GPU in index order wins a tie).
type srvBest struct {
	v1, v2 float64
	a1, a2 int
}

// add counts GPU e with finish v.
func (b *srvBest) add(v float64, e int) {
	switch {
	case b.a1 < 0 || lessVA(v, e, b.v1, b.a1):
		b.v2, b.a2 = b.v1, b.a1
		b.v1, b.a1 = v, e
	case b.a2 < 0 || lessVA(v, e, b.v2, b.a2):
		b.v2, b.a2 = v, e
	}
}

// bestServers returns the two best servers of sm by their best GPU (-1: none).
func bestServers(sm []srvBest) (s1, s2 int) {
	s1, s2 = -1, -1
	for base := 0; base < len(sm); base += 64 {
		s1, s2 = bestServersFrom(sm, base, ^uint64(0)>>(64-min(64, len(sm)-base)), s1, s2)
	}
	return s1, s2
}

// bestServersIn is bestServers over the servers in srvs (bit s), every other server of sm
// holding no GPU: (finish, GPU) orders the servers' best GPUs totally, so the two least are
// the same in any order of visit.
func bestServersIn(sm []srvBest, srvs uint64) (s1, s2 int) {
	return bestServersFrom(sm, 0, srvs, -1, -1)
}

// bestServersFrom visits servers base+s of sm for each bit s of srvs, in ascending order,
// from the best (s1) and second best (s2) so far, and returns the two best.
func bestServersFrom(sm []srvBest, base int, srvs uint64, s1, s2 int) (int, int) {
	for ; srvs != 0; srvs &= srvs - 1 {
		i := base + bits.TrailingZeros64(srvs)
		if sm[i].a1 < 0 {
			continue
		}
		switch {
		case s1 < 0 || lessVA(sm[i].v1, sm[i].a1, sm[s1].v1, sm[s1].a1):
			s1, s2 = i, s1
		case s2 < 0 || lessVA(sm[i].v1, sm[i].a1, sm[s2].v1, sm[s2].a1):
			s2 = i
		}
	}
	return s1, s2
}

func lessVA(v float64, a int, w float64, b int) bool { return v < w || v == w && a < b }

// bestPred is the DP's transition for one layer: for every GPU d, the predecessor e that
// minimises h[e] + comm(e→d) (ties to the lowest e), written to arg[d] with its value in x[d].
// comm depends only on the tier (0 on d itself, cn within d's server, cx across servers), so
// the per-server two smallest h and the two best servers give every d's minimum in O(|D|)
// rather than scanning all |D| predecessors: the same choices as the quadratic scan
// (TestBestPredMatchesScan), at 256 GPUs ~100× faster. The scheduler is still charged for the
// paper's |D|² transitions per layer (states), the overhead behind DyOrc §8.5's scaling.
func (p *Policy) bestPred(h []float64, cn, cx float64, arg []int, x []float64) {
	srv := p.m.GPUServer
	G := len(h)
	ns := 0
	for d := 0; d < G; d++ {
		ns = max(ns, srv[d]+1)
	}
	if cap(p.srvMin) < ns {
		p.srvMin = make([]srvBest, ns)
	}
	sm := p.srvMin[:ns]
	inf := math.Inf(1)
	for i := range sm {
		sm[i] = srvBest{v1: inf, v2: inf, a1: -1, a2: -1}
	}
	for e := 0; e < G; e++ {
		sm[srv[e]].add(h[e], e)
	}
	s1, s2 := bestServers(sm)
	for d := 0; d < G; d++ {
		x[d], arg[d] = predOf(d, srv[d], h[d], sm, s1, s2, cn, cx)
	}
}

// predOf is bestPred's choice for GPU d on server sd whose own finish is hd, from the
// per-server two smallest finishes sm and the two best servers s1, s2: the value and the
// predecessor.
func predOf(d, sd int, hd float64, sm []srvBest, s1, s2 int, cn, cx float64) (float64, int) {
	best, a := hd, d
	b := &sm[sd]
	if e := b.a1; e == d {
		e = b.a2
		if e >= 0 && lessVA(b.v2+cn, e, best, a) {
			best, a = b.v2+cn, e
		}
	} else if e >= 0 && lessVA(b.v1+cn, e, best, a) {
		best, a = b.v1+cn, e
	}
	o := s1
	if o == sd {
		o = s2
	}
	if o >= 0 && lessVA(sm[o].v1+cx, sm[o].a1, best, a) {
		best, a = sm[o].v1+cx, sm[o].a1
	}
	if math.IsInf(best, 1) {
		a = 0 // as the scan, which keeps its initial 0 when nothing is finite
	}
	return best, a
}

// svcReady is when service sv can run on GPU d: now if resident, the load's ETA if loading,
// else after the current load and its own load (avail in Eq. 1, DyOrc §5.3).
func (p *Policy) svcReady(now dataplane.Time, d, sv int) float64 {
	dv := &p.devs[d]
	switch {
	case dv.resident[sv]:
		return float64(now)
	case dv.loading == sv:
		return float64(dv.loadETA)
	}
	base := float64(now)
	if dv.loading >= 0 {
		base = max(base, float64(dv.loadETA))
	}
	return base + p.m.LoadUs(sv, !p.hostC[p.m.GPUServer[d]][sv])
}

// availCompPred is availComp for a predicted task. Read literally, Eq.1 charges a missing
// service's load from now, so a task predicted seconds ahead sees its load as free on every
// GPU, and the DP loads it next to its predecessor to save a transfer of microseconds: one more
// replica per guess, evicting services other requests use (KC's 25 cards thrash) and holding
// the GPU's one load slot (the paper does not say how many loads a GPU runs at once; we run
// one). Unless Literal, a predicted task's missing service is charged its load after the task's
// input is ready, as the reactive load Greedy would pay at the real call: the DP then puts a
// predicted task on a GPU without its service only where that wins even with the load on the
// critical path (an overloaded replica, DyOrc §5.3), and the reservation starts that load
// early, hidden behind the predecessors (DyOrc §5.4). Measured on `plan bench dyorc` (3 seeds ×
// 1800 s, load ×3): image loads 18 → 7, MIX 402 → 373, mean latency unchanged within the seeds'
// spread.
func (p *Policy) availCompPred(now dataplane.Time, d, sv, items int, ready float64) float64 {
	if !p.opt.Literal {
		dv := &p.devs[d]
		if !dv.resident[sv] && dv.loading != sv {
			ready += p.m.LoadUs(sv, !p.hostC[p.m.GPUServer[d]][sv])
		}
	}
	return p.availComp(now, d, sv, items, ready)
}

// availComp is Eq.1: the finish of a task of items on GPU d whose input is ready at ready. It
// joins a planned batch of the same service that has not started, has room and starts no
// earlier than the input is ready (the paper does not say; a batch that started before its
// input would stall), or else takes the first gap of the GPU's planned timeline long enough for
// it: workers skip tasks that are not ready, so a reservation far in the future does not delay
// a task ready now [ours].
func (p *Policy) availComp(now dataplane.Time, d, sv, items int, ready float64) float64 {
	if p.down[d] > 0 {
		return math.Inf(1) // a failed GPU finishes nothing: the DP places no task there
	}
	pl := p.plan(now, d)
	s := &p.m.W.Services[sv]
	sr := p.svcReady(now, d, sv)
	lat := s.ExpLat(items)
	t := max(float64(now), ready, sr)
	if dv := &p.devs[d]; dv.running {
		t = max(t, float64(dv.runEnd))
	}
	return availScan(now, pl, &p.devs[d], s, p.latTab[sv], p.latUp[sv], sv, items, ready, sr, t, lat)
}

// availScan is availComp's walk of a planned timeline pl: the best planned batch of s to join,
// or the first gap from t long enough for lat (sr: svcReady).
//
// Every DP layer evaluates every busy GPU's plan, so the walks use the plan's index
// (indexPlan): the join walk is skipped when the plan holds no batch of sv (dv.pmask) and stops
// where no later batch can beat the finish found (up: below), and the gap walk crosses a run of back-to-back batches at once (dv.pnext). A plan's batches start
// and end in order (plan appends a batch at or after the end of the one before and only ever
// extends the last), so inside such a run each batch starts where the one before ends: no gap
// of lat ≥ 1 µs opens, and the linear walk would leave t at the run's last end. lt is s's
// ExpLat table (Policy.latTab), the same values without the division.
func availScan(now dataplane.Time, pl []pbatch, dv *device, s *Service, lt []float64, up bool, sv, items int, ready, sr, t, lat float64) float64 {
	jump := lat >= 1 && len(dv.pnext) == len(pl)
	// Batches end in order: the walk would skip every batch that ends by t.
	i0 := 0
	if len(pl) >= searchMin {
		i0 = firstEndAfter(pl, t)
	}
	for i := i0; i < len(pl); i++ {
		b := &pl[i]
		if float64(b.end) <= t {
			continue
		}
		if float64(b.start) >= t+lat {
			break
		}
		t = float64(b.end)
		if jump && t < 1<<50 {
			i = int(dv.pnext[i]) - 1
			t = float64(pl[i].end)
		}
	}
	best := t + lat
	if dv.pmask&svcBit(sv) == 0 {
		return best
	}
	// Where ExpLat does not fall as the batch grows (up), joining a batch that starts at st
	// finishes no earlier than st + lat (lat = ExpLat(items) = lt[items], items ≥ 0; a joined
	// batch holds n = its items (≥ 1) + items ≤ MaxBatch and runs lt[n] ≥ lt[items];
	// floating-point addition is monotone): once st + lat reaches the least finish so far, no
	// batch from there on (they start in order) can lower it, and the walk stops. The gap's
	// finish is found first so that it bounds the join walk too. At 128 GPUs on the scale
	// benchmark this walks 1.4M batches instead of 6.7M (8 GPUs: 52k instead of 125k), with
	// the same finishes (TestAvailScanCutMatchesFullWalk).
	cut := up && items >= 0
	// Batches start in order: those before the first that starts at or after the input and
	// the service are ready cannot be joined.
	from := max(ready, sr)
	i0 = 0
	if len(pl) >= searchMin {
		i0 = firstStartFrom(pl, from)
	}
	for i := i0; i < len(pl); i++ {
		b := &pl[i]
		if cut && float64(b.start)+lat >= best {
			break
		}
		if b.svc == sv && b.start > now && b.items+items <= s.MaxBatch && ready <= float64(b.start) && sr <= float64(b.start) {
			el := 0.0
			if n := b.items + items; n >= 0 && n < len(lt) {
				el = lt[n]
			} else {
				el = s.ExpLat(n)
			}
			best = min(best, float64(b.start)+el)
		}
	}
	return best
}

// firstEndAfter is the first index of pl whose batch ends after t, and firstStartFrom the
// first whose batch starts at or after from, or len(pl) (a plan's batches start and end in
// order). The walks skip a short plan's batches one by one faster than a search (8 GPUs: plans
// of a few batches; 128: of up to hundreds, on the GPUs the load concentrates on), so they
// search only plans of searchMin batches or more. A search gallops from the plan's head
// (indices 0, 1, 3, 7, ...) before it halves: the walks' times are at or near now, where a
// plan starts, so at 128 GPUs under the 16× load 92% of the searches end before index 4 of
// plans of 44 batches on average (mean index 1.8), which halving the whole plan reached in
// ~5.5 probes. They take the bound, not a predicate: a closure kept them from being inlined.
func firstEndAfter(pl []pbatch, t float64) int {
	// The end is false before lo; hi is len(pl) or an index whose batch ends after t.
	lo, hi, step := 0, 0, 1
	for hi < len(pl) && !(float64(pl[hi].end) > t) {
		lo, hi, step = hi+1, hi+step, step*2
	}
	hi = min(hi, len(pl))
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if float64(pl[m].end) > t {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// firstStartFrom: see firstEndAfter.
func firstStartFrom(pl []pbatch, from float64) int {
	lo, hi, step := 0, 0, 1
	for hi < len(pl) && !(float64(pl[hi].start) >= from) {
		lo, hi, step = hi+1, hi+step, step*2
	}
	hi = min(hi, len(pl))
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if float64(pl[m].start) >= from {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// searchMin: see firstEndAfter.
const searchMin = 24
