package dyorc

// The DP's layers over the GPUs that hold the layer's service (DyOrc §5.3, Algorithm 1).
//
// A layer's task finishes on a GPU that neither holds nor loads its service no earlier than
// the service's load from host RAM after now (avail in Eq. 1: the GPU must load it first), and,
// unless Literal, no earlier than its input plus that load (availCompPred's charge). At 128
// GPUs with each service warm on few of them, the GPUs that hold the service (resident or
// loading) usually finish before that bound: then the other units change no choice of the DP
// and need no evaluation. evalSparse evaluates the holders alone, found per server from the
// idle set's residency and load masks (resM, ldM), and keeps the layer when the bound shows the
// others cannot matter; else the full evaluation (evalLayer) runs.

import (
	"math"
	"math/bits"

	"github.com/plan-dev/plan/dataplane"
)

// sparseUnits is the number of units from which dpGrouped tries evalSparse first. On one
// server (the scale benchmark's 8 GPUs: ~8 units a layer) the full evaluation is as cheap as
// finding the holders, and the layers the bound cannot settle pay both.
const sparseUnits = 16

// evalSparse evaluates layer k of dpGrouped (lc; sm, s1, s2: the previous layer's per-server
// minima and best servers, for k > 0) over its candidate units only: those of GPUs that are
// up and hold or load the layer's service. It returns the unit of the least finish (as
// evalLayer) and true when no other unit can change the DP's choices, having written the
// candidates' finishes into h and +Inf for every other unit; false, with h unspecified,
// otherwise.
//
// Every other unit (missing the service, or down) finishes no earlier than lb: its start
// is at least svcReady ≥ now + the least load time (host RAM or disk), and at least its input
// time, which is at least rmin at layer 0 and, at a later layer, the previous layer's least
// finish (bestPred adds transfers ≥ 0 to it), plus the load unless Literal; a walk of its plan
// only delays it where ExpLat does not fall with the batch (latUp). Floating-point addition
// and max are monotone, so the bound holds as computed. In the last layer only the least
// finish matters, and a unit with a finish over lb > best is not it. In an earlier layer, a
// unit whose finish exceeds best + slack (slack ≥ any transfer) is no unit's predecessor
// (evalLayer's argument), so its finish, true or +Inf, changes no choice of bestPred: every
// unit has a term of at most best + slack (its own, best + cn on best's server, best + cx
// elsewhere), and every term made from such a unit exceeds it. The next layer builds its
// per-server minima from the candidates alone (the infinite finishes never enter a minimum
// that decides), and the backtrack reads +Inf for a skipped unit, which it never picks.
//
// Where idleSet.byEnd is kept, the busy holders are visited best-first by the end of their
// running batch (evalBusy) and those past the first whose bound cannot matter are skipped like
// the other units: +Inf, and not candidates. On the scale benchmark's 128 GPUs a sparse layer
// so evaluates ~5 of its ~14 busy holders.
//
// A GPU loads the service from host RAM where its server's host cache holds it, else from disk
// (seconds). Where the holders' least finish does not beat the bound with the host load but
// does with the disk's (under overload, the holders' queues outlast a host load: 24% of the
// layers at 128 GPUs, nearly all settled so), the units of the servers whose cache holds the
// service are evaluated too (one or two servers of 16), and every unit left is bounded with
// the disk load.
func (p *Policy) evalSparse(now dataplane.Time, lc *layerConst, k, src int, sm []srvBest, s1, s2 int, h []float64, last bool, slack float64) (int, bool) {
	is := &p.idle
	sv := lc.sv
	if !p.latUp[sv] || !last && !(slack >= 0) {
		return 0, false
	}
	ns := len(p.m.W.Services)
	// The candidate units: the GPUs that hold or load sv, per server; a class of idle ones
	// holds sv in all its GPUs or in none (classes split by the chain's residency).
	cands := is.cand2[:0]
	byEnd := is.byEnd != nil && !p.allHolders
	switch {
	case byEnd:
		// The idle holders here, the busy ones best-first below (evalBusy).
		hm := is.holdM[sv*len(is.srvDevs):]
		for b := is.hold[sv]; b != 0; b &= b - 1 {
			s := bits.TrailingZeros64(b)
			if m := hm[s] & is.idleM[s]; m != 0 {
				cands = p.unitsOf(cands, s, m, src)
			}
		}
	case is.hold != nil:
		hm := is.holdM[sv*len(is.srvDevs):]
		for b := is.hold[sv]; b != 0; b &= b - 1 {
			s := bits.TrailingZeros64(b)
			cands = p.unitsOf(cands, s, hm[s], src)
		}
	default:
		for s := range is.srvDevs {
			if m := is.resM[s*ns+sv] | is.ldM[s*ns+sv]; m != 0 {
				cands = p.unitsOf(cands, s, m, src)
			}
		}
	}
	// Kept, the layer reads +Inf for every unit but the candidates, whose finishes evalUnits
	// writes.
	inf := math.Inf(1)
	nu := len(is.units)
	copy(h[:nu], is.infs)
	bv, bi := math.Inf(1), -1
	if len(cands) > 0 {
		bv, bi = p.evalUnits(now, lc, k, src, sm, s1, s2, h, cands, bv, bi, last, slack)
	}
	// The least input time of any unit: rmin at layer 0, the previous layer's least finish
	// after (bestPred adds transfers ≥ 0 to it).
	rlo := math.Inf(-1)
	switch {
	case k == 0:
		rlo = min(lc.rSelf, lc.rNear, lc.rFar)
	case s1 >= 0:
		rlo = sm[s1].v1
	}
	if byEnd {
		bv, bi, cands = p.evalBusy(now, lc, k, src, sm, s1, s2, h, cands, bv, bi, last, slack, rlo)
	}
	is.cand2 = cands
	if len(cands) == 0 {
		return 0, false
	}
	// The bound of every other unit, with the least load lo.
	beats := func(lo float64) bool {
		lb := lc.fnow + lo
		switch {
		case k == 0:
			lb = max(lb, rlo)
		case s1 >= 0:
			x := rlo
			if lc.chargeLoad {
				x += lo
			}
			lb = max(lb, x)
		}
		lb += lc.lat
		return bi >= 0 && !math.IsInf(bv, 1) && (last && lb > bv || !last && lb > bv+slack)
	}
	if !beats(min(lc.warmUs, lc.coldUs)) {
		if !beats(lc.coldUs) {
			return 0, false
		}
		// The units missing sv on the servers whose host cache holds it; those left load it
		// from disk. bv only falls, so the disk-load bound still beats it.
		n0 := len(cands)
		if p.hostM != nil {
			// The servers whose cache holds sv, as the loop below finds them.
			for b := p.hostM[sv]; b != 0; b &= b - 1 {
				s := bits.TrailingZeros64(b)
				all := ^uint64(0) >> (64 - len(is.srvDevs[s]))
				var h uint64
				if is.holdM != nil {
					h = is.holdM[sv*len(is.srvDevs)+s]
				} else {
					h = is.resM[s*ns+sv] | is.ldM[s*ns+sv]
				}
				if m := all &^ h; m != 0 {
					cands = p.unitsOf(cands, s, m, src)
				}
			}
		} else {
			for s, gs := range is.srvDevs {
				if p.hostC[s][sv] {
					all := ^uint64(0) >> (64 - len(gs))
					if m := all &^ (is.resM[s*ns+sv] | is.ldM[s*ns+sv]); m != 0 {
						cands = p.unitsOf(cands, s, m, src)
					}
				}
			}
		}
		is.cand2 = cands
		for i := nu; i < len(is.units); i++ {
			h[i] = inf // the classes found here
		}
		bv, bi = p.evalUnits(now, lc, k, src, sm, s1, s2, h, cands[n0:], bv, bi, last, slack)
	}
	is.cand, is.cand2 = is.cand2, is.cand
	return bi, true
}

