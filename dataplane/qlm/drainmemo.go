package qlm

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/plan-dev/plan/dataplane"
)

// The placement of a new request group (qlmQueue.place, QLM §7 [ours]: least estimated
// drain) reads, for every instance able to host the group's model, the drain time of its
// whole virtual queue (Eq. 2 drain times plus model swaps, after its residual work R_g) and
// the model that queue ends with. At 128 instances that was a pass over 128 instance
// records, their queues and their profile lists for every arrival that opens a group: the
// largest cost per event that grew with N. Between two arrivals only the instances that an
// event or a step changed have a new value (about 22 of 128 in BenchmarkSimScale), so place
// keeps each instance's value in compact arrays indexed by instance, and recomputes only
// the entries forgotten since.

// drainMemo are the kept values: per instance the drain t of its whole virtual queue and
// its tail model (valid while its bit in ok is set), and the model swap for swapModel (valid
// while its bit in swapOK is set). ids caches the instance indices of the lists place scans.
// The drains are an array of their own: place reads the tail only of an instance whose
// drain beats the best so far.
type drainMemo struct {
	ok, swapOK []uint64
	t          []float64
	tail       []string
	swap       []swapEntry
	ids        []placeIDs
	// last is the time of the last placement, gap the mean time between placements
	// (decayed); eager tells whether a drain computed now would likely be read by one.
	last, gap dataplane.Time
}

// placed records a placement at now.
func (m *drainMemo) placed(now dataplane.Time) {
	if m.last > 0 {
		m.gap += (now - m.last - m.gap) / 8
	}
	m.last = now
}

// eager reports whether an instance whose drain stays as it is until until should have
// it computed now, while the caller holds its state in cache (stepAll, after its step): when
// a placement is due before then. Otherwise place recomputes it if it reads it (at 8 instances
// in BenchmarkSimScale an instance steps about twice between placements, at 128 once in
// six).
func (m *drainMemo) eager(now, until dataplane.Time) bool {
	return until-now >= m.gap
}

type swapEntry struct {
	model string
	s     float64
}

// placeIDs are the instance indices of one eligible list, named by the address of its
// first element (eligible and routed keep their lists until setDown drops them, and this).
// mask has the bit of each (nil unless the list is in index order, as eligible makes it).
type placeIDs struct {
	first **instance
	ids   []int32
	mask  []uint64
}

func (m *drainMemo) init(n int) {
	w := (n + 63) / 64
	*m = drainMemo{ok: make([]uint64, w), swapOK: make([]uint64, w), t: make([]float64, n), tail: make([]string, n), swap: make([]swapEntry, n)}
}

// forgetDrain drops instance i's kept drain. Every change to what qlmQueue.drain reads of
// the instance goes through it: the residual's inputs (with instance.resOK: touch, touchAll,
// the instance's own step, instanceDown) and the instance's virtual queue or its groups'
// members (add, pop, requeue, withdraw and evacuate on the queue's own instance, pull and
// split on both the source and the pulling instance, replan).
func (p *Policy) forgetDrain(i int) {
	if i >= 0 && i/64 < len(p.dm.ok) {
		b := ^(uint64(1) << (i % 64))
		p.dm.ok[i/64] &= b
		p.dm.swapOK[i/64] &= b
	}
}

// forgetDrains drops every instance's kept drain.
func (p *Policy) forgetDrains() {
	clear(p.dm.ok)
	clear(p.dm.swapOK)
}

// placeIDs is the instance indices of el, an eligible or routed list, and their mask when
// the list is in index order (kept while memoOn).
func (p *Policy) placeIDs(el []*instance) ([]int32, []uint64) {
	if p.memoOn && len(el) > 0 {
		for _, c := range p.dm.ids {
			if c.first == &el[0] && len(c.ids) == len(el) {
				return c.ids, c.mask
			}
		}
	}
	ids := make([]int32, len(el))
	mask := make([]uint64, len(p.dm.ok))
	for k, in := range el {
		ids[k] = int32(in.ID)
		if mask != nil && (k > 0 && in.ID <= el[k-1].ID || in.ID < 0 || in.ID/64 >= len(mask)) {
			mask = nil
		}
		if mask != nil {
			mask[in.ID/64] |= 1 << (in.ID % 64)
		}
	}
	if p.memoOn && len(el) > 0 {
		if len(p.dm.ids) >= 8 {
			p.dm.ids = p.dm.ids[:0]
		}
		p.dm.ids = append(p.dm.ids, placeIDs{&el[0], ids, mask})
	}
	return ids, mask
}

