package pard

import (
	"math"
	"sort"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/internal/base/quantile"
)

// tick is the state planner (PARD §4.2–§4.3): publish q, T_in, μ, ε and the mode, draw the
// downstream wait sums, refresh L_sub, budgets, throttles and the worker count.
func (p *Pipeline) tick(now dataplane.Time) {
	p.tickCount++
	for ai := range p.apps {
		a := &p.apps[ai]
		for _, s := range a.mods {
			p.tickModule(now, &p.mods[s])
		}
		if p.autoscale {
			p.scale(now, a)
			for _, s := range a.mods {
				p.reindex(&p.mods[s], now)
			}
		}
		p.sample(a)
		if p.variant.rule == ruleWCL {
			p.wclBudgets(a)
		}
		if p.variant.rule == ruleOC {
			for _, s := range a.mods {
				p.mods[s].throttle = false
			}
			for _, s := range a.mods {
				m := &p.mods[s]
				if m.q1 > p.ocT {
					m.throttle = true
					for _, x := range m.ances {
						p.mods[x].throttle = true
					}
				}
			}
		}
	}
}

func (p *Pipeline) tickModule(now dataplane.Time, m *pardModule) {
	// Windowed queueing delay, linearly weighted (PARD §4.2, footnote 4): weight 1 −
	// age/window.
	var ws, wc, s1, c1 float64
	cur := int64(now / (100 * dataplane.Millisecond))
	for i := range m.qb {
		b := &m.qb[i]
		if b.n < 0 {
			continue
		}
		mid := dataplane.Time(b.n)*100*dataplane.Millisecond + 50*dataplane.Millisecond
		age := now - mid
		if age < 0 {
			age = 0
		}
		if age >= p.window {
			continue
		}
		wt := 1 - float64(age)/float64(p.window)
		ws += wt * b.sum
		wc += wt * b.cnt
		if cur-b.n < 10 {
			s1 += b.sum
			c1 += b.cnt
		}
	}
	m.q, m.q1 = 0, 0
	if wc > 0 {
		m.q = dataplane.Time(ws / wc)
	}
	if c1 > 0 {
		m.q1 = dataplane.Time(s1 / c1)
	}
	// Input rate in sync-sized buckets, its moving mean and ε.
	tin := float64(m.inCur) / (float64(p.sync) / float64(dataplane.Second))
	m.inCur = 0
	m.tin[m.rpos] = tin
	var sm, mu float64
	k := min(p.smoothN, m.rn+1)
	for i := 0; i < k; i++ {
		sm += m.tin[(m.rpos-i+len(m.tin)*2)%len(m.tin)]
	}
	m.ts[m.rpos] = sm / float64(k)
	k = min(p.muN, m.rn+1)
	for i := 0; i < k; i++ {
		mu += m.tin[(m.rpos-i+len(m.tin)*2)%len(m.tin)]
	}
	mu /= float64(k)
	m.rpos = (m.rpos + 1) % len(m.tin)
	if m.rn < len(m.tin) {
		m.rn++
	}
	var dev, tot float64
	for i := 0; i < m.rn; i++ {
		dev += math.Abs(m.tin[i] - m.ts[i])
		tot += m.tin[i]
	}
	m.eps = 0
	if tot > 0 {
		m.eps = dev / tot
	}
	if p.fixedEps >= 0 {
		m.eps = p.fixedEps
	}
	// Load factor μ = T_in / Σ_workers b/d(b).
	var cap float64
	for _, w := range m.workers {
		if p.workers[w].activeAt <= now && !p.workers[w].down {
			cap += float64(m.batch) / (float64(m.d) / float64(dataplane.Second))
		}
	}
	m.mu = math.Inf(1)
	if cap > 0 {
		m.mu = mu / cap
	} else if mu == 0 {
		m.mu = 0
	}
	switch {
	case m.mu > 1+m.eps:
		m.hbf = true
	case m.mu < 1-m.eps:
		m.hbf = false
	}
	if p.variant.rule == ruleWCL {
		copy(m.wclHist[1:], m.wclHist[:len(m.wclHist)-1])
		m.wclHist[0] = m.wclCur
		m.wclCur = nil
	}
}

