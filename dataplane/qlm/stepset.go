package qlm

import (
	"fmt"
	"math/bits"

	"github.com/plan-dev/plan/dataplane"
)

// Which instances an event steps (a simulator whose cost per event does not
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
//
// While groups wait (othersWaiting), a quiet instance's step is pull and split over the
// other instances' queues (QLM §5 request pulling). What they read of the others is the
// virtual queues with their groups, and the state of the instances that hold queued groups
// (residual work R_g, loaded and upcoming model, warm cache, profiled Θ; QLM §6). stepSet.ver
// counts changes to that: every change to a virtual queue or a queued group (qlmQueue calls
// changed), every event on (touch) or step of an instance whose queue is not empty before or
// after, and touchAll (ticks, replans, timers). Between two changes, a quiet instance whose
// step found nothing finds nothing again, and so does every quiet instance of a kind
// (pullMemo: GPU, model, warm cache) whose pull found nothing: they are skipped (idle),
// across events too. At 128 instances most events end an iteration on an instance
// with an empty queue, which changes nothing the idle instances read. Under checkMemo (the
// equivalence test) every skip of an idle instance runs its pull instead and panics if it
// finds a group.

// stepQueue is what a queue tells the fast path. Queues that do not implement it (Shepherd's,
// whose head forms batches by the clock) are stepped in full.
type stepQueue interface {
	// empty: nothing waits in in's own queue.
	empty(in *instance) bool
	// othersWaiting: a step of a quiet instance may take work queued elsewhere.
	othersWaiting(p *Policy) bool
	// findsNothing: the step of quiet instance in is known to take nothing from elsewhere.
	findsNothing(p *Policy, in *instance) bool
}

// stepSet is three bitsets over the instances and the count of changes the idle one holds for.
type stepSet struct {
	inert, quiet []uint64
	// idle: quiet instances whose step is known to find nothing while ver is idleVer.
	idle    []uint64
	ver     uint64
	idleVer uint64
}

func (p *Policy) initStepSet() {
	n := (len(p.inst) + 63) / 64
	p.ss = stepSet{inert: make([]uint64, n), quiet: make([]uint64, n), idle: make([]uint64, n), ver: 1}
	p.dm.init(len(p.inst))
}

// changed records a change to what a quiet instance's step reads (a virtual queue, a queued
// group, or an instance holding queued groups): the idle set is forgotten.
func (p *Policy) changed() { p.ss.ver++ }

// syncIdle forgets the idle set once ver moved on.
func (p *Policy) syncIdle() {
	if p.ss.idleVer != p.ss.ver {
		clear(p.ss.idle)
		p.ss.idleVer = p.ss.ver
	}
}

// touch makes the next pass step instance i (after an event changed it: its kept residual too).
func (p *Policy) touch(i int) {
	if i < 0 || i/64 >= len(p.ss.inert) {
		return
	}
	in := p.inst[i]
	in.resOK = false
	p.forgetDrain(i)
	b := ^(uint64(1) << (i % 64))
	p.ss.inert[i/64] &= b
	p.ss.quiet[i/64] &= b
	p.ss.idle[i/64] &= b
	// Its residual, model or throughput may have changed: others read them while its queue
	// holds groups.
	if sq, ok := p.q.(stepQueue); ok && !sq.empty(in) {
		p.changed()
	}
}

// isQuiet: instance i is quiet (as its last step left it, untouched since).
func (p *Policy) isQuiet(i int) bool {
	return i >= 0 && i/64 < len(p.ss.quiet) && p.ss.quiet[i/64]&(1<<(i%64)) != 0
}

// touchAll makes the next pass step every instance.
func (p *Policy) touchAll() {
	for _, in := range p.inst {
		in.resOK = false
	}
	p.forgetDrains()
	clear(p.ss.inert)
	clear(p.ss.quiet)
	p.changed()
}

