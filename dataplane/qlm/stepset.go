package qlm

import (
	"math/bits"
	"slices"

	"github.com/plan-dev/plan/dataplane"
)

// Which instances an event steps (issue 15 item 4: a simulator whose cost per event does not
// grow with the number of instances). Handle used to step every instance after every event.
// Two kinds of instance provably do nothing when stepped, and are skipped:
//
//   - inert: busy, loading or down. step returns at once. Only events on the instance's own
//     worker (EvBatchDone, EvModelLoaded, EvWorkerUp/Down) end that, and they touch it.
//   - quiet: idle with nothing running or swapped and an empty (virtual) queue, as its last
//     step left it. Stepping it again runs head, which for QLM pulls and splits over every
//     instance's groups (QLM §5 request pulling; qlmQueue.pull/split): O(N) per instance,
//     O(N²) per event. While no group with waiting members exists anywhere (stepQueue.othersWaiting
//     is false) pull and split find nothing, and the step is the same no-op as the last one
//     (no decision, and drain/headChanged are already false). A push onto the instance's own
//     queue touches it.
//
// The loop visits the remaining instances in index order, re-reading the sets before each
// one, so a step that changes what a later instance sees (a pull, a split, an eviction
// re-queue) is seen as in the full pass. Policy.fullStep forces the full pass (the
// equivalence test, TestFastStepMatchesFull).

// stepQueue is what a queue tells the fast path. Queues that do not implement it (Shepherd's,
// whose head forms batches by the clock) are stepped in full.
type stepQueue interface {
	// empty: nothing waits in in's own queue.
	empty(in *instance) bool
	// othersWaiting: a step of a quiet instance may take work queued elsewhere.
	othersWaiting(p *Policy) bool
}

// stepSet is two bitsets over the instances.
type stepSet struct {
	inert, quiet []uint64
}

func (p *Policy) initStepSet() {
	n := (len(p.inst) + 63) / 64
	p.ss = stepSet{inert: make([]uint64, n), quiet: make([]uint64, n)}
}

// touch makes the next pass step instance i (after an event changed it: its residual too).
func (p *Policy) touch(i int) {
	if i < 0 || i/64 >= len(p.ss.inert) {
		return
	}
	p.inst[i].resEpoch = 0
	b := ^(uint64(1) << (i % 64))
	p.ss.inert[i/64] &= b
	p.ss.quiet[i/64] &= b
}

// touchAll makes the next pass step every instance.
func (p *Policy) touchAll() {
	for _, in := range p.inst {
		in.resEpoch = 0
	}
	clear(p.ss.inert)
	clear(p.ss.quiet)
}

// classify records, after in's step, whether stepping it again would be a no-op.
func (p *Policy) classify(in *instance, sq stepQueue) {
	w, b := in.idx/64, uint64(1)<<(in.idx%64)
	p.ss.inert[w] &^= b
	p.ss.quiet[w] &^= b
	switch {
	case in.busy || in.loading || in.down:
		p.ss.inert[w] |= b
	case len(in.running) == 0 && len(in.swapped) == 0 && sq.empty(in):
		p.ss.quiet[w] |= b
	}
}

// nextStep is the first instance at index ≥ from that the pass must step, or -1.
func (p *Policy) nextStep(from int, sq stepQueue) int {
	skipQuiet := !sq.othersWaiting(p)
	for w := from / 64; w < len(p.ss.inert); w++ {
		m := ^p.ss.inert[w]
		if skipQuiet {
			m &^= p.ss.quiet[w]
		}
		if w == from/64 {
			m &^= uint64(1)<<(from%64) - 1
		}
		if m != 0 {
			i := w*64 + bits.TrailingZeros64(m)
			if i >= len(p.inst) {
				return -1
			}
			return i
		}
	}
	return -1
}

// stepAll steps the instances after an event: the full pass, or the fast path's.
func (p *Policy) stepAll(now dataplane.Time, out *dataplane.Decisions) {
	sq, ok := p.q.(stepQueue)
	if p.fullStep || !ok || len(p.ss.inert) == 0 {
		for _, in := range p.inst {
			p.step(now, in, out)
		}
		return
	}
	// same holds quiet instances whose step in this pass found nothing to pull or split while
	// groups waited elsewhere, with only such no-op steps since (no state changed). A quiet
	// instance reads only its GPU's profiles, its model and its warm cache in pull and split
	// (its queue, running batch and swapped set are empty, and with no observed external load
	// externalSeconds is 0), so another quiet instance with the same ones finds nothing too.
	// At 128 instances, groups of one model wait behind busy instances while the idle ones of
	// the other model judge them not worth a model swap (QLM §5): every event re-ran those
	// pulls on every idle instance.
	same := p.sameBuf[:0]
	for i := p.nextStep(0, sq); i >= 0; i = p.nextStep(i+1, sq) {
		in := p.inst[i]
		w, b := i/64, uint64(1)<<(i%64)
		wasQuiet := p.ss.quiet[w]&b != 0 && in.observed <= 0
		if wasQuiet && sameQuiet(same, in) {
			continue
		}
		// A step changes only its own instance's running batch, model and profiled throughput.
		in.resEpoch = 0
		p.step(now, in, out)
		in.resEpoch = 0
		p.classify(in, sq)
		switch {
		case !wasQuiet || p.ss.quiet[w]&b == 0:
			// The step may have changed what others see.
			same = same[:0]
		case len(same) < 8:
			same = append(same, in)
		}
	}
	p.sameBuf = same[:0]
}

// sameQuiet: a quiet instance of same has in's GPU, model and warm cache.
func sameQuiet(same []*instance, in *instance) bool {
	for _, x := range same {
		if x.gpu == in.gpu && x.model == in.model && slices.Equal(x.warm, in.warm) {
			return true
		}
	}
	return false
}
