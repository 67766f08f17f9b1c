package dyorc

// A GPU's timeline (the device model behind avail in Eq. 1), the worker rule that starts
// its batches (DyOrc §5.1, §6.1) and its model loads (§5.4).

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"

	"github.com/plan-dev/plan/dataplane"
)

// plan returns GPU d's planned batches (our device model behind avail in Eq. 1): its queued
// real tasks and reservations in order of readiness, grouped into batches by the join rule,
// after the running batch.
func (p *Policy) plan(now dataplane.Time, d int) []pbatch {
	dv := &p.devs[d]
	if !dv.dirty {
		return dv.plan
	}
	if dv.pend {
		now, dv.pend = dv.pendAt, false
	}
	pl := p.rebuild(now, d)
	dv.indexPlan()
	if d < len(p.idle.hot) {
		p.idle.hot[d].walk = len(pl) > 0
	}
	return pl
}

// indexPlan records, for availScan, which services the plan holds (pmask) and where each
// run of back-to-back batches ends (pnext[i]: the first batch after i that starts later than
// the one before it ends, or len).
func (dv *device) indexPlan() {
	pl := dv.plan
	n := len(pl)
	pnext := slices.Grow(dv.pnext[:0], n)[:n]
	var mask uint64
	if n > 0 {
		// The kept batches (plan[:preTN], rebuildPrefix) run back to back, each after the
		// first starting where the one before ends, so all but the last share the last one's
		// pnext, and their services are the first one's and preTMask's (a superset where a
		// cut left bits behind: availScan's join walk then finds nothing more). They are
		// not read: at 128 GPUs under the 16× load they are most of a busy GPU's plan.
		lo := max(dv.preTN-1, 0)
		// One pass from the end: a batch's run ends where the next batch's does, unless the
		// next one starts later than this one ends. (A forward pass, each run's batches
		// learning their pnext when the next run starts, cost ~24 instructions a batch.)
		next := int32(n)
		pnext[n-1] = next
		mask = svcBit(pl[n-1].svc)
		for i := n - 2; i >= lo; i-- {
			b := &pl[i]
			mask |= svcBit(b.svc)
			if pl[i+1].start != b.end {
				next = int32(i + 1)
			}
			pnext[i] = next
		}
		if lo > 0 {
			for i := range pnext[:lo] {
				pnext[i] = next
			}
			mask |= svcBit(pl[0].svc) | dv.preTMask
		}
	}
	dv.pmask, dv.pnext = mask, pnext
}

// svcBit is service sv's bit in a plan's service mask: services past 63 share the top bit.
func svcBit(sv int) uint64 { return 1 << min(uint(sv), 63) }

