package qlm

import (
	"cmp"
	"slices"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
)

// DropWouldBeLate is the reason of a request refused at arrival because the engine, as it
// stands, would finish it after its SLO, or finish late a request it admitted before that is
// on time without it (llm.Judge): `plan simulate` reports it among the drops ("rejected:
// would finish late"), `plan serve --openai` answers it with 429 and a Retry-After of the
// predicted wait. The drop's estimate is that wait (llm.Verdict.Wait): how much later the
// request would have to arrive to fit.
const DropWouldBeLate dataplane.DropReason = "would-finish-late"

// admitLate is admission at the door (policy parameter admit: "predict", the default, or
// "all", which turns it off): at every arrival the policy predicts, from the state of the
// instances that would serve the request, when it would finish (llm.Door: the engine's own
// step times over the sequences running and queued ahead of it), and refuses it at arrival
// when it would be late. Serving it would only delay the requests behind it: under sustained overload a queue
// that admits everything ends with every request late (QLM §2.3's goodput counts none of
// them). A request admitted here keeps its place: later arrivals queue behind it (FCFS) or,
// with later deadlines, after it (EDF, QLM's virtual queues), so the check protects what it
// admitted too.
//
// It returns the verdict on an instance where s fits, the soonest (for the round-robin
// baselines, the instance round-robin gives it), and false when no instance with s's model
// loaded can tell, or s has no deadline (the request is then admitted).
func (p *Policy) admitLate(s *seq) (llm.Verdict, bool) {
	var cands []*instance
	_, plain := p.q.(*plainQueue)
	if _, ok := p.q.(*shepherdQueue); ok || s.Deadline <= s.Arrival {
		// SHEPHERD's static batches run to completion: not the engine's continuous
		// batching that the prediction replays. A request without a deadline is never late.
		return llm.Verdict{}, false
	}
	if plain {
		el := p.routed(s.Model, ext(s).gpu)
		if len(el) == 0 {
			return llm.Verdict{}, false
		}
		cands = []*instance{el[p.rr%len(el)]}
	} else {
		for _, in := range p.eligible(s.Model) {
			if in.model == s.Model && !in.loading {
				cands = append(cands, in)
			}
		}
	}
	if len(cands) == 0 {
		return llm.Verdict{}, false
	}
	ahead := p.waitingAhead(s)
	var yields func(*seq) bool
	if pq, plain := p.q.(*plainQueue); (!plain && p.opt.evict) || (plain && pq.edf) {
		// QLM evicts running sequences with later deadlines for an earlier one (QLM §5), and
		// the EDF baseline preempts the latest deadline for its head.
		yields = func(r *seq) bool { return r.Deadline > s.Deadline }
	}
	best, found := llm.Verdict{}, false
	cand := map[int]int{} // instance ID -> its index in cands
	for i, in := range cands {
		cand[in.ID] = i
	}
	for ci, in := range cands {
		m := p.llmFor(in, s.Model)
		if m == nil {
			continue
		}
		mine := ahead // a single candidate serves them all
		if len(cands) > 1 {
			mine = nil
			k := 0
			for _, w := range ahead {
				if w.Inst == in.ID {
					mine = append(mine, w)
				} else if _, c := cand[w.Inst]; !c {
					// Not yet placed, or queued for an instance that cannot serve it soon
					// (loading another model): QLM moves such groups (QLM §5 pulling), so
					// the candidates share them in turn.
					if k%len(cands) == ci {
						mine = append(mine, w)
					}
					k++
				}
			}
		}
		// What is left of its SLO: a request read off the socket earlier (serve) has less.
		a := llm.Arrival{Prompt: s.Prompt, Out: s.Out, SLO: max(s.Deadline-p.now, 1), Now: p.now, Yields: yields,
			Guarded: !plain && p.opt.guard}
		if in.Busy() {
			a.Busy = max(in.iterEnd-p.now, 0)
		}
		a.Pace, a.Headroom = in.pace(), p.opt.headroom
		if in.model != s.Model || in.loading {
			// Round-robin placement may pick an instance holding another model: it loads
			// s's model first (cold, the conservative case of QLM §5's model swap).
			a.Busy += m.coldUs
		}
		v := in.door.Judge(m.Model, &in.Engine, mine, a)
		if !found || (best.Late && !v.Late) || (best.Late == v.Late && v.E2E < best.E2E) {
			best, found = v, true
		}
	}
	return best, found
}