// sample draws the downstream batch-wait sums and publishes L_sub for every module of a
// (PARD §4.2; the paper only says "random sampling of recent arrivals", so the sampler is
// ours): sample m of a path is Σ u_i·d_i with u_i drawn independently
// from module i's ring of normalized waits (U[0,1] while the ring holds < 100 entries).
// One draw per module and sample is shared by every path, so the cost is O(M·N) plus one
// selection per path instead of O(M·N²).
func (p *Pipeline) sample(a *pardApp) {
	need := p.variant.rule == ruleEq3 && p.variant.lsub == lsubFull && p.variant.w == wQuantile && p.lambda > 0 && p.lambda < 1
	if need {
		for mi := 0; mi < p.samples; mi++ {
			for _, s := range a.mods {
				m := &p.mods[s]
				var u float64
				if m.uN < 100 {
					u = p.rng.Float64()
				} else {
					u = float64(m.u[p.rng.IntN(m.uN)])
				}
				a.draw[s] = u * float64(m.d)
			}
			for _, s := range a.mods {
				m := &p.mods[s]
				for pi := range m.paths {
					pp := &m.paths[pi]
					var sum float64
					for _, x := range pp.mods {
						sum += a.draw[x]
					}
					pp.samps[mi] = sum
				}
			}
		}
	}
	for _, s := range a.mods {
		m := &p.mods[s]
		m.lsub, m.w = 0, 0
		for pi := range m.paths {
			pp := &m.paths[pi]
			var l, w dataplane.Time
			switch p.variant.lsub {
			case lsubBack:
				l = 0
			case lsubSF:
				l = pp.sumD
			default:
				for _, x := range pp.mods {
					l += p.mods[x].q + p.mods[x].d
				}
				if p.hopInLsub {
					l += pp.hops
				}
				switch {
				case len(pp.mods) == 0:
					w = 0
				case p.variant.w == wLower || p.lambda <= 0:
					w = 0
				case p.variant.w == wUpper || p.lambda >= 1:
					w = pp.sumD
				default:
					w = dataplane.Time(Quantile(pp.samps[:p.samples], p.lambda))
				}
				l += w
			}
			m.lsub = max(m.lsub, l)
			m.w = max(m.w, w)
		}
	}
}

// wclBudgets reallocates budgets ∝ the p99 of Q+W+D over the window (pard-wcl).
func (p *Pipeline) wclBudgets(a *pardApp) {
	var tmp []dataplane.Time
	for _, s := range a.mods {
		m := &p.mods[s]
		tmp = tmp[:0]
		for _, h := range m.wclHist {
			tmp = append(tmp, h...)
		}
		if len(tmp) == 0 {
			m.wcl = 2 * m.d
			continue
		}
		sort.Slice(tmp, func(i, j int) bool { return tmp[i] < tmp[j] })
		m.wcl = tmp[quantile.NearestRankIndex(len(tmp), 99)]
	}
	// Largest Σ WCL over source→sink paths through each module.
	pre := map[dataplane.StageID]dataplane.Time{}
	for _, s := range a.mods {
		var best dataplane.Time
		for pi := range p.mods {
			for _, n := range p.dep.Stages[pi].Next {
				if n == s && p.mods[pi].used {
					best = max(best, pre[dataplane.StageID(pi)])
				}
			}
		}
		pre[s] = best + p.mods[s].wcl
	}
	for i := len(a.mods) - 1; i >= 0; i-- {
		s := a.mods[i]
		m := &p.mods[s]
		var down dataplane.Time
		for _, pp := range m.paths {
			var x dataplane.Time
			for _, y := range pp.mods {
				x += p.mods[y].wcl
			}
			down = max(down, x)
		}
		tot := pre[s] + down
		m.budget = dataplane.Time(float64(m.slo) * float64(m.wcl) / float64(max(tot, 1)))
	}
}