// rebuild is plan's rebuild of a dirty GPU d's planned batches.
func (p *Policy) rebuild(now dataplane.Time, d int) []pbatch {
	dv := &p.devs[d]
	dv.dirty = false
	dv.plan = dv.plan[:0]
	t := now
	if dv.running {
		t = max(t, dv.runEnd)
	}
	if p.ref || p.check || !dv.keep {
		// The sort writes over the kept prefix batches, which the plan holds (plan[:preTN],
		// rebuildPrefix): checked, they are put back; else they restart at the next rebuild.
		kept := p.keptPlan[:0]
		if p.check && dv.keep {
			kept = append(kept, dv.plan[:dv.preTN]...)
		}
		p.planSorted(now, d, t)
		if !p.check || !dv.keep {
			dv.preTN, dv.preTMask = 0, 0
			return dv.plan
		}
		p.refPlan = append(p.refPlan[:0], dv.plan...)
		dv.plan = append(dv.plan[:0], kept...)[:0]
		p.keptPlan = kept
	}
	// svcReady depends on the service and on GPU state that the rebuild does not change: it is
	// computed once per service met (srs: with the rebuild that computed it).
	if len(p.srs) < len(p.m.W.Services) {
		p.srs = make([]svcReadyAt, len(p.m.W.Services))
		for sv := range p.srs {
			p.srs[sv].max, p.srs[sv].lat = p.svcMax[sv], p.latTab[sv]
		}
	}
	p.rebuilds++
	stamp := p.rebuilds
	pl := dv.plan
	from := 0
	if !p.opt.Literal {
		pl, from, t = p.rebuildPrefix(now, d, t, stamp, pl)
	}
	// The rest of the order: on the scale benchmark ~24 items an event at 128 GPUs (most of
	// them reservations) against ~10 at 8, of which ~7 open a batch (5 at 8) and the rest join
	// the batch just opened (joinRun). svcReady is found once per service met (srs) by the
	// items that open or join at the outer loop; the joinRun items need none (their batch's
	// service). A pass over every item before the loop cost more at both sizes.
	order := dv.order[from:]
	// A batch per item at most: the appends below never grow pl.
	pl = slices.Grow(pl, len(order))
	lit, srs := p.opt.Literal, p.srs
	// skipF: unless Literal, the items here are ready at or after now (the settled prefix
	// took those before), so the reservations the plan leaves out are those that follow, and
	// only a reservation follows (reserve).
	skipF := !lit
	// rest: the items after x, capped at its length (joinRun).
	for rest := order; len(rest) > 0; {
		x := &rest[0]
		rest = rest[1:len(rest):len(rest)]
		// Read literally every reservation counts [ours, measured in plan bench dyorc]:
		//   - one whose estimated input time has passed waits on a late predecessor: when it
		//     will be ready is unknown, and kept at "now" it would make this GPU look busy to
		//     every other request until its request's next call (GILL 59.9 s under Literal);
		//   - one that follows its predecessor with the same service on the same GPU (a
		//     Debate round after a round) would be planned as a batch of its own right after
		//     its predecessor's, though the worker batches it with whatever of that service is
		//     queued then: counted, Debate's mean is 1.7 % above Greedy's; left out, equal.
		if x.follows && skipF {
			continue // x.resv && !lit && (x.ready < now || x.follows): see skipF
		}
		// planAdd, inline. The items that join a batch are the ones joinRun takes right after
		// it opens (or after the one that joins the settled prefix's last batch): the item it
		// stops at fails the same rule against the same batch, so the batch is then closed and
		// its end (ExpLat of its final items) is computed once.
		sv, items, ready := int(x.svc), int(x.items), max(x.ready, now)
		e := &srs[sv]
		sr := e.v
		if e.at != stamp {
			sr = dataplane.Time(p.svcReady(now, d, sv))
			e.at, e.v = stamp, sr
		}
		if n := len(pl); n > 0 {
			last := &pl[n-1]
			if last.svc == sv && last.items+items <= e.max && ready <= last.start && sr <= last.start {
				if n <= dv.preTN {
					// A kept prefix batch (plan[:preTN]) grows: its prefix's own is kept.
					dv.preJ, dv.preJB = n, *last
				}
				var room int
				rest, room = joinRun(rest, uint16(sv), last.start, e.max-last.items-items, skipF)
				last.items = e.max - room
				last.end = last.start + dataplane.Time(e.latOf(p, sv, last.items))
				continue
			}
			t = max(t, last.end)
		}
		st := max(t, ready, sr)
		var room int
		rest, room = joinRun(rest, uint16(sv), st, e.max-items, skipF)
		items = e.max - room
		n := len(pl)
		pl = pl[:n+1] // within the capacity grown above
		pl[n] = pbatch{svc: sv, items: items, start: st, end: st + dataplane.Time(e.latOf(p, sv, items))}
	}
	dv.plan = pl
	if p.check && !slices.Equal(p.refPlan, dv.plan) {
		panic(fmt.Sprintf("dyorc: GPU %d at %d µs: plan from the kept order %v, sorted %v", d, now, dv.plan, p.refPlan))
	}
	return dv.plan
}

