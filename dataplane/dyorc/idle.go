package dyorc

// Idle GPUs in the speculative DP (DyOrc §5.3). The DP evaluates every GPU in every layer;
// at 128 GPUs three quarters of those evaluations are of idle GPUs (nothing queued, reserved,
// running or loading), whose finish depends on the server (host-cache hit or not, transfer
// tier), on whether the layer's service is resident and on the input time, and whose input
// time in turn depends only on the same. Idle GPUs of a server with the same residency of the
// chain's services therefore have the same finish in every layer: dpGrouped evaluates one of
// them (the lowest index) per such class, and the DP's choices, ties to the lowest index
// included, are those of the evaluation of every GPU (TestGroupedMatchesFlat). The scheduler is
// still charged for the paper's states (DP's states), the overhead model of DyOrc §8.5.
// On the scale benchmark's 128 GPUs a layer evaluates 44 units instead of 128 GPUs, 32 of them
// busy; evalLayer walks the plans of only those whose bound could matter (about one in five),
// from compact per-GPU records (hotDev). There most layers need not even that: sparse.go
// evaluates them over the GPUs holding their service (13 units a layer) when a bound shows the
// other units cannot change a choice.

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/plan-dev/plan/dataplane"
)

// idleSet is the kept record of which GPUs are idle, per server as bit masks over the
// server's GPUs in index order (local), with each GPU's resident services (resM[s*ns+sv]);
// busy lists the GPUs that are not idle.
type idleSet struct {
	ok      bool    // built
	off     bool    // a server has more than 64 GPUs: no grouping
	srvDevs [][]int // server → its GPUs in index order
	local   []int   // GPU → its place in srvDevs
	idleM   []uint64
	resM    []uint64
	ldM     []uint64 // as resM, of the service each GPU is loading (holders: sparse.go)
	// hold[sv]: the servers (bit s) with a GPU that holds or loads sv, where there are 2 to 64
	// servers and at most 64 services (else nil): evalSparse's holders without a scan of every
	// server per layer, kept from the changes of the touched GPUs' hotDev.
	hold []uint64
	// holdM[sv*nsrv+s]: resM|ldM of service sv on server s, kept with hold: evalSparse
	// reads a service's holders on each server of hold[sv]; resM and ldM, by server, put
	// those servers' words ns words apart, a line each (cachegrind at 128 GPUs: ~1.3 L1
	// misses an event), where here a service's 16 servers fill two lines.
	holdM []uint64
	// byEnd: the busy GPUs in order of endKey, then index, kept with hold where there are at
	// most 64 services (hotDev.res): evalSparse's best-first order of the busy holders.
	byEnd   []int32
	beHas   []uint64 // beHas[j]: hasOf of GPU byEnd[j] (evalBusy's scan reads these alone)
	cuts    int64    // evalBusy's layers cut short (for the tests)
	busy    []int
	busyAt  []int // GPU → its place in busy, -1 when idle
	touched []int // GPUs whose state changed since the last sync
	hot     []hotDev
	// DP scratch.
	units  []unit // units[:len(busy)]: the busy GPUs' units, kept in busy's order by syncIdle
	parts  []uint64
	srvLo  []int // server → its classes' range in units
	srvHi  []int
	srcU   int   // the DP's unit of its source GPU when idle (a unit of its own), else -1
	src    int   // the DP's source GPU (-1: the request input)
	svcs   []int // the DP's chain of services (classesOf)
	layer  int   // the layer dpGrouped evaluates
	stride int   // hu's stride: layer k's finishes at hu[k*stride:]
	dpN    int64 // DPs run: srvAt[s] == dpN once server s's classes are found
	srvAt  []int64
	hu     []float64 // layer k's finish of unit u at k*len(units)+u
	xu     []float64
	smL    [][]srvBest
	s12    [][2]int
	cn, cx []float64
	wait   []walk
	// cand, cand2: sparse.go's candidate units of the previous and of the current layer.
	cand, cand2 []int
	// infs: stride +Inf, copied over a sparse layer's finishes (a copy, not a loop of stores).
	infs []float64
	// smNone: a server's srvBest with no GPU, one a server. smL[k] holds it but for the
	// servers of smM[k] (bit s; all bits: any server), which minima resets alone: at 128 GPUs a
	// sparse layer's minima touch 2 to 5 of 16 servers, and the copy of all was ~200 bytes of
	// memmove an event.
	smNone []srvBest
	smM    []uint64
}

