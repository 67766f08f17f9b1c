package dyorc

import (
	"math"
	"slices"
	"sort"

	"github.com/plan-dev/plan/dataplane"
)

// planItem is one of a GPU's queued tasks or reservations, as the device model behind avail in
// Eq. 1 (DyOrc §5.3) plans it. It packs into 24 bytes (40 with int fields): at 128 GPUs under
// the 16× load an order holds ~170 items, each insert or removal moves the items after it
// and each rebuild walks the unsettled ones, and cachegrind counted the order's memmove and
// the rebuild's walk as the largest share of the L1 misses that 8 GPUs do not have. The
// device keeps an order only where every service index and task size fit (orderFits).
type planItem struct {
	ready   dataplane.Time
	seq     int64
	items   int32
	svc     uint16
	resv    bool // a reservation (else a queued real task)
	follows bool // resv.follows
}

// orderFits is whether every service index fits planItem.svc and every task's items fit
// planItem.items (else the devices plan from their queues, planSorted).
func orderFits(w *Workflow) bool {
	if len(w.Services) > math.MaxUint16+1 {
		return false
	}
	for a := range w.Apps {
		for _, n := range w.Apps[a].Nodes {
			if n.Items > math.MaxInt32 {
				return false
			}
		}
	}
	return true
}

// before is the plan's order: by readiness, then by creation. seq is unique across tasks and
// reservations, so the order is total and every sort of the same items agrees.
func (x *planItem) before(y *planItem) bool {
	return x.ready < y.ready || x.ready == y.ready && x.seq < y.seq
}

// The device keeps its tasks and reservations in the plan's order (device.order) as they come
// and go, so that plan rebuilds the timeline by one pass instead of sorting the queue and the
// reservations again at every rebuild: under overload a GPU's queue holds over a thousand tasks
// and it changes at almost every event, and sorting it was half of the scheduler's cost at 128
// GPUs. A task's or reservation's ready and seq never change, so an item's
// place is fixed from insertion to removal.

// orderAt is the index of the first item of dv.order not before (ready, seq).
func (dv *device) orderAt(ready dataplane.Time, seq int64) int {
	k := planItem{ready: ready, seq: seq}
	return sort.Search(len(dv.order), func(i int) bool { return !dv.order[i].before(&k) })
}

// enqueue queues task t on the GPU.
func (dv *device) enqueue(t *task) {
	dv.queue = append(dv.queue, t)
	dv.qn[t.svc]++
	if !dv.keep {
		return
	}
	i := dv.orderAt(t.ready, t.seq)
	dv.preCut(i)
	dv.order = slices.Insert(dv.order, i, planItem{ready: t.ready, seq: t.seq, svc: uint16(t.svc), items: int32(t.items)})
}

// reserve adds reservation x to the GPU.
func (dv *device) reserve(x *resv) {
	x.at = len(dv.resv)
	dv.resv = append(dv.resv, x)
	if !dv.keep {
		return
	}
	i := dv.orderAt(x.ready, x.seq)
	dv.preCut(i)
	dv.order = slices.Insert(dv.order, i, planItem{ready: x.ready, seq: x.seq, svc: uint16(x.svc), items: int32(x.items), resv: true, follows: x.follows})
}

func (dv *device) orderDel(ready dataplane.Time, seq int64) {
	if !dv.keep {
		return
	}
	i := dv.orderAt(ready, seq)
	if i < len(dv.order) && dv.order[i].seq == seq {
		if dv.order[i].resv {
			dv.preShift(i)
		} else {
			dv.preCut(i)
		}
		dv.order = slices.Delete(dv.order, i, i+1)
	}
}

// orderDelTasks removes the tasks ts (a batch that started) in one pass.
func (dv *device) orderDelTasks(ts []*task, scratch []planItem) []planItem {
	if !dv.keep {
		return scratch
	}
	keys := scratch[:0]
	for _, t := range ts {
		keys = append(keys, planItem{ready: t.ready, seq: t.seq})
	}
	slices.SortFunc(keys, func(a, b planItem) int {
		if a.before(&b) {
			return -1
		}
		if b.before(&a) {
			return 1
		}
		return 0
	})
	if len(keys) == 0 {
		return keys
	}
	// The items before the first key stay where they are, and those after the last key move
	// down at once: under overload at 128 GPUs the order holds ~170 items, and a started batch's
	// tasks sit among its first ready ones.
	i0 := dv.orderAt(keys[0].ready, keys[0].seq)
	keep, k, cut := dv.order[:i0], 0, -1
	for i := i0; i < len(dv.order); i++ {
		if k == len(keys) {
			keep = append(keep, dv.order[i:]...)
			break
		}
		x := dv.order[i]
		for k < len(keys) && keys[k].before(&x) {
			k++
		}
		if k < len(keys) && !x.resv && keys[k].seq == x.seq {
			if cut < 0 {
				cut = i
			}
			k++
			continue
		}
		keep = append(keep, x)
	}
	if cut >= 0 {
		dv.preCut(cut)
	}
	dv.order = keep
	return keys
}

// The plan's settled prefix. Every rebuild at time now walks the queued tasks already ready
// (under overload over a hundred per busy GPU at 128 GPUs, in a handful of batches) and the
// reservations whose estimated input time has passed (about fifty), though neither changes
// between rebuilds: a task ready before now plans as ready at now, after the GPU's running
// batch and its service's load, so the join rule (same service, room in the batch; the
// batch starts no earlier than now, nor than its service is ready) groups such tasks by their
// order, services and items alone, whatever the times; and such a reservation stays out of the
// plan at every later rebuild unless Literal (rebuild). The device therefore keeps those
// batches' services and items (pre) for the items order[:preN], all ready before the rebuild
// that settled them, and a rebuild extends them over the items ready since and recomputes only
// their start and end times: ~30 items a rebuild instead of ~175 on the scale benchmark's
// 128 GPUs. An item inserted or a task removed at i < preN unsettles the prefix from i
// (preCut); a reservation removed there only shifts it (preShift).
//
// The times too move together from one rebuild to the next: a batch of the prefix starts at
// max(t, now, svcReady) with t the end of the one before (the first: max(now, the running
// batch's end)), and where its service is resident svcReady is now ≤ t, so it starts at t
// whatever now is. A rebuild therefore keeps the planned batches (plan[:preTN]) of the prefix's
// leading batches that started so after the first (their services still resident), and
// copies them moved by as much as the first batch's start moved: those of pre[:preTN], which
// an unsettled or extended batch cuts.

// preBatch is a batch of the settled prefix: its service, its items, and the indices in order
// of its first and last tasks.
type preBatch struct {
	svc, items, first, last int
}

// preCut unsettles the prefix from order index i on: the batches with a task there go.
func (dv *device) preCut(i int) {
	if i >= dv.preN {
		return
	}
	n := len(dv.pre)
	for n > 0 && dv.pre[n-1].last >= i {
		n--
		i = min(i, dv.pre[n].first)
	}
	dv.pre, dv.preN = dv.pre[:n], i
	dv.preTN = min(dv.preTN, n)
}

// preShift accounts for the removal of the reservation at order index i.
func (dv *device) preShift(i int) {
	if i >= dv.preN {
		return
	}
	dv.preN--
	for k := len(dv.pre) - 1; k >= 0 && dv.pre[k].last > i; k-- {
		dv.pre[k].last--
		if dv.pre[k].first > i {
			dv.pre[k].first--
		}
	}
}