// rebuildPrefix plans the settled prefix of GPU d's order (order.go) into pl, as rebuild's
// loop would plan its tasks one by one, and returns pl, where the rest of the order starts,
// and t as the loop has it after the prefix.
func (p *Policy) rebuildPrefix(now dataplane.Time, d int, t dataplane.Time, stamp int64, pl []pbatch) ([]pbatch, int, dataplane.Time) {
	dv := &p.devs[d]
	// Extend the settled prefix over the items ready since, then plan its batches.
	// The reservations met here leave the order (w: where the next task settles): the plan
	// leaves them out at this and every later rebuild (ready < now), and out of the
	// order their removal (orderDel, ~0.4 an event) no longer moves the order's tail: at
	// 128 GPUs under the 16× load they sat ~150 items deep in orders of ~250, and their
	// removals moved ~42 items an event, two thirds of the order's memmove; here the
	// tail (the future part, ~24 items) moves at most once a rebuild.
	//
	// The order, the batch caps and the kept batches' count are held in locals: with the
	// writes through dv and pre, the compiler reloaded them at every item.
	pre, i, w := dv.pre, dv.preN, dv.preN
	order, maxB, preTN := dv.order, p.svcMax, dv.preTN
	for ; i < len(order) && order[i].ready < now; i++ {
		x := &order[i]
		if x.resv {
			continue
		}
		if w < i {
			order[w] = *x
		}
		sv, items := int(x.svc), int(x.items)
		if n := len(pre); n > 0 && pre[n-1].svc == sv && pre[n-1].items+items <= maxB[sv] {
			pre[n-1].items += items
			pre[n-1].last = w
			preTN = min(preTN, n-1)
		} else {
			pre = append(pre, preBatch{svc: sv, items: items, first: w, last: w})
		}
		w++
	}
	dv.preTN = preTN
	if w < i {
		dv.order = append(order[:w], order[i:]...)
	}
	dv.pre, dv.preN = pre, w
	// The kept batches of the prefix (device.preTN), where they still stand; else the kept
	// ones restart here. The first starts at max(t, now, its service's svcReady), each
	// after it where the one before ends, their services resident (preTMask: sr = now ≤
	// that end), so where the first starts elsewhere than it did (preT0), every start and
	// end moves by as much. At 128 GPUs under the 16× load a running batch often outlasts
	// its expected end (t is now then), and a quarter of the rebuilds find the first batch
	// waiting for its service's load (8 prefix batches a rebuild, 3.7 kept before).
	//
	// The kept batches stay where the last rebuild planned them, at the head of the plan
	// (plan[:preTN]: pl is the plan emptied, and nothing but a rebuild writes the plan): copied
	// out and back, ~8 batches a rebuild at 128 GPUs, they were ~250 bytes of memmove an event.
	k0, j := 0, dv.preJ
	dv.preJ = 0
	if dv.preTN > 0 && p.allResident(d, dv.preTMask) {
		sv := pre[0].svc
		e := &p.srs[sv]
		sr := e.v
		if e.at != stamp {
			sr = dataplane.Time(p.svcReady(now, d, sv))
			e.at, e.v = stamp, sr
		}
		pl = pl[:dv.preTN]
		if j == dv.preTN {
			pl[j-1] = dv.preJB
		}
		if s0 := max(t, now, sr); s0 != dv.preT0 {
			dt := s0 - dv.preT0
			for k := range pl {
				pl[k].start += dt
				pl[k].end += dt
			}
			dv.preT0 = s0
		}
		k0 = dv.preTN
		t = pl[k0-1].start // t as the loop below has it for that batch
	} else {
		dv.preTN, dv.preTMask = 0, 0
	}
	for k := k0; k < len(pre); k++ {
		sv := pre[k].svc
		e := &p.srs[sv]
		sr := e.v
		if e.at != stamp {
			sr = dataplane.Time(p.svcReady(now, d, sv))
			e.at, e.v = stamp, sr
		}
		if n := len(pl); n > 0 {
			t = max(t, pl[n-1].end)
		}
		st := max(t, now, sr)
		pl = append(pl, pbatch{svc: sv, items: pre[k].items, start: st, end: st + dataplane.Time(latOf(p.latTab, p, sv, pre[k].items))})
		if dv.preTN == k && (k == 0 || st == t && dv.resident[sv] && sv < 63) {
			dv.preTN = k + 1 // pl[k], kept in the plan
			if k == 0 {
				dv.preT0 = st
			} else {
				dv.preTMask |= svcBit(sv)
			}
		}
	}
	return pl, dv.preN, t
}