// scale is the rate-based autoscaler (Nexus/InferLine style, as PARD §5.1 uses): provision
// every module for the application's input rate averaged over scale_window_s, keep capacity
// for the highest such rate of the last scale_down_s, and let new workers serve only after the
// cold start.
func (p *Pipeline) scale(now dataplane.Time, a *pardApp) {
	n := len(a.ingress)
	a.ingress[int(p.tickCount)%n] = a.inCur
	a.inCur = 0
	var sum int64
	k := min(int(p.tickCount), p.scaleWin)
	for i := 0; i < k; i++ {
		sum += a.ingress[(int(p.tickCount)-i+n)%n]
	}
	rate := 0.0
	if k > 0 {
		rate = float64(sum) / (float64(k) * float64(p.sync) / float64(dataplane.Second))
	}
	rn := len(a.rate5)
	a.rate5[int(p.tickCount)%rn] = rate
	peak := rate
	for i := 0; i < min(int(p.tickCount), rn); i++ {
		peak = max(peak, a.rate5[i])
	}
	for _, s := range a.mods {
		m := &p.mods[s]
		per := float64(m.batch) / (float64(m.d) / float64(dataplane.Second))
		r := peak
		if p.scaleByMod {
			r = p.moduleRate(m)
		}
		want := int(math.Ceil(r * p.headroom / per))
		want = min(max(want, 1), len(m.workers))
		// A failed worker is no capacity: the scaler provisions a spare in its place.
		have := 0
		for _, w := range m.workers {
			if pw := &p.workers[w]; pw.activeAt != dataplane.Never && !pw.down {
				have++
			}
		}
		switch {
		case want > have:
			for _, w := range m.workers {
				if have == want {
					break
				}
				if pw := &p.workers[w]; pw.activeAt == dataplane.Never && !pw.down {
					pw.activeAt = now + p.coldStart
					have++
				}
			}
		case want < have:
			// Retire the last provisioned workers first (pending ones before serving
			// ones); a retired worker drains what it already queued.
			for i := len(m.workers) - 1; i >= 0 && have > want; i-- {
				if pw := &p.workers[m.workers[i]]; pw.activeAt > now && pw.activeAt != dataplane.Never && !pw.down {
					pw.activeAt = dataplane.Never
					have--
				}
			}
			for i := len(m.workers) - 1; i >= 0 && have > want; i-- {
				if pw := &p.workers[m.workers[i]]; pw.activeAt != dataplane.Never && !pw.down {
					pw.activeAt = dataplane.Never
					have--
				}
			}
		}
	}
}

// moduleRate is the module's own input rate as a per-module autoscaler sees it: the mean
// T_in over scale_window_s, and for scaling down the highest such mean of the last
// scale_down_s (bounded by the ε window the module keeps). Upstream drops and upstream
// capacity shape it, so downstream modules scale up only after upstream ones did, which
// is how bursts reach later modules of a real pipeline while they are still cold.
func (p *Pipeline) moduleRate(m *pardModule) float64 {
	n := len(m.tin)
	avg := func(end int) float64 { // mean of the scaleWin buckets ending end buckets ago
		var s float64
		k := 0
		for i := end; i < end+p.scaleWin && i < m.rn; i++ {
			s += m.tin[(m.rpos-1-i+2*n)%n]
			k++
		}
		if k == 0 {
			return 0
		}
		return s / float64(k)
	}
	peak := avg(0)
	for end := 1; end+p.scaleWin <= min(m.rn, p.scaleDown+p.scaleWin); end++ {
		peak = max(peak, avg(end))
	}
	return peak
}

// ModuleState is a read-only snapshot of one module's state planner (for reports and tests).
type ModuleState struct {
	Stage dataplane.StageID
	// Q is the windowed queueing delay, W the batch-wait quantile and Lsub the published
	// downstream estimate (max over paths).
	Q, W, Lsub dataplane.Time
	// Mu is the load factor, Eps the hysteresis half-width, HBF the current mode.
	Mu, Eps float64
	HBF     bool
	// Active is the number of workers serving now; Provisioned includes cold ones (a failed
	// worker counts in neither).
	Active, Provisioned int
	// Budget is the per-module budget of the split/WCL/Clipper++ rules.
	Budget dataplane.Time
}

// State returns the state planner's snapshot of every pipeline module at time now.
func (p *Pipeline) State(now dataplane.Time) []ModuleState {
	var out []ModuleState
	for _, a := range p.apps {
		for _, s := range a.mods {
			m := &p.mods[s]
			ms := ModuleState{Stage: s, Q: m.q, W: m.w, Lsub: m.lsub, Mu: m.mu, Eps: m.eps, HBF: m.hbf, Budget: m.budget}
			for _, w := range m.workers {
				if at := p.workers[w].activeAt; at != dataplane.Never && !p.workers[w].down {
					ms.Provisioned++
					if at <= now {
						ms.Active++
					}
				}
			}
			out = append(out, ms)
		}
	}
	return out
}

// Quantile returns F⁻¹(λ) of the empirical distribution of xs: the smallest x with
// F(x) ≥ λ. It reorders xs (quickselect, O(n) expected, deterministic pivots).
func Quantile(xs []float64, lambda float64) float64 {
	n := len(xs)
	if n == 0 {
		return 0
	}
	k := int(math.Ceil(lambda*float64(n))) - 1
	k = min(max(k, 0), n-1)
	lo, hi := 0, n-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		// median of three as pivot
		a, b, c := xs[lo], xs[mid], xs[hi]
		piv := b
		if (a <= b) == (b <= c) {
			piv = b
		} else if (b <= a) == (a <= c) {
			piv = a
		} else {
			piv = c
		}
		i, j := lo, hi
		for i <= j {
			for xs[i] < piv {
				i++
			}
			for xs[j] > piv {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}
