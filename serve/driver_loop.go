package serve

import (
	"fmt"
	"time"

	"github.com/plan-dev/plan/dataplane"
)

// afterEvent finishes a migration or a drain once the old engine has no work left, and
// renews an engine whose request IDs run low.
func (d *driver) afterEvent() {
	g := d.gen
	d.events++
	if d.events%compactEvery == 0 {
		g.eng.Compact()
		g.trimCalls()
	}
	if d.now-d.doorAt >= doorEvery {
		d.doorAt = d.now
		d.evalDoors(g)
	}
	switch {
	case g.outstanding == 0 && d.draining:
		d.exit = true
		return
	case g.outstanding == 0 && d.migrating != nil:
		d.completeMigration()
	case g.outstanding == 0 && d.issued(g) >= d.idLimit:
		// Nothing in flight: a fresh engine takes the next request, nobody waits.
		if err := d.attach(g); err != nil {
			d.log.Error("renewing the engine's request IDs", "err", err)
		}
	case d.issued(g) >= d.idLimit+d.idLimit/2 && d.migrating == nil && !d.draining:
		// Never idle while the IDs ran out: a migration to the same plan.
		d.startMigration(&reloadReq{next: g, reply: make(chan error, 1)})
	}
}

// rotateIfIdle gives the current generation a fresh engine when nothing is in flight (the
// server went idle after a burst: the old engine's tables were sized for it).
func (d *driver) rotateIfIdle() {
	if g := d.gen; g.outstanding == 0 && d.migrating == nil && !d.draining && d.issued(g) > 0 {
		if err := d.attach(g); err != nil {
			d.log.Error("rotating the engine", "err", err)
		}
		// The timer heap's array was sized for the burst too (the old engine's entries are
		// stale now; they fire and are ignored).
		d.timers = append(dataplane.TimeHeap[timerItem](nil), d.timers...)
	}
}

// issued is the number of request IDs g's engine handed out. The engine forgets answered
// requests (Compact) and its policy forgets them too (dataplane.Forgetter), but IDs are
// 32-bit (idLimit).
func (d *driver) issued(g *generation) int {
	return int(g.eng.NextRequestID())
}

// evalDoors asks the policy (dataplane.Door), or the driver's own estimate, whether a fresh
// arrival of each app could still be served in time, and publishes the verdict for the
// handlers: a closed door refuses requests before their body is read.
func (d *driver) evalDoors(g *generation) {
	pd, hasDoor := g.eng.Policy().(dataplane.Door)
	v := g.eng.View()
	d.m.deliveryMargin.Set(float64(d.delivery.q.Load()) / 1e6)
	for i := range g.doors {
		app := dataplane.AppID(i)
		var until dataplane.Time
		var reason string
		if hasDoor {
			// A fresh arrival whose answer must also be delivered: as old as the margin.
			ok, why, retry := pd.Door(v, app, d.now-d.delivery.margin(g.dep.Apps[i].SLO), d.now)
			if !ok {
				until, reason = max(retry, d.now+1), string(why)
			}
		} else {
			// Requests not yet in a batch, served at the planned rate, would keep a fresh
			// arrival waiting longer than its SLO (less the delivery margin).
			a := &g.dep.Apps[i]
			if wait, slo := genericWait(a, g.queued[i]), a.SLO-d.delivery.margin(a.SLO); wait > slo {
				until, reason = d.now+wait-slo, "overload"
			}
		}
		dr := &g.doors[i]
		if until > 0 {
			if p := dr.reason.Load(); p == nil || *p != reason {
				r := reason // allocated only when the reason changes, not per evaluation
				dr.reason.Store(&r)
			}
		}
		dr.closedUntil.Store(int64(until))
	}
}

// genericWait estimates how long a fresh arrival of app waits for the queued requests ahead
// of it at the app's planned rate (policies without a Door).
func genericWait(a *dataplane.App, queued int64) dataplane.Time {
	if a.RateRPS <= 0 || queued <= 0 {
		return 0
	}
	return dataplane.Time(float64(queued) / a.RateRPS * 1e6)
}