// joinRun is the rebuild's join rule over the items that follow a batch's last item: the items
// left after those that join the batch of service sv starting at st with room items left, and
// the room left after them. An item joins when it is of sv, fits and is ready by st (every
// batch starts at or after now, so max(ready, now) ≤ st is ready ≤ st; sv's svcReady is ≤ st,
// the batch's own start being at least it); a following reservation is skipped where skip is
// set (not Literal: the items after the settled prefix are ready at or after now, so it is the
// only reservation the rebuild leaves out there). Under the 16× load at 128 GPUs most of a
// rebuild's ~23 future items join the batch just opened (15 of 24 an event, against 4 of 10 at
// 8), and this loop, apart from the rebuild's many live values, keeps its few in registers.
// It takes and returns the items as a slice capped at its length, which the rebuild's loop
// walks too: an index and the order beside it (a count returned, then added) kept more of
// the rebuild's values on the stack, reloaded at every item.
func joinRun(rest []planItem, sv uint16, st dataplane.Time, room int, skip bool) ([]planItem, int) {
	for len(rest) > 0 {
		y := &rest[0]
		if !(y.follows && skip) {
			if y.svc != sv || y.ready > st || int(y.items) > room {
				break
			}
			room -= int(y.items)
		}
		// Capped at its length, the slice's capacity is its length: one register fewer in
		// the loop (with rest[1:] the rebuild's copy kept the capacity on the stack).
		rest = rest[1:len(rest):len(rest)]
	}
	return rest, room
}

// allResident is whether GPU d holds every service of mask (svcBit, services below 63).
func (p *Policy) allResident(d int, mask uint64) bool {
	res := p.devs[d].resident
	if len(res) <= 64 {
		return p.devs[d].resM&mask == mask
	}
	for ; mask != 0; mask &= mask - 1 {
		if !res[bits.TrailingZeros64(mask)] {
			return false
		}
	}
	return true
}

// latOf is p.expLat(sv, b) with the table's lookup inlined (lt: p.latTab).
func (e *svcReadyAt) latOf(p *Policy, sv, b int) float64 {
	if uint(b) < uint(len(e.lat)) {
		return e.lat[b]
	}
	return p.expLat(sv, b)
}

func latOf(lt [][]float64, p *Policy, sv, b int) float64 {
	if t := lt[sv]; uint(b) < uint(len(t)) {
		return t[b]
	}
	return p.expLat(sv, b)
}

// expLat is Services[sv].ExpLat(b), from the table for b ≤ MaxBatch (the same values).
func (p *Policy) expLat(sv, b int) float64 {
	if t := p.latTab[sv]; b >= 0 && b < len(t) {
		return t[b]
	}
	return p.m.W.Services[sv].ExpLat(b)
}

// planAdd appends a task of items of service sv ready at ready to GPU d's plan, joining the
// last batch when the join rule allows; t is when the GPU is free before it, and planAdd
// returns t as it stands after.
func (p *Policy) planAdd(now dataplane.Time, d int, t dataplane.Time, sv, items int, ready dataplane.Time) dataplane.Time {
	dv := &p.devs[d]
	s := &p.m.W.Services[sv]
	sr := dataplane.Time(p.svcReady(now, d, sv))
	if n := len(dv.plan); n > 0 {
		last := &dv.plan[n-1]
		if last.svc == sv && last.items+items <= s.MaxBatch && ready <= last.start && sr <= last.start {
			last.items += items
			last.end = last.start + dataplane.Time(s.ExpLat(last.items))
			return t
		}
		t = max(t, last.end)
	}
	st := max(t, ready, sr)
	dv.plan = append(dv.plan, pbatch{svc: sv, items: items, start: st, end: st + dataplane.Time(s.ExpLat(items))})
	return t
}

// planSorted is plan's reference: it collects GPU d's queued tasks and counted reservations
// and sorts them at every rebuild (the code before device.order; Policy.ref).
func (p *Policy) planSorted(now dataplane.Time, d int, t dataplane.Time) {
	dv := &p.devs[d]
	type item struct {
		sv, items int
		ready     dataplane.Time
		seq       int64
	}
	its := make([]item, 0, len(dv.queue)+len(dv.resv))
	for _, x := range dv.queue {
		its = append(its, item{x.svc, x.items, x.ready, x.seq})
	}
	for _, x := range dv.resv {
		if p.opt.Literal || x.ready >= now && !x.follows {
			its = append(its, item{x.svc, x.items, x.ready, x.seq})
		}
	}
	sort.Slice(its, func(i, j int) bool {
		if its[i].ready != its[j].ready {
			return its[i].ready < its[j].ready
		}
		return its[i].seq < its[j].seq
	})
	for _, x := range its {
		t = p.planAdd(now, d, t, x.sv, x.items, max(x.ready, now))
	}
}