// hotDev is what evalLayer reads of a GPU (devStart's inputs, and whether its plan may need a
// walk), synced with the GPU's state with the idle set: at 128 GPUs a DP evaluates ~75 units,
// and reading the same from the device records (five cache lines of each, and the residency
// slice) was the DP's largest single cost.
type hotDev struct {
	runEnd, loadETA float64
	// res: the resident services (bit sv), where there are at most 64 (else resM is read).
	res     uint64
	loading int32
	local   uint8 // the GPU's place in its server (idleSet.local)
	running bool
	// walk: the plan may hold batches: dirty (unknown until rebuilt) or not empty.
	walk bool
}

// unit is what dpGrouped evaluates: one GPU (mask 0), or a class of idle GPUs of server srv
// (mask over srvDevs[srv]) represented by its lowest GPU dev, dev2 the next (-1: none).
type unit struct {
	dev, dev2, srv int
	mask           uint64
}

// touch records that GPU d's state changed: its plan is stale (dirty) and its idleness and
// residency are synced at the next DP. Every change the plan depends on sets dirty, and
// idleness depends on nothing else (down, running, loading, queue, reservations, residency).
func (p *Policy) touch(d int) {
	dv := &p.devs[d]
	dv.dirty, dv.pend = true, false
	if !dv.touched {
		dv.touched = true
		p.idle.touched = append(p.idle.touched, d)
	}
}

// idleNow is whether GPU d is idle: up, nothing running or loading, nothing queued or reserved.
// Its plan is then empty, at any time it is rebuilt.
func (p *Policy) idleNow(d int) bool {
	dv := &p.devs[d]
	return p.down[d] == 0 && !dv.running && dv.loading < 0 && len(dv.queue) == 0 && len(dv.resv) == 0 && len(dv.order) == 0
}