// unitsOf appends to cands the units of server s's GPUs in mask m (over srvDevs[s]) that are
// up: each busy GPU's, the source's if idle, and each idle class that meets m (a class lies in
// m or out of it wherever m is a residency or load mask of a chain service, or its complement).
func (p *Policy) unitsOf(cands []int, s int, m uint64, src int) []int {
	is := &p.idle
	gs, im := is.srvDevs[s], is.idleM[s]
	for b := m &^ im; b != 0; b &= b - 1 {
		if d := gs[bits.TrailingZeros64(b)]; p.down[d] == 0 {
			cands = append(cands, is.busyAt[d])
		}
	}
	hm := m & im
	if is.srcU >= 0 && p.m.GPUServer[src] == s {
		if bit := uint64(1) << is.local[src]; hm&bit != 0 {
			cands = append(cands, is.srcU)
			hm &^= bit
		}
	}
	if hm != 0 {
		p.classesOf(s)
		for i := is.srvLo[s]; i < is.srvHi[s]; i++ {
			if is.units[i].mask&hm != 0 {
				cands = append(cands, i)
			}
		}
	}
	return cands
}

// evalUnits evaluates units us[cs] of layer k into h as evalLayer does (devStart from the
// hotDev, then the walks that can matter, the least bound first), from the least finish bv of
// unit bi found so far (-1: none), and returns the least finish and its unit.
func (p *Policy) evalUnits(now dataplane.Time, lc *layerConst, k, src int, sm []srvBest, s1, s2 int, h []float64, cs []int, bv float64, bi int, last bool, slack float64) (float64, int) {
	is := &p.idle
	us := is.units
	var prev []float64
	if k > 0 {
		prev = is.hu[(k-1)*is.stride : k*is.stride]
	}
	hot, resM, hostC, gsrv := is.hot, is.resM, p.hostC, p.m.GPUServer
	ns, sv := len(p.m.W.Services), lc.sv
	fnow, lat := lc.fnow, lc.lat
	res64 := ns <= 64
	cn, cx := is.cn[k], is.cx[k]
	wait := is.wait[:0]
	for _, i := range cs {
		u := &us[i]
		d := u.dev
		var r float64
		if k == 0 {
			r = lc.first(d, src, gsrv)
		} else {
			r, _ = predOf(d, u.srv, prev[i], sm, s1, s2, cn, cx)
		}
		hd := &hot[d]
		var sr, t float64
		switch {
		case res64 && hd.res>>(uint(sv)&63)&1 != 0 || !res64 && resM[u.srv*ns+sv]>>hd.local&1 != 0:
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
		v := t + lat
		h[i] = v
		if u.mask == 0 && hd.walk {
			w := walk{i: i, r: r, sr: sr, t: t}
			if len(wait) > 0 && v < h[wait[0].i] {
				wait = append(wait, wait[0])
				wait[0] = w
			} else {
				wait = append(wait, w)
			}
		} else if bi < 0 || lessVA(v, d, bv, us[bi].dev) {
			bv, bi = v, i
		}
	}
	for _, w := range wait {
		d := us[w.i].dev
		if bi >= 0 {
			if last && !lessVA(h[w.i], d, bv, us[bi].dev) || !last && h[w.i] > bv+slack {
				continue
			}
		}
		if pl := p.plan(now, d); len(pl) > 0 {
			h[w.i] = availScan(now, pl, &p.devs[d], lc.s, p.latTab[sv], true, sv, lc.items, w.r, w.sr, w.t, lat)
		}
		if bi < 0 || lessVA(h[w.i], d, bv, us[bi].dev) {
			bv, bi = h[w.i], w.i
		}
	}
	is.wait = wait
	return bv, bi
}

// evalBusy evaluates the busy holders of layer k's service (GPUs up that hold or load it)
// into h as evalUnits does, appending their units to cands, from the least finish bv of unit
// bi found so far (-1: none), and returns the least finish, its unit and cands. It visits the
// busy GPUs in idleSet.byEnd's order, walking a plan at once where it can matter, and stops at
// the first GPU whose bound cannot: every GPU from there on is skipped, its finish left +Inf.
//
// A holder's finish is at least max(now, its input, the end of its running batch) + the
// task's latency (devStart; the walk only delays it, ExpLat not falling with the batch,
// latUp), and its input at least rlo (evalSparse). That bound grows with the running batch's
// end (endKey), in whose order byEnd lists the GPUs: once it exceeds the least finish (last
// layer) or it + slack (an earlier one), no later GPU can be the least finish or anyone's
// predecessor (evalSparse's argument for the units it does not evaluate), and bv only falls.
// The choices are those of the evaluation of every holder, ties to the lowest GPU included
// (TestSparseCutMatchesAll). On the scale benchmark's 128 GPUs ~60% of the holders a layer
// evaluated are skipped so.
func (p *Policy) evalBusy(now dataplane.Time, lc *layerConst, k, src int, sm []srvBest, s1, s2 int, h []float64, cands []int, bv float64, bi int, last bool, slack, rlo float64) (float64, int, []int) {
	is := &p.idle
	us, hot, down := is.units, is.hot, p.down
	var prev []float64
	cn, cx := is.cn[k], is.cx[k]
	if k > 0 {
		prev = is.hu[(k-1)*is.stride : k*is.stride]
		if !(cn >= 0 && cx >= 0) {
			rlo = math.Inf(-1) // a negative transfer: no bound from the previous layer
		}
	}
	sv, fnow, lat := lc.sv, lc.fnow, lc.lat
	lo := max(fnow, rlo)
	bdev := -1
	if bi >= 0 {
		bdev = us[bi].dev
	}
	be, has, sb := is.byEnd, is.beHas[:len(is.byEnd)], uint(sv)&63
	for j := 0; j < len(be); j++ {
		// The next holder, in a loop over beHas alone (the GPUs between are most of those
		// visited).
		for j < len(has) && has[j]>>sb&1 == 0 {
			j++
		}
		if j == len(be) {
			break
		}
		d := int(be[j])
		hd := &hot[d]
		if bi >= 0 {
			lb := lo
			if hd.running {
				lb = max(lb, hd.runEnd)
			}
			lb += lat
			if last && lb > bv || !last && lb > bv+slack {
				is.cuts++
				break
			}
		}
		if down[d] != 0 {
			continue
		}
		res := hd.res>>sb&1 != 0
		i := is.busyAt[d]
		cands = append(cands, i)
		var r float64
		if k == 0 {
			r = lc.first(d, src, p.m.GPUServer)
		} else {
			r, _ = predOf(d, us[i].srv, prev[i], sm, s1, s2, cn, cx)
		}
		// devStart, as evalUnits computes it.
		var sr, t float64
		if res {
			sr, t = fnow, max(fnow, r)
		} else {
			sr = hd.loadETA
			t = max(fnow, r, sr)
		}
		if hd.running {
			t = max(t, hd.runEnd)
		}
		v := t + lat
		if hd.walk && (bi < 0 || last && lessVA(v, d, bv, bdev) || !last && !(v > bv+slack)) {
			if pl := p.plan(now, d); len(pl) > 0 {
				v = availScan(now, pl, &p.devs[d], lc.s, p.latTab[sv], true, sv, lc.items, r, sr, t, lat)
			}
		}
		h[i] = v
		if bi < 0 || lessVA(v, d, bv, bdev) {
			bv, bi, bdev = v, i, d
		}
	}
	return bv, bi, cands
}

// endKey is the key of a busy GPU in idleSet.byEnd: the end of its running batch, or -Inf.
func endKey(h *hotDev) float64 {
	if h.running {
		return h.runEnd
	}
	return math.Inf(-1)
}

// byEndAt is the place of GPU d with key k in byEnd (k stands for d's own key, which may be
// stale in hot while syncIdle moves d).
func (is *idleSet) byEndAt(d int, k float64) int {
	lo, hi := 0, len(is.byEnd)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		e := int(is.byEnd[m])
		ke := k
		if e != d {
			ke = endKey(&is.hot[e])
		}
		if lessVA(ke, e, k, d) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// byEndDel removes GPU d, listed with key k, from byEnd.
func (is *idleSet) byEndDel(d int, k float64) {
	j := is.byEndAt(d, k)
	n := len(is.byEnd) - 1
	copy(is.byEnd[j:], is.byEnd[j+1:])
	copy(is.beHas[j:n], is.beHas[j+1:n+1])
	is.byEnd = is.byEnd[:n]
}

// byEndAdd inserts GPU d with key k and services has (hasOf) into byEnd.
func (is *idleSet) byEndAdd(d int, k float64, has uint64) {
	j := is.byEndAt(d, k)
	n := len(is.byEnd)
	is.byEnd = append(is.byEnd, 0)
	copy(is.byEnd[j+1:], is.byEnd[j:])
	copy(is.beHas[j+1:n+1], is.beHas[j:n])
	is.byEnd[j], is.beHas[j] = int32(d), has
}

// hasOf is the services a GPU holds or loads (bit sv), where there are at most 64.
func hasOf(h *hotDev) uint64 {
	m := h.res
	if h.loading >= 0 {
		m |= 1 << (uint(h.loading) & 63)
	}
	return m
}