// tryStart runs the worker rule (DyOrc §5.1, §6.1): when GPU d is free, the oldest ready task
// whose service is resident heads a batch that every ready task of that service behind it
// joins, up to max_batch items. Tasks whose input has not arrived are skipped; reservations
// never run.
func (p *Policy) tryStart(now dataplane.Time, d int, out *dataplane.Decisions) {
	dv := &p.devs[d]
	if dv.running || p.down[d] > 0 {
		return
	}
	var head *task
	next := dataplane.Never
	for _, t := range dv.queue {
		if t.ready > now {
			next = min(next, t.ready)
			continue
		}
		if dv.resident[t.svc] {
			head = t
			break
		}
	}
	if head == nil {
		if next < dv.timerAt {
			dv.timerAt = next
			out.SetTimer(next, int64(d))
		}
		return
	}
	s := &p.m.W.Services[head.svc]
	// members and reqs are the Policy's scratch (runTasks and Dispatch copy them): one
	// allocation fewer a batch, and the sort below allocates nothing, for the collector.
	members := p.members[:0]
	total := 0
	keep := dv.queue[:0]
	maxB := p.maxBatch(head.svc)
	for _, t := range dv.queue {
		if t.svc == head.svc && t.ready <= now && (t == head || total+t.items <= maxB) {
			members = append(members, t)
			total += t.items
			continue
		}
		keep = append(keep, t)
	}
	for k := len(keep); k < len(dv.queue); k++ {
		dv.queue[k] = nil
	}
	dv.queue = keep
	dv.qn[head.svc] -= int32(len(members))
	for _, t := range members {
		p.unqueued(t)
	}
	p.keys = dv.orderDelTasks(members, p.keys)
	dur := dataplane.Time(math.Ceil(s.Lat(total)))
	// One engine batch per stage, all on this GPU's workers with the joint batch's duration:
	// together they are one service batch across workflows (DyOrc §5.1).
	slices.SortStableFunc(members, func(a, b *task) int { return cmp.Compare(a.stage, b.stage) })
	groups := 0
	reqs := p.reqBuf[:0]
	for i := 0; i < len(members); {
		j := i
		reqs = reqs[:0]
		for j < len(members) && members[j].stage == members[i].stage {
			reqs = append(reqs, members[j].req)
			j++
		}
		st := members[i].stage
		out.Dispatch(p.dep.Stages[st].App, reqs, []dataplane.PathHop{{Stage: st, Worker: p.m.WorkerOf[d][st], Dur: dur}})
		dv.runW = append(dv.runW, p.m.WorkerOf[d][st])
		groups++
		i = j
	}
	dv.runTasks = append(dv.runTasks, members...)
	clear(members)
	p.members, p.reqBuf = members[:0], reqs[:0]
	dv.running, dv.runSvc, dv.outstanding = true, head.svc, groups
	// The engine runs the batch at its nominal (the work model draws the real length); the
	// device model expects it to end at its expected length.
	dv.runEnd = now + dataplane.Time(math.Ceil(s.ExpLat(total)))
	dv.lastUse[head.svc] = now
	p.touch(d)
}

// ensureLoad queues a load of sv on GPU d (proactive for a reservation, real for a task).
func (p *Policy) ensureLoad(now dataplane.Time, d, sv int, real bool, out *dataplane.Decisions) {
	dv := &p.devs[d]
	if dv.resident[sv] || dv.loading == sv {
		return
	}
	for i := range dv.loadQ {
		if dv.loadQ[i].svc == sv {
			// A real task may evict what a waiting reservation's load could not: retry.
			dv.loadQ[i].real = dv.loadQ[i].real || real
			p.startLoad(now, d, out)
			return
		}
	}
	dv.loadQ = append(dv.loadQ, loadReq{svc: sv, real: real})
	p.startLoad(now, d, out)
}

func (p *Policy) neededReal(d, sv int) bool {
	dv := &p.devs[d]
	return dv.running && dv.runSvc == sv || dv.qn[sv] > 0
}

func (p *Policy) neededResv(d, sv int) bool {
	for _, x := range p.devs[d].resv {
		if x.svc == sv {
			return true
		}
	}
	return false
}

