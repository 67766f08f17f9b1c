package llm

import (
	"fmt"
	"math"
	"slices"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// Disaggregated prefill/decode serving (llm-deploy-search §1: DistServe, Splitwise, Dynamo).
// P prefill instances and D decode instances, each an Engine following the step rules of
// this package. The rules ReplayDisagg implements:
//
//   - Routing: a request goes to the prefill instance with the fewest outstanding prompt
//     tokens (queued or mid-prompt), and once prefilled to the decode instance with the
//     fewest outstanding output tokens (waiting for its KV, queued or decoding); ties go to
//     the lower index. Each side queues FCFS (vLLM's order, digest §1 "Runtime: FCFS").
//   - Prefill: the prefill engine runs the request as a one-token request: the step that
//     computes its last prompt token computes its first token, and its blocks are free at
//     that step's end (release as the engine says). Prefix caching applies there only.
//   - KV transfer: the prompt's KV, prompt tokens × kv_bytes_per_token, moves over the link
//     into its decode instance: bytes / bandwidth + DefaultLinkLatencyUs. The decode side
//     pulls (DistServe §4.3: the prefill instance's memory absorbs bursts): a transfer starts
//     only when the decode instance has free KV blocks for the prompt plus its first token,
//     counting those reserved by transfers in flight, and its link is idle (one transfer at a
//     time per decode instance, FIFO); until then the request waits, never lost. The whole
//     transfer is on the path after the prefill step (Splitwise's serial mode, §1): the
//     layer-wise overlap of Splitwise §4.3 would hide part of it behind the prefill compute,
//     which the pull rule cannot promise (the decode blocks may be taken while the prefill
//     runs), so this is the conservative bound, longer by at most bytes / bandwidth.
//   - First token: streamed by the decode instance when the KV lands (vLLM's and Dynamo's
//     proxies answer from the decode side), so TTFT includes the transfer and any wait for
//     decode blocks (§1 [inf]: "charge to TTFT if token 1 is streamed by the decode worker").
//     A one-token request is answered by its prefill instance (nothing to decode, no transfer).
//   - Decode: the request joins the decode queue holding its prompt as computed and one token
//     generated; its admission takes blocks for them (the reservation then ends) and it
//     decodes under the decode engine's rules (a recompute preemption recomputes there).
//
// Everything is deterministic: no random choice.

// DefaultLinkLatencyUs is the fixed cost of one KV transfer: the point-to-point latency of
// AIConfigurator's system files (llm-deploy-search §1, "p2p latency 10 µs").
const DefaultLinkLatencyUs = 10

// Disagg is a disaggregated deployment of one model: Prefill on P instances, Decode on D
// (another GPU type or tensor parallelism, the same model), and the KV link.
type Disagg struct {
	Prefill, Decode *Model
	P, D            int
	// LinkGBps is the bandwidth of each decode instance's inbound KV link in GB/s (the
	// cluster's kv_link_gbps); LinkLatencyUs the fixed cost per transfer (0: the default).
	LinkGBps      float64
	LinkLatencyUs dataplane.Time
	// Watch, when set, is told each request's final result and stops the replay (as
	// ReplayWatched).
	Watch Watch
}

// DisaggStats are a disaggregated replay's counts: the engines' counters per side, the KV
// transfers, their total time, and the total time requests waited for decode blocks or the
// link after their prefill.
type DisaggStats struct {
	Prefill, Decode *Counters
	Transfers       int
	TransferUs      dataplane.Time
	WaitUs          dataplane.Time
}

// KVBytesPerToken is the KV one token takes (kv_bytes_per_token of the prefill profile, else
// the decode one's): 2 (K and V) × layers × kv_heads × head_dim × bytes per element, the
// whole model's across its GPUs (llm-deploy-search §1, "KV transfer").
func (c *Disagg) KVBytesPerToken() int64 {
	if c.Prefill != nil && c.Prefill.KVBytes > 0 {
		return c.Prefill.KVBytes
	}
	if c.Decode != nil {
		return c.Decode.KVBytes
	}
	return 0
}

// TransferUs is the time to move the KV of prompt tokens over the link, in whole µs.
func (c *Disagg) TransferUs(prompt int) dataplane.Time {
	lat := c.LinkLatencyUs
	if lat <= 0 {
		lat = DefaultLinkLatencyUs
	}
	bytes := float64(int64(prompt) * c.KVBytesPerToken())
	return dataplane.Time(math.Ceil(bytes/(c.LinkGBps*1e3))) + lat
}

// check reports a deployment that cannot run.
func (c *Disagg) check() error {
	switch {
	case c.Prefill == nil || c.Decode == nil:
		return fmt.Errorf("llm: disaggregated deployment needs a prefill and a decode model")
	case c.P < 1 || c.D < 1:
		return fmt.Errorf("llm: disaggregated deployment needs >= 1 prefill and >= 1 decode instance (have %d, %d)", c.P, c.D)
	case !(c.LinkGBps > 0) || math.IsInf(c.LinkGBps, 0):
		return fmt.Errorf("llm: kv_link_gbps %g: must be > 0", c.LinkGBps)
	case c.KVBytesPerToken() <= 0:
		return fmt.Errorf("llm: model %q: kv_bytes_per_token must be > 0 to move KV between instances", c.Prefill.Name)
	case c.Prefill.Name != c.Decode.Name:
		return fmt.Errorf("llm: prefill model %q and decode model %q differ", c.Prefill.Name, c.Decode.Name)
	}
	return nil
}

// ReplayDisaggProfiles replays reqs on P prefill instances of profile pre and D decode
// instances of profile dec joined by KV links of linkGBps GB/s: the entry point of the
// deployment search (ReplayDisagg with the engines the profiles describe).
func ReplayDisaggProfiles(pre, dec *formats.LLMProfile, p, d int, linkGBps float64, reqs []Request) ([]Result, *DisaggStats, error) {
	return ReplayDisagg(Disagg{Prefill: NewModel(pre), Decode: NewModel(dec), P: p, D: d, LinkGBps: linkGBps}, reqs)
}

// dslot is one engine of a disaggregated replay with its queue and pending events (as
// Replay's loop keeps for its one engine).
type dslot struct {
	e                     *Engine
	m                     *Model
	q                     *Ordered
	end, oend, wake, hold dataplane.Time
	// resv is the KV reserved by transfers in flight or landed and not yet admitted
	// (decode); link when its link is idle (decode); pending the prefilled requests waiting
	// to transfer, FIFO (decode).
	resv    int
	link    dataplane.Time
	pending []int
	// waiting are the landed requests still holding a reservation (queued at the decode
	// engine, not yet admitted): unreserve looks at these, not at every running sequence.
	waiting []int
}

// dreq is one request's state across the two sides.
type dreq struct {
	pre, dec *Seq
	land     dataplane.Time
	need     int // decode KV reserved for it while reserved
	reserved bool
	d        int
}

// disaggRun is one replay's state.
type disaggRun struct {
	c     Disagg
	reqs  []Request
	res   []Result
	st    []dreq
	pre   []*dslot
	dec   []*dslot
	at    map[*Seq]int
	land  []int // requests whose transfer is in flight, by landing time then index
	stats *DisaggStats
	stop  bool // the watch stopped the replay
}

// ReplayDisagg runs reqs on the disaggregated deployment c in virtual time, by the rules at
// the top of this file, and returns each request's Result (FirstToken is TTFT's end, Done
// E2E's; TPOT = (Done − FirstToken)/(Out − 1)) and the run's counts. Requests that either
// side can never admit are refused at arrival.
func ReplayDisagg(c Disagg, reqs []Request) ([]Result, *DisaggStats, error) {
	if err := c.check(); err != nil {
		return nil, nil, err
	}
	// The prefill side hands a request off at the end of the step that computed its first
	// token (no output delay: the token travels with the KV); the decode side has no prefix
	// cache (its requests arrive with their prompts computed).
	pm, dm := *c.Prefill, *c.Decode
	pm.OutDelay = 0
	dm.PrefixCaching = false
	c.Prefill, c.Decode = &pm, &dm
	r := &disaggRun{c: c, reqs: reqs, res: make([]Result, len(reqs)), st: make([]dreq, len(reqs)), at: map[*Seq]int{},
		stats: &DisaggStats{Prefill: &Counters{}, Decode: &Counters{}}}
	mk := func(m *Model, n int, ctr *Counters) []*dslot {
		out := make([]*dslot, n)
		for i := range out {
			q := &Ordered{Less: ByArrival, FrontRequeue: true}
			out[i] = &dslot{e: &Engine{ID: i, Ctr: ctr}, m: m, q: q,
				end: dataplane.Never, oend: dataplane.Never, wake: dataplane.Never, hold: -1}
			out[i].e.SetScheduler(q)
		}
		return out
	}
	r.pre, r.dec = mk(&pm, c.P, r.stats.Prefill), mk(&dm, c.D, r.stats.Decode)
	for i, q := range reqs {
		r.res[i] = Result{ID: q.ID, FirstToken: dataplane.Never, Done: dataplane.Never} // unanswered until its tokens come (for good if a watch stops the replay first)
	}
	r.loop()
	for i := range r.st {
		for _, s := range []*Seq{r.st[i].pre, r.st[i].dec} {
			if s != nil {
				r.res[i].Preemptions += s.Preemptions
				r.res[i].Cached += s.Cached
			}
		}
	}
	return r.res, r.stats, nil
}

// loop is the event loop: at each instant, arrivals first, then KV landings, then each
// engine's step end and output-only step end (prefill instances, then decode, by index),
// then transfers that may start, then steps on idle engines.
func (r *disaggRun) loop() {
	order := make([]int, len(r.reqs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(r.reqs[a].Arrival - r.reqs[b].Arrival) })
	next := 0
	all := append(append([]*dslot(nil), r.pre...), r.dec...)
	for {
		now := dataplane.Never
		if next < len(order) {
			now = r.reqs[order[next]].Arrival
		}
		if len(r.land) > 0 {
			now = min(now, r.st[r.land[0]].land)
		}
		for _, s := range all {
			now = min(now, s.end, s.oend, s.wake)
			if s.hold >= 0 {
				now = min(now, s.hold)
			}
		}
		if now == dataplane.Never || r.stop {
			return
		}
		for next < len(order) && r.reqs[order[next]].Arrival == now {
			r.arrive(now, order[next])
			next++
		}
		for len(r.land) > 0 && r.st[r.land[0]].land == now {
			i := r.land[0]
			r.land = r.land[1:]
			r.landed(now, i)
		}
		ended := make([]bool, len(all))
		for k, s := range all {
			ended[k] = r.events(now, s)
		}
		for d := range r.dec {
			r.startTransfers(now, d)
		}
		for k, s := range all {
			r.stepIdle(now, s, ended[k])
		}
		r.unreserve()
	}
}

// arrive routes request i to a prefill instance, or refuses it.
func (r *disaggRun) arrive(now dataplane.Time, i int) {
	q := r.reqs[i]
	if r.c.Prefill.Refuses(q.Prompt, 1) || (q.Out > 1 && r.c.Decode.Refuses(q.Prompt, q.Out)) {
		r.res[i].Refused = true
		r.final(i)
		return
	}
	p := r.leastLoaded(r.pre, false)
	s := &Seq{ID: q.ID, Model: r.c.Prefill.Name, Prompt: q.Prompt, Out: 1, Arrival: q.Arrival, Deadline: q.Deadline, Prio: q.Prio, Inst: -1, Prefix: q.Prefix}
	r.st[i].pre, r.at[s] = s, i
	sl := r.pre[p]
	sl.q.Push(s)
	sl.waiting = append(sl.waiting, i)
	if sl.hold <= now {
		sl.hold = now + 1 // the arrival hold, as Replay
	}
}

// leastLoaded is the instance with the fewest outstanding tokens, the lowest index on ties:
// on a prefill instance the prompt tokens its queued and running requests still compute, on
// a decode instance the output tokens its requests still generate, those waiting for or in
// transfer included.
func (r *disaggRun) leastLoaded(ss []*dslot, decode bool) int {
	best, bestLoad := 0, 0
	for i, sl := range ss {
		load := 0
		count := func(s *Seq) {
			if decode {
				load += s.Out - s.Gen
			} else {
				load += s.Prompt + s.Gen - s.Comp
			}
		}
		for _, s := range sl.e.running {
			count(s)
		}
		for k := range sl.q.Len() {
			count(sl.q.At(k))
		}
		if decode {
			for _, k := range sl.pending {
				load += r.reqs[k].Out - 1
			}
			for _, k := range r.land {
				if r.st[k].d == i {
					load += r.reqs[k].Out - 1
				}
			}
		}
		if i == 0 || load < bestLoad {
			best, bestLoad = i, load
		}
	}
	return best
}

// events applies what ends at now on s: its step, its output-only step, its hold and wake.
// It reports whether a real step ended.
func (r *disaggRun) events(now dataplane.Time, s *dslot) bool {
	ended := false
	if s.end == now {
		s.e.Done(now, s.m, r.emit(now, s))
		s.end, ended = dataplane.Never, true
	}
	if s.oend == now {
		s.oend = dataplane.Never
		if s.e.EndOutputStep(now, r.emit(now, s)) {
			s.oend = s.e.OutputStep(now, s.m, r.emit(now, s))
		}
	}
	if s.hold == now {
		s.hold = -1
	}
	if s.wake == now {
		s.wake = dataplane.Never
	}
	return ended
}

// stepIdle starts s's next step when it is idle and may (Replay's rule), else an output-only
// step when a real one ended and none follows.
func (r *disaggRun) stepIdle(now dataplane.Time, s *dslot, ended bool) {
	e := s.e
	if !e.busy && (s.hold <= now || len(e.running) > 0 || len(e.swapped) > 0) {
		it, ok, w := e.Step(now, s.m, true)
		if ok {
			s.end = now + max(it.Dur, 1)
		} else if w != dataplane.Never {
			s.wake = w
		}
	}
	if ended {
		s.oend = e.OutputStep(now, s.m, r.emit(now, s))
	}
}

// emit handles the outputs s's engine delivers at now: a prefill instance's first token
// hands the request off; a decode instance's last token completes it.
func (r *disaggRun) emit(now dataplane.Time, s *dslot) func(Output) {
	return func(o Output) {
		i := r.at[o.S]
		if o.S == r.st[i].pre {
			if o.First {
				r.prefilled(now, i)
			}
			return
		}
		if o.Last {
			r.res[i].Done = now
			r.final(i)
		}
	}
}

// final tells the watch, if any, that request i's result is final.
func (r *disaggRun) final(i int) {
	r.stop = r.stop || (r.c.Watch != nil && r.c.Watch(i, &r.res[i]))
}

// prefilled hands request i off at now: done for a one-token request, else queued for a KV
// transfer to the least-loaded decode instance.
func (r *disaggRun) prefilled(now dataplane.Time, i int) {
	q := r.reqs[i]
	r.res[i].Prefilled = now
	if q.Out <= 1 {
		r.res[i].FirstToken, r.res[i].Done = now, now
		r.final(i)
		return
	}
	d := r.leastLoaded(r.dec, true)
	r.st[i].d = d
	r.dec[d].pending = append(r.dec[d].pending, i)
}

// startTransfers starts the transfers into decode instance d that its blocks and link allow,
// in FIFO order.
func (r *disaggRun) startTransfers(now dataplane.Time, d int) {
	sl := r.dec[d]
	for len(sl.pending) > 0 && sl.link <= now {
		i := sl.pending[0]
		q := r.reqs[i]
		need := sl.m.Blocks(q.Prompt + 1)
		if sl.e.kvUsed+sl.resv+need > sl.m.KVCap {
			return
		}
		sl.pending = sl.pending[1:]
		dur := r.c.TransferUs(q.Prompt)
		sl.resv += need
		sl.link = now + dur
		st := &r.st[i]
		st.need, st.reserved, st.land = need, true, now+dur
		r.stats.Transfers++
		r.stats.TransferUs += dur
		r.stats.WaitUs += now - r.res[i].Prefilled
		k, _ := slices.BinarySearchFunc(r.land, i, func(a, b int) int {
			if r.st[a].land != r.st[b].land {
				return int(r.st[a].land - r.st[b].land)
			}
			return a - b
		})
		r.land = slices.Insert(r.land, k, i)
	}
}

// landed queues request i at its decode instance: its prompt is computed and its first
// token, streamed now, generated.
func (r *disaggRun) landed(now dataplane.Time, i int) {
	q := r.reqs[i]
	st := &r.st[i]
	sl := r.dec[st.d]
	s := &Seq{ID: q.ID, Model: r.c.Decode.Name, Prompt: q.Prompt, Out: q.Out, Gen: 1, Comp: q.Prompt, Arrival: q.Arrival,
		Deadline: q.Deadline, Prio: q.Prio, Inst: -1}
	st.dec, r.at[s] = s, i
	r.res[i].Landed, r.res[i].FirstToken = now, now
	sl.q.Push(s)
	sl.waiting = append(sl.waiting, i)
	if sl.hold <= now {
		sl.hold = now + 1
	}
}

// unreserve ends the reservations of landed requests their decode engine admitted (a
// sequence holds KV from its admission on; a step admits and preempts in separate calls, and
// unreserve runs after every one, so an admitted sequence is seen holding KV).
func (r *disaggRun) unreserve() {
	for _, sl := range r.dec {
		keep := sl.waiting[:0]
		for _, i := range sl.waiting {
			st := &r.st[i]
			if st.reserved && st.dec.KV > 0 {
				st.reserved = false
				sl.resv -= st.need
				continue
			}
			if st.reserved {
				keep = append(keep, i)
			}
		}
		sl.waiting = keep
	}
}