// syncIdle brings the idle set up to date with the touched GPUs (all of them at first, and
// after prewarm, which sets residency without touching), at the DP at now. A touched GPU that
// is busy and up has its dirty plan's rebuild deferred to now (evalLayer): every DP evaluates
// every such GPU, and a dirty GPU not touched since the last DP was deferred then, or was idle
// or down and is still (becoming busy or up touches it).
func (p *Policy) syncIdle(now dataplane.Time) bool {
	is := &p.idle
	G := len(p.devs)
	if is.off {
		return false
	}
	if !is.ok {
		if !p.buildIdle() {
			is.off = true
			return false
		}
		is.touched = is.touched[:0]
		for d := 0; d < G; d++ {
			p.devs[d].touched = true
			is.touched = append(is.touched, d)
		}
	}
	ns := len(p.m.W.Services)
	for _, d := range is.touched {
		dv := &p.devs[d]
		dv.touched = false
		s := p.m.GPUServer[d]
		bit := uint64(1) << is.local[d]
		if old := int(is.hot[d].loading); old != dv.loading {
			if old >= 0 {
				is.ldM[s*ns+old] &^= bit
			}
			if dv.loading >= 0 {
				is.ldM[s*ns+dv.loading] |= bit
			}
		}
		old := is.hot[d]
		wasBusy := is.busyAt[d] >= 0
		is.hot[d] = p.hotOf(d)
		if ns <= 64 {
			// resM holds d's residency as hot[d].res did (both synced here, both empty when
			// built): only the services whose residency changed flip. At 128 GPUs the loop
			// over every service read-modify-wrote ns words of resM per touched GPU, in lines
			// an 8-GPU run keeps in L1 and a 128-GPU run does not (cachegrind: ~3.6 against
			// ~0.3 L1 misses an event).
			for ch := old.res ^ is.hot[d].res; ch != 0; ch &= ch - 1 {
				is.resM[s*ns+bits.TrailingZeros64(ch)] ^= bit
			}
		} else {
			for sv, r := range dv.resident {
				if r {
					is.resM[s*ns+sv] |= bit
				} else {
					is.resM[s*ns+sv] &^= bit
				}
			}
		}
		if is.hold != nil {
			// The services whose residency or load on d changed.
			ch := old.res ^ is.hot[d].res
			if old.loading != is.hot[d].loading {
				if old.loading >= 0 {
					ch |= 1 << old.loading
				}
				if dv.loading >= 0 {
					ch |= 1 << dv.loading
				}
			}
			nsrv := len(is.srvDevs)
			for sb := uint64(1) << s; ch != 0; ch &= ch - 1 {
				sv := bits.TrailingZeros64(ch)
				m := is.resM[s*ns+sv] | is.ldM[s*ns+sv]
				is.holdM[sv*nsrv+s] = m
				if m != 0 {
					is.hold[sv] |= sb
				} else {
					is.hold[sv] &^= sb
				}
			}
		}
		idle := p.idleNow(d)
		if !idle && p.down[d] == 0 && dv.dirty && !dv.pend {
			dv.pend, dv.pendAt = true, now
		}
		switch {
		case idle && is.busyAt[d] >= 0:
			is.idleM[s] |= bit
			i, last := is.busyAt[d], is.busy[len(is.busy)-1]
			is.busy[i], is.busyAt[last] = last, i
			is.units[i] = is.units[len(is.busy)-1]
			is.busy = is.busy[:len(is.busy)-1]
			is.busyAt[d] = -1
		case !idle && is.busyAt[d] < 0:
			is.idleM[s] &^= bit
			is.busyAt[d] = len(is.busy)
			is.units = append(is.units[:len(is.busy)], unit{dev: d, dev2: -1, srv: s})
			is.busy = append(is.busy, d)
		}
		if is.byEnd != nil {
			busy, k, has := is.busyAt[d] >= 0, endKey(&is.hot[d]), hasOf(&is.hot[d])
			switch {
			case !wasBusy || !busy || k != endKey(&old):
				if wasBusy {
					is.byEndDel(d, endKey(&old))
				}
				if busy {
					is.byEndAdd(d, k, has)
				}
			case has != hasOf(&old):
				is.beHas[is.byEndAt(d, k)] = has
			}
		}
	}
	is.touched = is.touched[:0]
	if p.check {
		p.checkIdle()
		p.checkByEnd()
	}
	return true
}

// hotOf is GPU d's hotDev from its state.
func (p *Policy) hotOf(d int) hotDev {
	dv := &p.devs[d]
	h := hotDev{runEnd: float64(dv.runEnd), loadETA: float64(dv.loadETA), loading: int32(dv.loading),
		local: uint8(p.idle.local[d]), running: dv.running, walk: dv.dirty || len(dv.plan) > 0}
	if len(dv.resident) <= 64 {
		h.res = dv.resM
	}
	return h
}

