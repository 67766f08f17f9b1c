package qlm

import (
	"fmt"
	"slices"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/formats/llmspec"
)

// Disaggregated prefill/decode instances in the policies (llm-deploy-search §1). When a
// plan's instances carry roles, every policy runs them with per-instance FCFS queues (QLM's
// virtual queues and groups plan aggregated instances; their estimators know nothing of a
// split request) by the rules of dataplane/llm's ReplayDisagg, which this file follows
// step for step so `plan simulate` and the search's replay agree:
//
//   - a request of a model served by prefill and decode instances goes to the prefill
//     instance with the fewest outstanding prompt tokens (ties: the lower index), which runs
//     it as a one-token request (no output delay, its blocks freed as the engine says);
//   - at the end of the step that computes its first token it goes to the decode instance
//     with the fewest outstanding output tokens and waits there for its KV transfer; a
//     transfer starts when the decode instance has free KV blocks for the prompt and the
//     first token beyond those reserved, and its link is idle (one at a time): prompt tokens
//     × kv_bytes_per_token / kv_link_gbps + llm.DefaultLinkLatencyUs;
//   - when the KV lands the first token reaches the client (TTFT) and the request joins the
//     decode instance's queue with its prompt computed (after the arrival hold); its
//     admission ends the reservation and it decodes there, without prefix caching.
//
// A request of a model with aggregated instances is served as before, so a plan may mix.

// transferKeyBase offsets the timer keys of KV transfers landing at decode instances (key
// transferKeyBase + instance index), above the instances' swap-in wake keys.
const transferKeyBase = int64(1) << 40

// transferIdx is the decode instance of a transfer's timer key.
func transferIdx(key int64) (int, bool) {
	if key < transferKeyBase {
		return 0, false
	}
	return int(key - transferKeyBase), true
}

// disaggSetup gives the instances their roles and per-role engines after Attach built them:
// a prefill instance's model hands off at the end of its step (no output delay), a decode
// instance's has no prefix cache (its sequences arrive with prompts computed). It reports
// whether any instance has a role.
func (p *Policy) disaggSetup() (bool, error) {
	roles := false
	for i, in := range p.setup.Instances {
		p.inst[i].role = in.Role
		roles = roles || in.Role != ""
	}
	if !roles {
		return false, nil
	}
	if !(p.setup.KVLinkGBps > 0) {
		return false, fmt.Errorf("qlm: setup.kv_link_gbps %g: disaggregated instances need a KV link > 0 GB/s", p.setup.KVLinkGBps)
	}
	type roleKey struct {
		m    *lm
		role string
	}
	copies := map[roleKey]*lm{}
	for _, in := range p.inst {
		if in.role == "" {
			continue
		}
		// Instances of one GPU type share their profile list (Attach): a role instance's
		// copies go in a list of its own.
		in.llms = slices.Clone(in.llms)
		for k, e := range in.llms {
			key := roleKey{e.m, in.role}
			c := copies[key]
			if c == nil {
				cp, mm := *e.m, *e.m.Model
				if in.role == llmspec.RolePrefill {
					mm.OutDelay = 0
				} else {
					mm.PrefixCaching = false
				}
				cp.Model = &mm
				c = &cp
				copies[key] = c
			}
			in.llms[k].m = c
		}
	}
	if _, ok := p.q.(*plainQueue); !ok {
		p.q = &plainQueue{}
	}
	// QLM's serving operations (deadline eviction and the admission guard, QLM §5) plan
	// with estimators of aggregated instances: off over split requests.
	p.opt.evict, p.opt.guard = false, false
	return true, nil
}

// split reports whether model is served by role instances.
func (p *Policy) split(model string) bool {
	for _, in := range p.eligible(model) {
		if in.role != "" {
			return true
		}
	}
	return false
}

// disaggArrive makes arriving s a one-token request of its prefill instance when its model
// is split and it asks for more than one token.
func (p *Policy) disaggArrive(s *seq) {
	if p.disagg && s.Out > 1 && p.split(s.Model) {
		ext(s).out, s.Out = s.Out, 1
	}
}

// roleOf is the role of the instances s goes to: "" for a model without roles.
func (p *Policy) roleOf(s *seq) string {
	x := ext(s)
	switch {
	case x.decode:
		return llmspec.RoleDecode
	case x.out > 0 || (p.disagg && p.split(s.Model)):
		return llmspec.RolePrefill
	}
	return ""
}