// startLoad starts GPU d's next load, one at a time (the paper does not say how many loads run
// at once), real tasks' loads first. Memory comes from LRU eviction of services no queued batch
// needs; a reservation never pins its service against a real task's load ([ours], so that
// reservations cannot block each other's loads); when nothing can be evicted the load waits.
func (p *Policy) startLoad(now dataplane.Time, d int, out *dataplane.Decisions) {
	dv := &p.devs[d]
	if dv.loading >= 0 || p.down[d] > 0 {
		return // one load at a time; none onto a failed GPU (the engine does not guard loads)
	}
	// Drop loads nothing needs any more.
	keep := dv.loadQ[:0]
	for _, l := range dv.loadQ {
		l.real = p.neededReal(d, l.svc)
		if l.real || p.neededResv(d, l.svc) {
			keep = append(keep, l)
		}
	}
	dv.loadQ = keep
	pick := -1
	for i, l := range dv.loadQ {
		if l.real {
			pick = i
			break
		}
	}
	if pick < 0 && len(dv.loadQ) > 0 {
		pick = 0
	}
	if pick < 0 {
		return
	}
	l := dv.loadQ[pick]
	s := &p.m.W.Services[l.svc]
	capb := p.m.GPUMem
	if capb > 0 && dv.mem+s.Bytes > capb {
		if !l.real && !p.opt.Literal {
			// A proactive load only fills free memory [ours]: evicting for a guess displaced
			// services that real calls then reloaded (KC, MIX: more loads, no faster).
			return
		}
		var victims []int
		for sv, ok := range dv.resident {
			if ok && !p.neededReal(d, sv) && (l.real || !p.neededResv(d, sv)) {
				victims = append(victims, sv)
			}
		}
		sort.Slice(victims, func(i, j int) bool {
			if dv.lastUse[victims[i]] != dv.lastUse[victims[j]] {
				return dv.lastUse[victims[i]] < dv.lastUse[victims[j]]
			}
			return victims[i] < victims[j]
		})
		free := capb - dv.mem
		k := 0
		for k < len(victims) && free < s.Bytes {
			free += p.m.W.Services[victims[k]].Bytes
			k++
		}
		if free < s.Bytes {
			return // wait for the queue (the paper leaves a full GPU open)
		}
		for _, sv := range victims[:k] {
			out.Evict(p.m.Holder[d][sv], p.m.W.Services[sv].Name)
			dv.setResident(sv, false)
			dv.mem -= p.m.W.Services[sv].Bytes
			p.st.Evictions++
		}
	}
	srv := p.m.GPUServer[d]
	dur := dataplane.Time(math.Ceil(p.m.LoadUs(l.svc, !p.hostC[srv][l.svc] || p.opt.Mode == ModeRay)))
	if !p.hostC[srv][l.svc] {
		p.rebuildDeferred(srv)
	}
	p.setHost(srv, l.svc, true)
	out.Load(p.m.Holder[d][l.svc], s.Name, s.Bytes, dur)
	dv.loading, dv.loadETA = l.svc, now+dur
	dv.mem += s.Bytes
	dv.loadQ = slices.Delete(dv.loadQ, pick, pick+1)
	p.touch(d)
	p.st.Loads++
}

// unqueued records that task t left its GPU's queue (see reqState.qdevs).
func (p *Policy) unqueued(t *task) {
	if rs := p.reqs.get(t.req); rs != nil {
		if i := slices.IndexFunc(rs.qdevs, func(q qtask) bool { return q.t == t }); i >= 0 {
			rs.qdevs = slices.Delete(rs.qdevs, i, i+1)
		}
	}
}

// maxBatch is the batch cap of service sv under this scheduler.
func (p *Policy) maxBatch(sv int) int {
	if p.opt.Mode == ModeRay {
		return min(RayMaxBatch, p.m.W.Services[sv].MaxBatch)
	}
	return p.m.W.Services[sv].MaxBatch
}

// rebuildDeferred rebuilds the deferred plans (evalLayer) of server srv's GPUs before its host
// cache changes: a plan reads the cache (svcReady) as it was at the DP that deferred it, and
// nothing else of a GPU changes without touching it (which drops the deferred rebuild). The
// GPU whose load changes the cache may have been changed already, but it is touched right
// after, so its plan is rebuilt again before any use.
func (p *Policy) rebuildDeferred(srv int) {
	for d := range p.devs {
		if dv := &p.devs[d]; dv.pend && p.m.GPUServer[d] == srv {
			p.plan(dv.pendAt, d)
		}
	}
}