// buildIdle lays out the idle set, every GPU busy until synced; false when a server has more
// than 64 GPUs (the DP then evaluates every GPU).
func (p *Policy) buildIdle() bool {
	is := &p.idle
	G := len(p.devs)
	nsrv := 0
	for _, s := range p.m.GPUServer {
		nsrv = max(nsrv, s+1)
	}
	is.srvDevs = make([][]int, nsrv)
	is.local = make([]int, G)
	for d, s := range p.m.GPUServer {
		is.local[d] = len(is.srvDevs[s])
		is.srvDevs[s] = append(is.srvDevs[s], d)
		if len(is.srvDevs[s]) > 64 {
			return false
		}
	}
	is.idleM = make([]uint64, nsrv)
	is.resM = make([]uint64, nsrv*len(p.m.W.Services))
	is.ldM = make([]uint64, nsrv*len(p.m.W.Services))
	if nsrv > 1 && nsrv <= 64 && len(p.m.W.Services) <= 64 {
		is.hold = make([]uint64, len(p.m.W.Services))
		is.holdM = make([]uint64, nsrv*len(p.m.W.Services))
		// Every GPU busy, none running (hot below): index order.
		is.byEnd, is.beHas = make([]int32, G), make([]uint64, G)
		for d := range is.byEnd {
			is.byEnd[d] = int32(d)
		}
	}
	is.busy = make([]int, G)
	is.busyAt = make([]int, G)
	is.units = make([]unit, G)
	for d := range is.busy {
		is.busy[d], is.busyAt[d] = d, d
		is.units[d] = unit{dev: d, dev2: -1, srv: p.m.GPUServer[d]}
	}
	is.srvLo, is.srvHi, is.srvAt = make([]int, nsrv), make([]int, nsrv), make([]int64, nsrv)
	is.hot = make([]hotDev, G)
	for d := range is.hot {
		is.hot[d].loading = -1 // as ldM: no load recorded yet
	}
	is.ok = true
	return true
}

// checkIdle panics where the kept idle set differs from the GPUs' state (Policy.check).
func (p *Policy) checkIdle() {
	is := &p.idle
	ns := len(p.m.W.Services)
	for d := range p.devs {
		s, bit := p.m.GPUServer[d], uint64(1)<<is.local[d]
		idle := p.idleNow(d)
		if (is.idleM[s]&bit != 0) != idle || (is.busyAt[d] < 0) != idle || !idle && (is.busy[is.busyAt[d]] != d || is.units[is.busyAt[d]] != unit{dev: d, dev2: -1, srv: s}) {
			panic(fmt.Sprintf("dyorc: GPU %d: kept idle %v, is %v", d, is.idleM[s]&bit != 0, idle))
		}
		for sv, r := range p.devs[d].resident {
			if (is.resM[s*ns+sv]&bit != 0) != r {
				panic(fmt.Sprintf("dyorc: GPU %d: kept residency of service %d differs", d, sv))
			}
			if (is.ldM[s*ns+sv]&bit != 0) != (p.devs[d].loading == sv) {
				panic(fmt.Sprintf("dyorc: GPU %d: kept load of service %d differs", d, sv))
			}
		}
		if is.hold != nil {
			for sv := range p.devs[d].resident {
				m := is.resM[s*ns+sv] | is.ldM[s*ns+sv]
				if (is.hold[sv]>>s&1 != 0) != (m != 0) || is.holdM[sv*len(is.srvDevs)+s] != m {
					panic(fmt.Sprintf("dyorc: server %d: kept holders of service %d differ", s, sv))
				}
			}
		}
		if h := p.hotOf(d); h != is.hot[d] {
			panic(fmt.Sprintf("dyorc: GPU %d: kept %+v, is %+v", d, is.hot[d], h))
		}
	}
	for s, row := range p.hostC {
		for sv, in := range row {
			if p.hostM != nil && (p.hostM[sv]>>s&1 != 0) != in {
				panic(fmt.Sprintf("dyorc: server %d: kept host cache of service %d differs", s, sv))
			}
		}
	}
}

// checkByEnd panics where byEnd is not the busy GPUs in order of endKey, then index.
func (p *Policy) checkByEnd() {
	is := &p.idle
	if is.byEnd == nil {
		return
	}
	if len(is.byEnd) != len(is.busy) {
		panic(fmt.Sprintf("dyorc: %d GPUs by end, %d busy", len(is.byEnd), len(is.busy)))
	}
	for j, d := range is.byEnd {
		if is.busyAt[d] < 0 {
			panic(fmt.Sprintf("dyorc: idle GPU %d by end", d))
		}
		if is.beHas[j] != hasOf(&is.hot[d]) {
			panic(fmt.Sprintf("dyorc: GPU %d by end: kept services %x, holds %x", d, is.beHas[j], hasOf(&is.hot[d])))
		}
		if j > 0 {
			e := is.byEnd[j-1]
			if !lessVA(endKey(&is.hot[e]), int(e), endKey(&is.hot[d]), int(d)) {
				panic(fmt.Sprintf("dyorc: GPUs %d, %d out of end order", e, d))
			}
		}
	}
}