// classify records, after in's step, whether stepping it again would be a no-op.
func (p *Policy) classify(in *instance, sq stepQueue) {
	w, b := in.ID/64, uint64(1)<<(in.ID%64)
	p.ss.inert[w] &^= b
	p.ss.quiet[w] &^= b
	p.ss.idle[w] &^= b
	switch {
	case in.Busy() || in.loading || in.down:
		p.ss.inert[w] |= b
	case len(in.Running()) == 0 && len(in.Swapped()) == 0 && sq.empty(in):
		p.ss.quiet[w] |= b
	}
}

// nextStep is the first instance at index ≥ from that the pass must step, or -1. Under
// checkMemo idle instances are visited too (stepAll checks them).
func (p *Policy) nextStep(from int, sq stepQueue) int {
	skipQuiet := !sq.othersWaiting(p)
	p.syncIdle()
	for w := from / 64; w < len(p.ss.inert); w++ {
		m := ^p.ss.inert[w]
		if skipQuiet {
			m &^= p.ss.quiet[w]
		} else if !p.checkMemo {
			m &^= p.ss.quiet[w] & p.ss.idle[w]
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
	qq, _ := sq.(*qlmQueue)
	for i := p.nextStep(0, sq); i >= 0; i = p.nextStep(i+1, sq) {
		w, b := i/64, uint64(1)<<(i%64)
		if p.heldQuiet(now, qq, w, b) {
			// Its step would only hold it (step: the arrival hold), changing nothing:
			// it is held, and idle until the next change, without reading its record (at
			// 128 instances each arrival visits every quiet instance).
			p.held = append(p.held, i)
			p.ss.idle[w] |= b
			continue
		}
		in := p.inst[i]
		// A quiet instance reads only its GPU's profiles, its model and its warm cache in pull
		// and split (its queue, running batch and swapped set are empty, and with no observed
		// external load externalSeconds is 0).
		wasQuiet := p.ss.quiet[w]&b != 0 && in.observed <= 0
		if wasQuiet && (p.ss.idle[w]&b != 0 || sq.findsNothing(p, in)) {
			if p.checkMemo {
				p.checkIdle(in)
			}
			p.ss.idle[w] |= b
			continue
		}
		ver, queued := p.ss.ver, !sq.empty(in)
		// A step changes only its own instance's running batch, model and profiled throughput.
		in.resOK = false
		p.step(now, in, out)
		in.resOK = false
		p.forgetDrain(i)
		p.classify(in, sq)
		if qq != nil && p.memoOn && (!in.Busy() || p.dm.eager(now, in.iterEnd)) {
			// Its drain for place, now while the step left its running batch and queue in
			// cache, when a placement is likely before its iteration ends (drainMemo.eager):
			// recomputed by place, it read them cold (at 128 instances about 22 per
			// placement).
			qq.drainAll(p, i)
		}
		switch {
		case queued || !sq.empty(in):
			// Others read its new state.
			p.changed()
		case wasQuiet && p.ss.quiet[w]&b != 0 && p.ss.ver == ver:
			// It found nothing to pull or split (and its pull recorded its kind).
			p.ss.idle[w] |= b
		}
	}
}

// heldQuiet: the pass's visit of the instance at bit b of word w would hold it and mark it
// idle, and nothing else. It is quiet (idle, nothing running, swapped or queued: its step
// reaches the hold; stepset.go's invariant), not idle yet, with no external load (so
// wasQuiet) and its kind not known to find nothing at this change (the pull memo holds an
// older change's kinds: findsNothing is false); the arrival hold is on.
func (p *Policy) heldQuiet(now dataplane.Time, qq *qlmQueue, w int, b uint64) bool {
	return qq != nil && now < p.hold && !p.observedAny && p.ss.quiet[w]&b != 0 && p.ss.idle[w]&b == 0 &&
		qq.none.ver != p.ss.ver
}

// checkIdle (checkMemo) panics when an instance the pass skips as idle would pull or split.
func (p *Policy) checkIdle(in *instance) {
	if qq, ok := p.q.(*qlmQueue); ok {
		if g := qq.pull(p, in); g != nil {
			panic(fmt.Sprintf("qlm: idle instance %d pulled group %d", in.ID, g.id))
		}
	}
}