// placeKept is place's pass over the instances of mask (a list in index order) with the
// kept drains: the same candidates in the same order, the list's kept drains read a word of
// the kept bits at a time (at 128 instances the pass over the indices cost about 28
// instructions an instance). best is the list's first instance.
func (q *qlmQueue) placeKept(p *Policy, g *group, mask []uint64, best int) int {
	bt := math.Inf(1)
	okw, ts, tails := p.dm.ok, p.dm.t, p.dm.tail
	for w, lm := range mask {
		kw := okw[w]
		for m := lm; m != 0; m &= m - 1 {
			j := bits.TrailingZeros64(m)
			i := w<<6 | j
			var t float64
			var prev string
			if kw&(1<<j) != 0 {
				// A kept drain at the best so far cannot win (a swap only adds, place).
				if t = ts[i]; t >= bt {
					continue
				}
				prev = tails[i]
			} else if t, prev = q.drainAll(p, i); t >= bt {
				continue
			}
			// The model swap, as in place.
			if prev != "" && g.model != prev {
				t += p.swapKept(i, g.model)
			}
			if t < bt {
				best, bt = i, t
				// As in place: nothing later drains below zero.
				if bt <= 0 && p.drainFloor {
					return best
				}
			}
		}
	}
	return best
}

// drainAll is qlmQueue.drain(p, in, len(its queue)) for instance i and the model its queue
// ends with (the instance's upcoming model when the queue is empty), kept between calls
// inside Handle. Under checkMemo a kept value is checked against a fresh one.
func (q *qlmQueue) drainAll(p *Policy, i int) (float64, string) {
	if p.memoOn && i/64 < len(p.dm.ok) && p.dm.ok[i/64]&(1<<(i%64)) != 0 {
		kt, ktail := p.dm.t[i], p.dm.tail[i]
		if p.checkMemo {
			if t, tail := q.drainTail(p, p.inst[i]); math.Float64bits(t) != math.Float64bits(kt) || tail != ktail {
				panic(fmt.Sprintf("qlm: instance %d: kept drain %v (%q), now %v (%q)", i, kt, ktail, t, tail))
			}
		}
		return kt, ktail
	}
	t, tail := q.drainTail(p, p.inst[i])
	if p.memoOn && i/64 < len(p.dm.ok) {
		p.dm.t[i], p.dm.tail[i] = t, tail
		p.dm.ok[i/64] |= 1 << (i % 64)
	}
	return t, tail
}

// drainTail computes drainAll's pair.
func (q *qlmQueue) drainTail(p *Policy, in *instance) (float64, string) {
	v := q.vq[in.ID]
	if len(v) == 0 {
		// drain of no group: the residual alone.
		return q.residual(p, in), in.upcoming()
	}
	return q.drain(p, in, len(v)), v[len(v)-1].model
}

// swapKept is p.swapSeconds(p.inst[i], model), kept with instance i's drain (its inputs, the
// warm cache and the loaded model, change only in the instance's own step or instanceDown,
// which forget it).
func (p *Policy) swapKept(i int, model string) float64 {
	w, b := i/64, uint64(1)<<(i%64)
	if !p.memoOn || w >= len(p.dm.ok) || p.dm.ok[w]&b == 0 {
		return p.swapSeconds(p.inst[i], model)
	}
	e := &p.dm.swap[i]
	if p.dm.swapOK[w]&b != 0 && e.model == model {
		if p.checkMemo {
			if s := p.swapSeconds(p.inst[i], model); math.Float64bits(s) != math.Float64bits(e.s) {
				panic(fmt.Sprintf("qlm: instance %d: kept swap to %s %v, now %v", i, model, e.s, s))
			}
		}
		return e.s
	}
	s := p.swapSeconds(p.inst[i], model)
	*e = swapEntry{model, s}
	p.dm.swapOK[w] |= b
	return s
}

// nonNegDrains reports whether every drain place compares is at least zero: the residual
// (tokens of at least 1 each ÷ Θ, plus external work, itself ≥ 0 at a mean output ≥ 0), the
// model swaps (≥ 1 µs, newLM) and the groups' Eq. 2 drains (members × μ ÷ Θ) are then ≥ 0 (or
// NaN, which never wins). It holds when every class's mean output is ≥ 0 and every
// profile's Θ > 0 (a profiled-over-time Θ is tokens ÷ seconds, both ≥ 0).
func (p *Policy) nonNegDrains() bool {
	for _, c := range p.class {
		if !(c.Out.Mean >= 0) {
			return false
		}
	}
	for _, m := range p.models {
		if !(m.thetaTokPerSec > 0) {
			return false
		}
	}
	return true
}