// arm makes sure the driver wakes for its earliest timer when it is about to sleep.
//
// An idle driver arms the waiter's timerfd (waketimer), which wakes it within µs of the deadline,
// where a Go timer can be up to 1 ms late (the runtime sleeps in epoll_wait, whose timeout
// is in ms). But a timerfd re-arm for a deadline this close reprograms the CPU's hardware
// timer, and the expiry interrupts it again: in a VM both exit to the hypervisor, 8-20 µs of
// CPU each time (timerfd_settime costs 1 µs for a deadline 5 ms away, 9 µs at 100 µs, 23 µs
// at 10 µs here). A saturated driver re-armed it for the next hop's end about every fifth
// request, and that was the largest part of serve's CPU per request beyond the HTTP floor,
// which should stay within ~15 µs so that the driver, one goroutine, keeps up with the
// network.
//
// A busy driver (calls arriving on average busyGap apart or closer, the last one less than
// busyQuiet ago: each of them handles the due timers anyway) arms the waiter's coarse
// deadline instead for deadlines within coarseHorizon: a runtime timer (the timerfd's read
// deadline), whose reset is a heap update in the runtime, and while the process runs
// goroutines the scheduler fires it on time. It is late only when the
// driver's processor goes idle (the runtime's poller then sleeps in whole ms), and then by
// less than a ms or until the next call, whichever comes first; busyQuiet after the last
// call the timerfd takes over again, so an idle server keeps its µs wakeups. Whatever the
// wake, a late one only delays answers: each timer is handled at its own time (onTimers).
// Far deadlines always use the timerfd (its re-arm is cheap: the kernel's tick comes first).
func (d *driver) arm() {
	if len(d.timers) == 0 {
		return
	}
	at := d.timers[0].At
	if d.intakeGap < busyGap && d.now-d.intakeAt < busyQuiet && at-d.now < coarseHorizon {
		if at != d.soonAt {
			d.soonAt = at
			d.wt.ArmCoarse(max(time.Until(d.clk.At(at)), 0))
		}
		return
	}
	if d.soonAt != dataplane.Never {
		// The timerfd takes over; a stale coarse deadline would only cost a spurious wakeup.
		d.wt.ArmCoarse(-1)
		d.soonAt = dataplane.Never
	}
	if at == d.timerAt {
		return
	}
	d.timerAt = at
	d.wt.Arm(max(time.Until(d.clk.At(at)), 0))
}

func (d *driver) push(at dataplane.Time, x timerItem) {
	d.seq++
	d.timers.Push(dataplane.Timed[timerItem]{At: at, Seq: d.seq, Val: x})
}

// onTimers handles every timer due by the wall clock, each at its own time: an emulated hop
// ends, a transfer lands and a policy timer fires when it was due, not when the driver got
// to it. The driver being late (a busy machine, a burst of arrivals) then delays only the
// answers it sends, never the emulated workers' next hops — as in the simulator, where a
// hop's end is exact — so lateness does not accumulate along a request's hops or cost the
// workers capacity. d.now ends at the wall clock.
func (d *driver) onTimers() {
	wall := max(d.now, d.clk.Now())
	for len(d.timers) > 0 && d.timers[0].At <= wall {
		due := d.timers.Pop()
		x := due.Val
		d.now = max(d.now, due.At)
		if x.kind != tFlush && x.kind != tDrain && x.gen == d.gen.n {
			d.m.latenessUs(wall - due.At)
		}
		switch x.kind {
		case tPolicy:
			if x.gen == d.gen.n {
				d.handle(dataplane.Event{Kind: dataplane.EvTimer, Key: x.key})
				d.timerTokens()
			}
		case tBatch:
			if x.gen == d.gen.n {
				x.job.End = d.now
				d.onJob(x.job)
			}
		case tTransfer:
			if x.gen == d.gen.n {
				d.handle(dataplane.Event{Kind: dataplane.EvTransferDone, Batch: x.batch, Hop: x.hop, Start: x.start, End: d.now})
			}
		case tFlush:
			if d.migrating != nil && x.gen == d.gen.n {
				d.log.Warn("migration flush timed out: answering the old plan's unfinished requests with 503", "outstanding", d.gen.outstanding)
				d.abandon(d.gen, "migration")
			}
		case tDrain:
			if d.draining {
				d.log.Warn("drain timed out: answering unfinished requests with 503", "outstanding", d.gen.outstanding)
				d.abandon(d.gen, string(dataplane.DropShutdown))
				for _, c := range d.paused {
					d.answerShutdown(c, "migration")
				}
				d.paused = nil
			}
		}
	}
	d.now = wall
}

