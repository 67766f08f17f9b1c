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
func (p *Policy) evalSparse(now dataplane.Time, lc *layerConst, k, src int, sm []srvBest, s1, s2 int, h []float64, last bool, slack float64) (int, bool) {
	is := &p.idle
	sv := lc.sv
	if !p.latUp[sv] || !last && !(slack >= 0) {
		return 0, false
	}
	first := k == 0
	ns := len(p.m.W.Services)
	us := is.units
	down := p.down
	// The candidate units: the GPUs that hold or load sv, per server; a class of idle ones
	// holds sv in all its GPUs or in none (classes split by the chain's residency).
	cands := is.cand2[:0]
	srcS, srcBit := -1, uint64(0)
	if is.srcU >= 0 {
		srcS, srcBit = p.m.GPUServer[src], uint64(1)<<is.local[src]
	}
	for s, gs := range is.srvDevs {
		m := is.resM[s*ns+sv] | is.ldM[s*ns+sv]
		if m == 0 {
			continue
		}
		im := is.idleM[s]
		for b := m &^ im; b != 0; b &= b - 1 {
			if d := gs[bits.TrailingZeros64(b)]; down[d] == 0 {
				cands = append(cands, is.busyAt[d])
			}
		}
		hm := m & im
		if s == srcS && hm&srcBit != 0 {
			cands = append(cands, is.srcU)
			hm &^= srcBit
		}
		if hm == 0 {
			continue
		}
		for i := is.srvLo[s]; i < is.srvHi[s]; i++ {
			if us[i].mask&hm != 0 {
				cands = append(cands, i)
			}
		}
	}
	is.cand2 = cands
	if len(cands) == 0 {
		return 0, false
	}
	// The candidates as evalLayer evaluates them (devStart from the hotDev, then the walks that
	// can matter, the least bound first).
	var prev []float64
	U := len(us)
	if !first {
		prev = is.hu[(k-1)*U : k*U]
	}
	hot, resM, gsrv := is.hot, is.resM, p.m.GPUServer
	fnow, lat := lc.fnow, lc.lat
	res64 := ns <= 64
	cn, cx := is.cn[k], is.cx[k]
	bv, bi := math.Inf(1), -1
	wait := is.wait[:0]
	for _, i := range cands {
		u := &us[i]
		d := u.dev
		var r float64
		if first {
			r = lc.first(d, src, gsrv)
		} else {
			r, _ = predOf(d, u.srv, prev[i], sm, s1, s2, cn, cx)
		}
		hd := &hot[d]
		var sr, t float64
		if res64 && hd.res>>(uint(sv)&63)&1 != 0 || !res64 && resM[u.srv*ns+sv]>>hd.local&1 != 0 {
			sr, t = fnow, max(fnow, r)
		} else { // loading sv (a candidate)
			sr = hd.loadETA
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
	// The bound of every other unit.
	minLoad := min(lc.warmUs, lc.coldUs)
	lb := fnow + minLoad
	switch {
	case first:
		lb = max(lb, min(lc.rSelf, lc.rNear, lc.rFar))
	case s1 >= 0:
		x := sm[s1].v1
		if lc.chargeLoad {
			x += minLoad
		}
		lb = max(lb, x)
	}
	lb += lat
	if bi < 0 || math.IsInf(bv, 1) || last && !(lb > bv) || !last && !(lb > bv+slack) {
		return 0, false
	}
	// Keep the layer: +Inf for every other unit, the candidates' finishes (h[i] for them is
	// what was written above).
	vals := is.xu[:0]
	for _, i := range cands {
		vals = append(vals, h[i])
	}
	inf := math.Inf(1)
	for i := range h {
		h[i] = inf
	}
	for j, i := range cands {
		h[i] = vals[j]
	}
	is.cand, is.cand2 = is.cand2, is.cand
	return bi, true
}