// dpGrouped is DP over units (the busy GPUs one by one, the idle ones by class), into devs;
// false, having done nothing, where it does not apply. A class's GPUs have the same finish in
// every layer: the same at layer 0 (same server, not the source GPU, which is a unit of its
// own); and bestPred gives each the same value at the next: a GPU that is not its server's best
// takes min(own, server's best + cn, other servers' best + cx), and the server's best, if in
// the class, takes min(own, second best + cn, …) where own is the server's best and second
// best + cn ≥ own as cn ≥ 0 (checked), as its classmates' min(own, best + cn) = own. Only the
// predecessors differ (ties to the lowest index): the chain's are re-derived from the kept
// per-server minima (predOf). A class enters the per-server minima as its two lowest GPUs.
func (p *Policy) dpGrouped(now, t0 dataplane.Time, src, srcSvc, srcItems int, svcs, its, devs []int) bool {
	n := len(svcs)
	is := &p.idle
	is.cn, is.cx = is.cn[:0], is.cx[:0]
	for k := 0; k < n; k++ {
		var cn, cx float64
		if k > 0 {
			cn, cx = p.tiers(svcs[k-1], its[k-1])
			if !(cn >= 0) {
				return false
			}
		}
		is.cn, is.cx = append(is.cn, cn), append(is.cx, cx)
	}
	if !p.syncIdle(now) {
		return false
	}
	us := is.units[:len(is.busy)]
	is.srcU = -1
	if src >= 0 {
		if s := p.m.GPUServer[src]; is.idleM[s]&(1<<is.local[src]) != 0 {
			// The source GPU's layer-0 input is its own: a unit of its own.
			is.srcU = len(us)
			us = append(us, unit{dev: src, dev2: -1, srv: s})
		}
	}
	is.units, is.svcs, is.src, is.layer = us, svcs, src, 0
	is.dpN++
	// A layer's units are the busy GPUs', the source's, and each server's idle classes; hu
	// keeps layer k's finishes at k*stride+u, stride bounding the units (every class holds a
	// GPU).
	G := len(p.devs)
	stride := G + 1
	is.stride = stride
	if cap(is.hu) < n*stride {
		is.hu = make([]float64, n*stride)
	}
	is.hu = is.hu[:n*stride]
	if cap(is.xu) < stride {
		is.xu = make([]float64, stride)
	}
	if len(is.smNone) != len(is.srvDevs) {
		is.smNone = make([]srvBest, len(is.srvDevs))
		for s := range is.smNone {
			is.smNone[s] = srvBest{v1: math.Inf(1), v2: math.Inf(1), a1: -1, a2: -1}
		}
	}
	if len(is.infs) < stride {
		is.infs = make([]float64, stride)
		for i := range is.infs {
			is.infs[i] = math.Inf(1)
		}
	}
	xu := is.xu[:stride]
	// The idle classes are found per server when a layer first needs them: every layer
	// evalSparse settles needs only those of the servers holding its service (or caching it),
	// and at 128 GPUs most DPs are settled so in every layer, while finding every server's
	// classes was a tenth of the DP. Where sparse layers are not tried (fewer than
	// sparseUnits units: at least the busy GPUs, the source and one class per server with an
	// idle GPU), every server's are found at once.
	trySparse := p.sparseAll || len(us) >= sparseUnits
	if !trySparse {
		nu := len(us)
		for s := range is.srvDevs {
			if is.idleM[s] != 0 {
				nu++
			}
		}
		trySparse = nu >= sparseUnits
	}
	if !trySparse {
		p.allClasses()
	}
	for len(is.smL) < n {
		is.smL, is.s12, is.smM = append(is.smL, nil), append(is.s12, [2]int{}), append(is.smM, ^uint64(0))
	}
	last := 0
	// sparse: the previous layer was evaluated over its candidates alone (sparse.go), the
	// other units' finishes left infinite.
	sparse := false
	for k := 0; k < n; k++ {
		is.layer = k
		us := is.units
		var sm []srvBest
		s1, s2 := -1, -1
		if k > 0 {
			sm, s1, s2 = is.minima(k, sparse)
		}
		lc := p.layerOf(now, svcs[k], its[k], k > 0, t0, src, srcSvc, srcItems, k == 0)
		h := is.hu[k*stride : (k+1)*stride]
		// The walks a layer before the last may skip (evalLayer): the next layer's transfers are
		// cn and cx, both ≥ 0 (cn is checked above; a negative or NaN cx turns skipping off).
		slack := math.NaN()
		if k < n-1 && is.cx[k+1] >= 0 {
			slack = max(is.cn[k+1], is.cx[k+1])
		}
		if trySparse {
			var ok bool
			if last, ok = p.evalSparse(now, &lc, k, src, sm, s1, s2, h, k == n-1, slack); ok {
				sparse = true
				continue
			}
		}
		sparse = false
		if trySparse {
			p.allClasses()
			us = is.units
		}
		if k > 0 {
			prev := is.hu[(k-1)*stride : k*stride]
			for i := range us {
				xu[i], _ = predOf(us[i].dev, us[i].srv, prev[i], sm, s1, s2, is.cn[k], is.cx[k])
			}
		}
		last = p.evalLayer(now, &lc, k == 0, src, xu, h, k == n-1, slack)
	}
	d := is.units[last].dev
	devs[n-1] = d
	for k := n - 1; k > 0; k-- {
		s12 := is.s12[k]
		_, d = predOf(d, p.m.GPUServer[d], is.hu[(k-1)*stride+p.unitOf(d)], is.smL[k], s12[0], s12[1], is.cn[k], is.cx[k])
		devs[k-1] = d
	}
	return true
}