// switchTo makes g the current generation, with a fresh engine.
func (d *driver) switchTo(g *generation) error {
	if err := d.attach(g); err != nil {
		return err
	}
	d.gen = g
	d.m.setPlan(g)
	if d.onSwitch != nil {
		d.onSwitch(g)
	}
	return nil
}

// startMigration is PPipe's migration: the next generation was preloaded by the caller; now
// intake pauses (new calls wait in d.paused), the old engine flushes its in-flight work,
// and afterEvent switches once it is idle (or the flush deadline answers the rest).
func (d *driver) startMigration(r *reloadReq) {
	if d.draining {
		r.reply <- fmt.Errorf("the server is shutting down")
		return
	}
	if d.migrating != nil {
		r.reply <- ErrReloadBusy
		return
	}
	r.began = d.now
	d.migrating = r
	if r.next != d.gen {
		d.m.setReady(false) // a same-plan migration (idLimit) is too short to tell load balancers
	}
	d.push(d.now+d.flushFor, timerItem{kind: tFlush, gen: d.gen.n})
}

func (d *driver) completeMigration() {
	r := d.migrating
	d.migrating = nil
	old := d.gen
	switch {
	case r.next == old:
		// The same plan on a fresh engine (idLimit).
		if err := d.attach(old); err != nil {
			d.log.Error("renewing the engine's request IDs", "err", err)
		}
	default:
		if err := d.switchTo(r.next); err != nil {
			d.log.Error("switching plans: keeping the old one", "err", err)
			r.next.exec.retire()
			r.reply <- err
		} else {
			old.exec.retire()
			d.log.Info("plan switched", "digest", r.next.digest, "paused_us", int64(d.now-r.began), "held", len(d.paused))
		}
	}
	paused := d.paused
	d.paused = nil
	for _, c := range paused {
		d.feed(c)
	}
	d.m.setReady(true)
	if d.gen == r.next {
		r.reply <- nil
	}
}

// startDrain stops intake and lets in-flight requests finish until deadline.
func (d *driver) startDrain(deadline time.Time) {
	if d.draining {
		return
	}
	d.draining = true
	d.m.setReady(false)
	if d.migrating != nil {
		if d.migrating.next != d.gen {
			d.migrating.next.exec.retire()
		}
		d.migrating.reply <- fmt.Errorf("the server is shutting down")
		d.migrating = nil
		for _, c := range d.paused {
			d.answerShutdown(c, "migration")
		}
		d.paused = nil
	}
	at := d.now + dataplane.Time(time.Until(deadline)/time.Microsecond)
	d.push(max(at, d.now), timerItem{kind: tDrain})
}

// snapshot fills the gauges that only the driver can read.
func (d *driver) snapshot() {
	g := d.gen
	v := g.eng.View()
	for i := range g.dep.Topo.Workers {
		w := &g.dep.Topo.Workers[i]
		_, _, busy := v.WorkerRunning(dataplane.WorkerID(i))
		d.m.workerQueue(w.Name, g.dep.Stages[w.Stage].Name, v.WorkerQueued(dataplane.WorkerID(i)), busy)
	}
	for i, a := range g.dep.Apps {
		d.m.queueDepth(a.Name, g.queued[i])
	}
	if eg, ok := g.eng.Policy().(EngineGauger); ok {
		d.m.llmGauges(eg, func(a dataplane.AppID) string {
			if int(a) < len(g.dep.Apps) {
				return g.dep.Apps[a].Name
			}
			return "?"
		})
	}
	if cr, ok := g.eng.Policy().(CacheConfigReporter); ok {
		d.m.llmCacheConfig(cr)
	}
	if !streamsTokens(g.eng.Policy()) && d.m.tri.t != nil {
		d.m.tritonPending(g.dep, g.queued)
	}
	d.m.setPaused(len(d.paused))
}

// do runs f on the driver goroutine and waits; it reports false when the driver has stopped.
func (d *driver) do(f func()) bool {
	ok := make(chan struct{})
	d.inMu.Lock()
	if d.inClosed {
		d.inMu.Unlock()
		return false
	}
	d.cmdQ = append(d.cmdQ, func() { f(); close(ok) })
	d.inMu.Unlock()
	d.wt.Poke()
	select {
	case <-ok:
		return true
	case <-d.stopped:
		return false
	}
}