// waitingAhead lists the waiting sequences of s's model (queued, holding no KV) that would be
// admitted before s: every one under FCFS and priority queues (vLLM's order puts an arrival
// last), those with deadlines no later than s's under EDF and QLM's virtual queues (ordered
// by the plan generator's EDF-based plan, QLM §7); in that order. The list is a view of the
// memo (aheadMemo), read before the next change to the policy's state.
func (p *Policy) waitingAhead(s *seq) []*seq {
	all := p.fcfsAhead()
	m := p.ahead[s.Model]
	if ev := p.engineVer(); m == nil || m.seqsVer != p.seqsVer || m.engVer != ev {
		if m == nil {
			if p.ahead == nil {
				p.ahead = map[string]*aheadMemo{}
			}
			m = &aheadMemo{}
			p.ahead[s.Model] = m
		}
		m.seqsVer, m.engVer, m.list = p.seqsVer, ev, m.list[:0]
		for _, w := range p.seqs {
			// The running (holding KV), swapped and finished are out on the fields of the
			// record's first line (llm.Seq's layout), most of the table at every step; the
			// model and the policy's tag, two lines further, are read of the rest alone.
			if w.KV != 0 || w.Swapped || w.Fin || w.Model != s.Model {
				continue
			}
			if x, _ := w.Tag.(*seqExt); x != nil && x.decode {
				continue
			}
			m.list = append(m.list, w)
		}
		slices.SortFunc(m.list, p.aheadOrder(all))
	}
	if all {
		return m.list
	}
	n, _ := slices.BinarySearchFunc(m.list, s.Deadline, func(w *seq, d dataplane.Time) int {
		return cmp.Compare(w.Deadline, d+1) // the first with a later deadline
	})
	return m.list[:n]
}

// aheadMemo is the waiting queue of one model in admission's order (waitingAhead), as it
// stood when no sequence had entered or left the policy's table since (seqsVer) and no
// engine had moved (engVer: what makes a sequence hold KV, swap or finish). A request the
// door admits is inserted in place (aheadAdmitted): arrivals between two steps then cost a
// binary search, not a pass over the table and a sort.
type aheadMemo struct {
	seqsVer, engVer uint64
	list            []*seq
}

// fcfsAhead: every waiting request is ahead of an arrival (FCFS and priority queues), not
// only those with deadlines no later than its (EDF, QLM).
func (p *Policy) fcfsAhead() bool {
	pq, ok := p.q.(*plainQueue)
	return ok && !pq.edf
}

// aheadOrder is waitingAhead's order: by deadline (unless all), arrival, ID.
func (p *Policy) aheadOrder(all bool) func(a, b *seq) int {
	return func(a, b *seq) int {
		if !all {
			if c := cmp.Compare(a.Deadline, b.Deadline); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(a.Arrival, b.Arrival); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	}
}

// engineVer sums the instances' engine versions: it moves when any of them does.
func (p *Policy) engineVer() uint64 {
	var v uint64
	for _, in := range p.inst {
		v += in.Version()
	}
	return v
}

// putSeq and delSeq are the only changes to the sequence table (seqsVer counts them).
func (p *Policy) putSeq(s *seq) {
	p.seqs[s.ID] = s
	p.seqsVer++
}

func (p *Policy) delSeq(id dataplane.ReqID) {
	if _, ok := p.seqs[id]; ok {
		delete(p.seqs, id)
		p.seqsVer++
	}
}

// aheadAdmitted enters s, just admitted at the door, in the memos that were current before:
// it waits (no KV yet) in its model's queue, and the other models' are unchanged.
func (p *Policy) aheadAdmitted(s *seq) {
	ev := p.engineVer()
	p.putSeq(s)
	for model, m := range p.ahead {
		if m.seqsVer != p.seqsVer-1 || m.engVer != ev {
			continue
		}
		m.seqsVer = p.seqsVer
		if model == s.Model {
			order := p.aheadOrder(p.fcfsAhead())
			i, _ := slices.BinarySearchFunc(m.list, s, order)
			m.list = slices.Insert(m.list, i, s)
		}
	}
}

// Door implements dataplane.Door: QLM's admission is per request, at arrival (admitLate),
// from the request's own tokens, which a door that refuses before the body is read does not
// know. So the door never closes, and a wall-clock server refuses exactly what the simulator
// refuses; the driver's own estimate for policies without a door (the requests queued at the
// app's planned rate) would refuse what the engine can still serve in time, or admit what it
// cannot.
func (p *Policy) Door(dataplane.View, dataplane.AppID, dataplane.Time, dataplane.Time) (bool, dataplane.DropReason, dataplane.Time) {
	return true, "", 0
}

// observePace records, as an iteration ends at now, how long it took against the time its
// profile gave it. In the simulator the two are equal; a wall-clock server on a loaded
// machine ends steps late (timers fire late, the driver is starved), and admission then
// predicts at that pace (llm.Arrival.Pace), so what it admits stays on time there too.
func (in *instance) observePace(now dataplane.Time) {
	nominal := float64(in.iterEnd - in.iterStart)
	if nominal <= 0 || now < in.iterEnd {
		return
	}
	const decay = 0.95 // about the last 20 steps
	in.paceReal = in.paceReal*decay + float64(now-in.iterStart)
	in.paceNominal = in.paceNominal*decay + nominal
}

// pace is the ratio of observed to profiled step time (1: on profile, never below).
func (in *instance) pace() float64 {
	if in.paceNominal <= 0 {
		return 1
	}
	return max(in.paceReal/in.paceNominal, 1)
}