// minima builds layer k's per-server minima of layer k-1's finishes (smL[k]) and its two
// best servers (s12[k]), from layer k-1's candidates where it was sparse.
func (is *idleSet) minima(k int, sparse bool) (sm []srvBest, s1, s2 int) {
	us, prev := is.units, is.hu[(k-1)*is.stride:k*is.stride]
	sm = is.smL[k]
	switch m := is.smM[k]; {
	case len(sm) != len(is.smNone) || m == ^uint64(0):
		sm = append(sm[:0], is.smNone...)
	default:
		for ; m != 0; m &= m - 1 {
			sm[bits.TrailingZeros64(m)] = is.smNone[0]
		}
	}
	is.smM[k] = ^uint64(0)
	if sparse {
		// The servers of the candidates (at most 64 servers: byEnd), the only ones with a
		// GPU in sm, so the only ones bestServers can pick.
		var srvs uint64
		for _, i := range is.cand {
			u := &us[i]
			sm[u.srv].add(prev[i], u.dev)
			if u.dev2 >= 0 {
				sm[u.srv].add(prev[i], u.dev2)
			}
			srvs |= 1 << (uint(u.srv) & 63)
		}
		if len(sm) <= 64 {
			s1, s2 = bestServersIn(sm, srvs)
			is.smM[k] = srvs
		} else {
			s1, s2 = bestServers(sm)
		}
	} else {
		for i := range us {
			u := &us[i]
			sm[u.srv].add(prev[i], u.dev)
			if u.dev2 >= 0 {
				sm[u.srv].add(prev[i], u.dev2)
			}
		}
		s1, s2 = bestServers(sm)
	}
	is.smL[k], is.s12[k] = sm, [2]int{s1, s2}
	return sm, s1, s2
}