// leastLoaded is the instance of el with role with the fewest outstanding tokens (prompt
// tokens to compute on a prefill instance, output tokens to generate on a decode one), the
// lowest index on ties; nil when none has the role.
func (p *Policy) leastLoaded(el []*instance, role string, q *plainQueue) *instance {
	var best *instance
	bestLoad := 0
	for _, in := range el {
		if in.role != role || in.down {
			continue
		}
		load := 0
		count := func(s *seq) {
			if role == llmspec.RolePrefill {
				load += s.Prompt + s.Gen - s.Comp
			} else {
				load += ext(s).outLeft(s)
			}
		}
		for _, s := range in.Running() {
			count(s)
		}
		if q.wait != nil {
			w := q.wait[in.ID]
			for i := range w.Len() {
				count(w.At(i))
			}
		}
		for _, s := range in.pending {
			count(s)
		}
		if in.landing != nil {
			count(in.landing)
		}
		if best == nil || load < bestLoad {
			best, bestLoad = in, load
		}
	}
	return best
}

// outLeft is the output tokens s still generates.
func (x *seqExt) outLeft(s *seq) int { return s.Out - s.Gen }

// prefilled hands prefill sequence s off at now: its decode side waits at the least-loaded
// decode instance for its KV transfer. The prefill engine frees s itself.
func (p *Policy) prefilled(now dataplane.Time, s *seq, out *dataplane.Decisions) {
	x := ext(s)
	d := &seq{ID: s.ID, App: s.App, Model: s.Model, Prompt: s.Prompt, Out: x.out, Gen: 1, Comp: s.Prompt,
		Arrival: s.Arrival, Deadline: s.Deadline, Prio: s.Prio, Inst: -1, Preemptions: s.Preemptions, Cached: s.Cached}
	d.Tag = &seqExt{gpu: x.gpu, decode: true}
	p.putSeq(d)
	p.queueTransfer(d, out)
}

// queueTransfer puts decode sequence d in the transfer queue of the least-loaded live decode
// instance of its model, or drops it when none is live.
func (p *Policy) queueTransfer(d *seq, out *dataplane.Decisions) {
	q := p.q.(*plainQueue)
	in := p.leastLoaded(p.eligible(d.Model), llmspec.RoleDecode, q)
	if in == nil {
		p.delSeq(d.ID)
		out.Drop(d.ID, 0, dataplane.DropWorkerFailed, 0)
		return
	}
	in.pending = append(in.pending, d)
}

// transferUs is the time to move s's prompt KV over the link.
func (p *Policy) transferUs(m *lm, prompt int) dataplane.Time {
	c := llm.Disagg{Prefill: m.Model, LinkGBps: p.setup.KVLinkGBps}
	return c.TransferUs(prompt)
}

// startTransfers starts, on every decode instance whose link is idle, the transfer at the
// head of its queue when its blocks fit beside those held and reserved.
func (p *Policy) startTransfers(now dataplane.Time, out *dataplane.Decisions) {
	if !p.disagg {
		return
	}
	for _, in := range p.inst {
		if in.role != llmspec.RoleDecode || in.down || in.landing != nil {
			continue
		}
		for len(in.pending) > 0 {
			s := in.pending[0]
			if p.seqs[s.ID] != s { // cancelled or dropped while it waited
				in.pending = in.pending[1:]
				continue
			}
			m := p.llmFor(in, s.Model)
			need := m.Blocks(s.Prompt + 1)
			if in.KVUsed()+in.resv+need > m.KVCap {
				break
			}
			in.pending = in.pending[1:]
			x := ext(s)
			x.need, x.reserved = need, true
			in.resv += need
			in.landing = s
			out.SetTimer(now+p.transferUs(m, s.Prompt), transferKeyBase+int64(in.ID))
			break
		}
	}
}

// landed ends the transfer into decode instance in at now: the first token reaches the
// client and the sequence joins the instance's queue after the arrival hold.
func (p *Policy) landed(now dataplane.Time, in *instance, out *dataplane.Decisions) {
	s := in.landing
	if s == nil {
		return
	}
	in.landing = nil
	if p.seqs[s.ID] != s || in.down {
		if in.down {
			ext(s).reserved = false // evacuateTransfers cleared the instance's reservations
		} else {
			p.unreserve(in, s)
		}
		if p.seqs[s.ID] == s { // its instance failed meanwhile: another one takes it
			p.queueTransfer(s, out)
		}
		return
	}
	s.TTFT = now - s.Arrival
	p.stats.TTFT[s.ID] = s.TTFT
	out.FirstToken(s.ID, now)
	p.q.(*plainQueue).pushTo(p, in, s)
	if p.hold <= now {
		p.hold = now + 1
		out.SetTimer(p.hold, holdKey)
	}
}

// unreserve ends s's reservation of in's KV blocks (admitted, cancelled or moved).
func (p *Policy) unreserve(in *instance, s *seq) {
	if x := ext(s); x.reserved {
		x.reserved = false
		in.resv -= x.need
	}
}

// evacuateTransfers moves a failed decode instance's waiting transfers to live decode
// instances (the one in flight follows when its timer fires).
func (p *Policy) evacuateTransfers(in *instance, out *dataplane.Decisions) {
	moved := in.pending
	in.pending, in.resv = nil, 0
	for _, s := range moved {
		if p.seqs[s.ID] == s {
			p.queueTransfer(s, out)
		}
	}
}
