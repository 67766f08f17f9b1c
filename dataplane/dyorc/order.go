package dyorc

import (
	"slices"
	"sort"

	"github.com/plan-dev/plan/dataplane"
)

// planItem is one of a GPU's queued tasks or reservations, as the device model behind avail in
// Eq. 1 (DyOrc §5.3) plans it.
type planItem struct {
	ready   dataplane.Time
	seq     int64
	svc     int
	items   int
	resv    bool // a reservation (else a queued real task)
	follows bool // resv.follows
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
	dv.order = slices.Insert(dv.order, i, planItem{ready: t.ready, seq: t.seq, svc: t.svc, items: t.items})
}

// reserve adds reservation x to the GPU.
func (dv *device) reserve(x *resv) {
	dv.resv = append(dv.resv, x)
	if !dv.keep {
		return
	}
	i := dv.orderAt(x.ready, x.seq)
	dv.order = slices.Insert(dv.order, i, planItem{ready: x.ready, seq: x.seq, svc: x.svc, items: x.items, resv: true, follows: x.follows})
}

func (dv *device) orderDel(ready dataplane.Time, seq int64) {
	if !dv.keep {
		return
	}
	i := dv.orderAt(ready, seq)
	if i < len(dv.order) && dv.order[i].seq == seq {
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
	keep, k := dv.order[:0], 0
	for _, x := range dv.order {
		for k < len(keys) && keys[k].before(&x) {
			k++
		}
		if k < len(keys) && !x.resv && keys[k].seq == x.seq {
			k++
			continue
		}
		keep = append(keep, x)
	}
	dv.order = keep
	return keys
}