// classesOf appends server s's idle classes to the DP's units (dpGrouped), once a DP: its
// idle GPUs (but the source, a unit of its own) split by the residency of each of the chain's
// services. A class found at layer k took no part in the layers before, all of them sparse
// (a full layer finds every server's first): its finish there reads +Inf, as evalSparse
// writes for every unit it does not evaluate.
func (p *Policy) classesOf(s int) {
	is := &p.idle
	if is.srvAt[s] == is.dpN {
		return
	}
	is.srvAt[s] = is.dpN
	us := is.units
	is.srvLo[s] = len(us)
	im := is.idleM[s]
	if src := is.src; src >= 0 && p.m.GPUServer[src] == s {
		im &^= 1 << is.local[src]
	}
	if im == 0 {
		is.srvHi[s] = len(us)
		return
	}
	ns := len(p.m.W.Services)
	parts := append(is.parts[:0], im)
	for _, sv := range is.svcs {
		r := is.resM[s*ns+sv]
		for i, m := range parts {
			if a, b := m&r, m&^r; a != 0 && b != 0 {
				parts[i] = a
				parts = append(parts, b)
			}
		}
	}
	gs := is.srvDevs[s]
	for _, m := range parts {
		u := unit{dev: gs[bits.TrailingZeros64(m)], dev2: -1, srv: s, mask: m}
		if m2 := m & (m - 1); m2 != 0 {
			u.dev2 = gs[bits.TrailingZeros64(m2)]
		}
		us = append(us, u)
	}
	is.parts = parts
	is.srvHi[s] = len(us)
	if is.layer > 0 {
		inf := math.Inf(1)
		for k := 0; k < is.layer; k++ {
			h := is.hu[k*is.stride : (k+1)*is.stride]
			for i := is.srvLo[s]; i < len(us); i++ {
				h[i] = inf
			}
		}
	}
	is.units = us
}

// allClasses finds the idle classes of every server not found yet in this DP.
func (p *Policy) allClasses() {
	is := &p.idle
	for s := range is.srvDevs {
		if is.srvAt[s] != is.dpN {
			p.classesOf(s)
		}
	}
}

