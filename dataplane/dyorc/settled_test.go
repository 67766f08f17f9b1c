package dyorc

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/plan-dev/plan/dataplane"
)

// TestSettledPrefix: a GPU's plan rebuilt from its settled prefix (order.go) equals the sorted
// reference (planSorted) after every kind of change to its queue and reservations: tasks
// queued ready in the past, now or later, reservations past, counted or following, tasks and
// reservations removed inside and past the settled items, batches started, the GPU reset by a
// failure, with rebuilds at the same time and later, idle or running a batch that ends before
// or after now. Policy.check panics on any difference; the test also counts that the prefix
// was used at all and that kept prefix batches were moved to another first start, and after
// every rebuild compares the order with the sorted tasks and the reservations not yet ready
// (those ready before the rebuild leave the order).
func TestSettledPrefix(t *testing.T) {
	w := loadWorkflow(t, "workload.json")
	dep := spreadDeployment(t, w, 4)
	ns := len(w.Services)
	for _, tc := range []struct {
		name    string
		seed    uint64
		svcs    int // services drawn from (fewer: longer batches)
		delFrac float64
		reset   bool
		running bool // the GPU runs batches (a rebuild's first start is max(now, runEnd)), most services resident
	}{
		{"one-service", 1, 1, 0.1, false, false},
		{"two-services", 2, 2, 0.2, false, false},
		{"all-services", 3, ns, 0.3, false, false},
		{"heavy-removal", 4, 2, 0.6, false, false},
		{"with-resets", 5, 3, 0.2, true, false},
		{"running", 6, 2, 0.2, false, true},
		{"running-all-services", 7, ns, 0.3, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New("dyorc", Options{Mode: ModeSpec})
			if _, err := dataplane.NewEngine(dep, p, nopFx{}); err != nil {
				t.Fatal(err)
			}
			p.check = true
			dv := &p.devs[0]
			if tc.running { // most services resident (svcReady is now): kept prefix batches
				for sv := range dv.resident {
					dv.setResident(sv, sv%3 != 2)
				}
			}
			r := rand.New(rand.NewPCG(tc.seed, 7))
			now := dataplane.Time(1e6)
			var seq int64
			settled, shifted, dropped := 0, 0, 0
			var want []planItem
			for step := 0; step < 3000; step++ {
				switch op := r.IntN(10); {
				case op < 4: // queue a task, ready up to 2 ms before or after now
					seq++
					tk := &task{svc: r.IntN(tc.svcs), items: 1 + r.IntN(3), ready: now + dataplane.Time(r.IntN(4000)-2000), seq: seq}
					dv.enqueue(tk)
				case op < 6: // a reservation, past or ahead, sometimes following its predecessor
					seq++
					x := &resv{svc: r.IntN(tc.svcs), items: 1 + r.IntN(3), ready: now + dataplane.Time(r.IntN(6000)-2000), seq: seq, follows: r.IntN(5) == 0}
					dv.reserve(x)
				case op < 7 && r.Float64() < tc.delFrac*3 && len(dv.queue) > 0: // a task cancelled
					i := r.IntN(len(dv.queue))
					tk := dv.queue[i]
					dv.orderDel(tk.ready, tk.seq)
					dv.qn[tk.svc]--
					dv.queue = slices.Delete(dv.queue, i, i+1)
				case op < 8 && r.Float64() < tc.delFrac*3 && len(dv.resv) > 0: // a reservation dropped
					i := r.IntN(len(dv.resv))
					x := dv.resv[i]
					dv.orderDel(x.ready, x.seq)
					dv.resv = slices.Delete(dv.resv, i, i+1)
				case op < 9 && len(dv.queue) > 0: // a batch starts: some ready tasks of one service
					sv := dv.queue[r.IntN(len(dv.queue))].svc
					var members []*task
					keep := dv.queue[:0]
					for _, tk := range dv.queue {
						if tk.svc == sv && tk.ready <= now && len(members) < 4 {
							members = append(members, tk)
							dv.qn[sv]--
							continue
						}
						keep = append(keep, tk)
					}
					dv.queue = keep
					p.keys = dv.orderDelTasks(members, p.keys)
				case tc.reset && r.IntN(50) == 0: // a failure empties the GPU
					dv.queue, dv.resv = nil, nil
					clear(dv.qn)
					dv.order = dv.order[:0]
					dv.preCut(0)
				}
				if r.IntN(3) > 0 {
					now += dataplane.Time(r.IntN(800))
				}
				if tc.running && r.IntN(4) == 0 { // a batch starts or ends, or runs past its end
					dv.running = r.IntN(3) > 0
					dv.runEnd = now + dataplane.Time(r.IntN(3000)-1000)
				}
				t0 := now
				if dv.running {
					t0 = max(t0, dv.runEnd)
				}
				moved := dv.preTN > 0 && dv.preT0 != t0
				dv.dirty = true
				p.plan(now, 0) // panics where the settled prefix's plan differs from the sort's
				settled += dv.preN
				// The order holds the queued tasks and the reservations not yet ready at the
				// rebuild (those ready before it left the order), in the plan's order.
				want := want[:0]
				for _, tk := range dv.queue {
					want = append(want, planItem{ready: tk.ready, seq: tk.seq, svc: uint16(tk.svc), items: int32(tk.items)})
				}
				for _, x := range dv.resv {
					if x.ready >= now {
						want = append(want, planItem{ready: x.ready, seq: x.seq, svc: uint16(x.svc), items: int32(x.items), resv: true, follows: x.follows})
					} else {
						dropped++
					}
				}
				slices.SortFunc(want, func(a, b planItem) int {
					if a.before(&b) {
						return -1
					}
					return 1
				})
				if !slices.Equal(dv.order, want) {
					t.Fatalf("step %d: order %v, want %v", step, dv.order, want)
				}
				if moved && dv.preTN > 0 && dv.preT0 == t0 {
					shifted++
				}
			}
			if settled == 0 {
				t.Fatal("the settled prefix was never used")
			}
			if dropped == 0 {
				t.Fatal("no reservation ever left the order")
			}
			if tc.running && shifted == 0 {
				t.Fatal("no kept prefix batch was ever moved to another first start")
			}
		})
	}
}