// evalLayer is dpGrouped's evaluation of one layer into h (first: it is layer 0, whose input
// times come from src, else from x), with the plan walks (availScan) that cannot change the
// DP's choices skipped. It returns the unit of the layer's least finish (ties to the lowest GPU;
// 0 when every unit is down), the DP's last GPU when last.
//
// A unit's finish on an empty plan (devStart), where ExpLat grows with the batch (latUp), is a
// lower bound of its walk's: a gap starts no earlier, and a batch it joins starts no earlier and
// runs no shorter. A unit whose plan is not walked keeps that bound in h. The full evaluation
// rebuilds every dirty plan at the DP and keeps it with that time; here a dirty plan is rebuilt
// only when walked, at this DP's time (device.pendAt, plan), or before the host cache it reads
// changes (rebuildDeferred), which makes the same plan: 12% fewer rebuilds at 128 GPUs.
//
//   - Of the last layer only the least finish matters, so a plan is walked only where the bound
//     could still beat the least finish found.
//   - A layer before the last matters through the next layer's inputs: unit i's is the least of
//     h[j] + comm(j→i) over every unit j (bestPred; comm 0 on i itself, slack ≥ comm ≥ 0 else).
//     The least finish found, best, bounds every unit's input: best + slack, in floating point
//     (addition is monotone). A unit whose bound exceeds that cannot be any unit's predecessor,
//     its bound plus any transfer exceeding it too, whatever its true finish; it is not walked,
//     and bestPred over h with its bound (ties to the lowest index among the others alike)
//     makes the choices it would with its finish. An earlier attempt kept each server's two
//     least finishes exact instead and cost more than it saved: the busy GPUs sit on the
//     servers holding the chain's services, which that must settle one by one.
//
// The least bound is walked first: its walk most often gives the least finish. Walks a DP makes
// on the scale benchmark's 128 GPUs, in layers before the last 21.3 → 3.9, in the last 30.2 →
// 6.8 (8 GPUs: 5.5 → 3.2, 7.1 → 4.0; before, the last layer's bound alone: 9.0 and 4.8).
func (p *Policy) evalLayer(now dataplane.Time, lc *layerConst, first bool, src int, x, h []float64, last bool, slack float64) int {
	is := &p.idle
	us := is.units
	h, x = h[:len(us)], x[:len(us)]
	hot, down, resM, hostC, gsrv := is.hot, p.down, is.resM, p.hostC, p.m.GPUServer
	ns, sv := len(p.m.W.Services), lc.sv
	fnow, lat := lc.fnow, lc.lat
	res64 := ns <= 64
	bv, bi := math.Inf(1), -1
	wait := is.wait[:0]
	for i := range us {
		u := &us[i]
		d := u.dev
		if down[d] > 0 {
			// Infinite, but a candidate for the least finish all the same: every unit may be.
			h[i] = math.Inf(1)
			if bi < 0 || lessVA(h[i], d, bv, us[bi].dev) {
				bv, bi = h[i], i
			}
			continue
		}
		r := x[i]
		if first {
			r = lc.first(d, src, gsrv)
		}
		// devStart, from the hotDev: the same values in the same floating-point operations.
		hd := &hot[d]
		var sr, t float64
		switch {
		case res64 && hd.res>>(uint(sv)&63)&1 != 0 || !res64 && resM[u.srv*ns+sv]>>hd.local&1 != 0:
			// max(fnow, r, fnow) is max(fnow, r) for every input, NaN and signed zeros included.
			sr, t = fnow, max(fnow, r)
		case int(hd.loading) == sv:
			sr = hd.loadETA
			t = max(fnow, r, sr)
		default:
			r, sr = lc.missing(fnow, hd.loading >= 0, hd.loadETA, hostC[u.srv][sv], r)
			t = max(fnow, r, sr)
		}
		if hd.running {
			t = max(t, hd.runEnd)
		}
		h[i] = t + lat
		if u.mask == 0 && hd.walk {
			if len(wait) > 0 && h[i] < h[wait[0].i] {
				// The least bound first.
				wait = append(wait, wait[0])
				wait[0] = walk{i: i, r: r, sr: sr, t: t}
			} else {
				wait = append(wait, walk{i: i, r: r, sr: sr, t: t})
			}
		} else if bi < 0 || lessVA(h[i], d, bv, us[bi].dev) {
			bv, bi = h[i], i
		}
	}
	prune := p.latUp[lc.sv] && (last || slack >= 0)
	for _, w := range wait {
		d := us[w.i].dev
		if prune && bi >= 0 {
			if last && !lessVA(h[w.i], d, bv, us[bi].dev) || !last && h[w.i] > bv+slack {
				continue
			}
		}
		if pl := p.plan(now, d); len(pl) > 0 {
			h[w.i] = availScan(now, pl, &p.devs[d], lc.s, p.latTab[lc.sv], p.latUp[lc.sv], lc.sv, lc.items, w.r, w.sr, w.t, lc.lat)
		}
		if bi < 0 || lessVA(h[w.i], d, bv, us[bi].dev) {
			bv, bi = h[w.i], w.i
		}
	}
	is.wait = wait
	return max(bi, 0)
}

// walk is a plan walk evalLayer may skip: unit i's devStart.
type walk struct {
	i        int
	r, sr, t float64
}

// unitOf is GPU d's unit in the current dpGrouped.
func (p *Policy) unitOf(d int) int {
	is := &p.idle
	if i := is.busyAt[d]; i >= 0 {
		return i
	}
	if is.srcU >= 0 && is.units[is.srcU].dev == d {
		return is.srcU
	}
	s, bit := p.m.GPUServer[d], uint64(1)<<is.local[d]
	for i := is.srvLo[s]; i < is.srvHi[s]; i++ {
		if is.units[i].mask&bit != 0 {
			return i
		}
	}
	panic(fmt.Sprintf("dyorc: GPU %d in no unit of the DP", d))
}
