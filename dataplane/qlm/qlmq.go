package qlm

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/llm"
)

// group is a request group (QLM §4, Def. 4.1): waiting requests of one class (so one model and SLO)
// and one prompt-length bucket, FCFS inside, capped at δ·avg_batch members; its deadline is
// the earliest member deadline (QLM §7 penalises each group against its SLO).
type group struct {
	id       int
	app      dataplane.AppID
	model    string
	bucket   int
	members  []*seq
	size     int
	deadline dataplane.Time
	vq       int
	started  bool
	mu, sd   float64
	maxOut   int
	// prio: members share one priority (strict priorities, QLM App. A.3).
	prio int32
	// gpu: members share one routed GPU type (route.go).
	gpu string
}

// qlmQueue is QLM's queueing layer: request groups in per-instance virtual queues whose order
// is the plan (QLM §4, §7).
type qlmQueue struct {
	vq   [][]*group
	open map[groupKey]*group
	next int
	// headChanged marks instances whose head group a replan changed (eviction trigger, QLM §5).
	headChanged []bool
	lastSolve   dataplane.Time
	overloaded  bool
	rct         *RCT
	// waiting counts the members of the groups in the virtual queues: at 0 no instance can
	// pull or split anything (stepset.go).
	waiting int
	// queued has a bit set for every virtual queue that may hold a group (set by every
	// append, cleared when pull or split find the queue empty): pull and split visit only
	// those instead of every instance, in the same index order.
	queued []uint64
	// none: kinds of instance whose pull and split found nothing since the last change.
	none pullMemo
}

// groupKey is what requests share to join one open group: class, prompt-length bucket and
// priority.
type groupKey struct {
	app, bucket int
	prio        int32
	gpu         string
}

func lenBucket(prompt int) int {
	b := 0
	for x := prompt; x > 128; x >>= 1 {
		b++
	}
	return b
}

func (q *qlmQueue) init(p *Policy) {
	if q.vq == nil {
		q.vq = make([][]*group, len(p.inst))
		q.open = map[groupKey]*group{}
		q.headChanged = make([]bool, len(p.inst))
		q.queued = make([]uint64, (len(p.inst)+63)/64)
		q.lastSolve = -p.setup.replanGap()
		q.rct = NewRCT(p.setup.Confidence)
	}
}

func (p *Policy) delta() float64 {
	if p.setup.Delta > 0 {
		return p.setup.Delta
	}
	return 4
}

func (q *qlmQueue) add(p *Policy, now dataplane.Time, s *seq) {
	q.init(p)
	key := groupKey{int(s.App), lenBucket(s.Prompt), s.Prio, ext(s).gpu}
	g := q.open[key]
	cap := p.capFor(s.Model)
	if g == nil || g.size >= cap || g.started {
		c := &p.class[s.App]
		g = &group{id: q.next, app: s.App, model: s.Model, bucket: key.bucket, deadline: dataplane.Never, mu: c.Out.Mean, sd: c.Out.Std, maxOut: c.Out.Max, prio: s.Prio, gpu: ext(s).gpu}
		q.next++
		q.open[key] = g
		g.vq = q.place(p, now, g)
		// Strict priorities (QLM App. A.3): a new group goes behind every group of its priority
		// or a more urgent one, ahead of the less urgent ones.
		v := q.vq[g.vq]
		k := len(v)
		for k > 0 && v[k-1].prio > g.prio {
			k--
		}
		q.vq[g.vq] = append(v[:k], append([]*group{g}, v[k:]...)...)
		q.mark(g.vq)
	}
	g.members = append(g.members, s)
	p.forgetDrain(g.vq)
	g.size++
	q.waiting++
	p.changed()
	p.touch(g.vq)
	ext(s).group = g
	s.Inst = g.vq
	g.deadline = min(g.deadline, s.Deadline)
	q.predictOne(p, now, s)
	if q.replanDue(p, now) {
		q.replan(p, now)
	}
}

// place picks the virtual queue of a new group: least estimated drain time among instances
// that can host its model (QLM), or naive round-robin / random assignment (baselines).
func (q *qlmQueue) place(p *Policy, now dataplane.Time, g *group) int {
	el := p.routed(g.model, g.gpu)
	switch p.opt.placement {
	case "rr":
		p.rr++
		return el[(p.rr-1)%len(el)].ID
	case "random":
		return el[int(llm.U01(uint64(g.id), p.opt.seed)*float64(len(el)))%len(el)].ID
	}
	p.dm.placed(now)
	best, bt := el[0].ID, math.Inf(1)
	// Each instance's drain and tail are kept between calls (drainAll); a kept one is read
	// here (drainAll checks it under checkMemo).
	kept := p.memoOn && !p.checkMemo
	ids, mask := p.placeIDs(el)
	if kept && mask != nil {
		return q.placeKept(p, g, mask, best)
	}
	okw, ts := p.dm.ok, p.dm.t
	for _, id := range ids {
		i := int(id)
		var t float64
		var prev string
		// A model swap only adds time (swapSeconds > 0): an instance whose drain reaches
		// the best so far cannot win.
		if u := uint(id); kept && u/64 < uint(len(okw)) && okw[u/64]&(1<<(u%64)) != 0 && u < uint(len(ts)) {
			if t = ts[u]; t >= bt {
				continue
			}
			prev = p.dm.tail[u]
		} else if t, prev = q.drainAll(p, i); t >= bt {
			continue
		}
		// On an instance holding another model the group starts only after its own model
		// replaces that one (as pull counts it): without this an idle instance of another
		// model wins any tie with a busy one of the group's model and evicts its model for a
		// group that never needed it (on the five-request trace a batch request
		// arriving 50 µs after a chat request sent vicuna's instance into an 11.8 s load, and
		// the vicuna request that followed waited 14 s; serve's real-time arrivals hit it, the
		// simulator's same-instant ones did not). An empty instance (back from a failure)
		// evicts nothing: loading there runs beside the busy ones, as before.
		if prev != "" && g.model != prev {
			t += p.swapKept(i, g.model)
		}
		if t < bt {
			best, bt = i, t
			// No later instance drains below zero (Policy.drainFloor), and only one that
			// drains below the best wins: the rest of the pass (and the recompute of their
			// forgotten drains) cannot change the choice.
			if bt <= 0 && p.drainFloor && p.memoOn {
				break
			}
		}
	}
	return best
}

// drain is the expected time for instance in to finish its running batch and the first k
// groups of its virtual queue (Eq. 2 drain times plus model swaps).
func (q *qlmQueue) drain(p *Policy, in *instance, k int) float64 {
	t := q.residual(p, in)
	prev := in.upcoming()
	for _, g := range q.vq[in.ID][:k] {
		if g.model != prev {
			t += p.swapSeconds(in, g.model)
			prev = g.model
		}
		mw, _ := q.rct.Drain(len(g.members), g.mu, g.sd, p.theta(in, g.model))
		t += mw
	}
	return t
}

// residual is R_g: the expected remaining work of the running batch (QLM §6 [ours]: the
// remaining tokens E[O − k] at throughput Θ), plus the external load its engine reported
// (externalSeconds: zero unless ObserveInstance was called).
func (q *qlmQueue) residual(p *Policy, in *instance) float64 {
	// The value is kept until the instance changes (instance.resOK): place and the violation
	// check read every instance's at each arrival, and every pull the queued ones', which made
	// the simulation's cost grow faster than linearly with instances.
	if p.memoOn && in.resOK {
		if p.checkMemo && q.residualNow(p, in) != in.res {
			panic(fmt.Sprintf("qlm: instance %d: kept residual %v, now %v", in.ID, in.res, q.residualNow(p, in)))
		}
		return in.res
	}
	r := q.residualNow(p, in)
	if p.memoOn {
		in.res, in.resOK = r, true
	}
	return r
}

func (q *qlmQueue) residualNow(p *Policy, in *instance) float64 {
	// externalSeconds is 0 without an observation (externalRequests): no call then.
	ext := 0.0
	if in.observed > 0 {
		ext = p.externalSeconds(in)
	}
	m := p.llmFor(in, in.model)
	if m == nil {
		return ext
	}
	var tok float64
	for _, s := range in.Running() {
		tok += atLeast1(p.class[s.App].Out.Mean - float64(s.Gen))
	}
	for _, s := range in.Swapped() {
		tok += atLeast1(p.class[s.App].Out.Mean - float64(s.Gen))
	}
	// theta(in, in.model), with the profile already found.
	th := m.thetaTokPerSec
	if in.satDecodes >= 50 && in.satTime > 0 {
		th = in.satTok / in.satTime
	}
	r := tok / th
	if ext > 0 {
		r += ext
	}
	return r
}

// atLeast1 is math.Max(x, 1) (NaN stays NaN) without its call: residualNow runs it per
// running sequence of every instance whose drain place recomputes.
func atLeast1(x float64) float64 {
	if x < 1 {
		return 1
	}
	return x
}

func (p *Policy) swapSeconds(in *instance, model string) float64 {
	m := p.llmFor(in, model)
	if p.opt.warm {
		for _, w := range in.warm {
			if w == model {
				return float64(m.warmUs) / 1e6
			}
		}
	}
	return float64(m.coldUs) / 1e6
}

// violation is the cheap RCT check (QLM §4, §6): does any group of any virtual queue miss its
// deadline at the Δ-quantile of its completion time? Only instances whose queue may hold a
// group are visited (nextQueued; the others have no group to be late).
func (q *qlmQueue) violation(p *Policy, now dataplane.Time) bool {
	for oi := q.nextQueued(p, 0); oi >= 0; oi = q.nextQueued(p, oi+1) {
		in := p.inst[oi]
		t := q.residual(p, in)
		prev := in.upcoming()
		for _, g := range q.vq[in.ID] {
			if len(g.members) == 0 {
				continue
			}
			m := p.llmFor(in, g.model)
			if g.model != prev {
				t += p.swapSeconds(in, g.model)
				prev = g.model
			}
			th := p.theta(in, g.model)
			c := q.rct.Completion(len(g.members), g.mu, g.sd, g.maxOut, m, th, p.tokenSeconds(in, g.model))
			if float64(now)/1e6+t+c.Q > float64(g.deadline)/1e6 {
				return true
			}
			wm, wsd := q.rct.Drain(len(g.members), g.mu, g.sd, th)
			t += wm + q.rct.Z*wsd
		}
	}
	return false
}

// replan snapshots the waiting groups, solves the plan generator and installs the new
// virtual-queue orders (QLM §7). Started groups stay on their instance (QLM §5).
func (q *qlmQueue) replan(p *Policy, now dataplane.Time) {
	p.changed()
	p.forgetDrains()
	q.lastSolve = now
	p.stats.Replans++
	oldHead := make([]*seq, len(p.inst))
	for i, v := range q.vq {
		for _, g := range v {
			if len(g.members) > 0 {
				oldHead[i] = g.members[0]
				break
			}
		}
	}
	var gs []*group
	if p.setup.Grouping == "kmeans" {
		gs = q.regroup(p)
	} else {
		for _, v := range q.vq {
			for _, g := range v {
				if len(g.members) > 0 {
					gs = append(gs, g)
				}
			}
		}
	}
	if len(gs) == 0 {
		return
	}
	prob := &PlanProblem{Now: float64(now) / 1e6}
	for _, in := range p.inst {
		pi := PlanInstance{Loaded: in.upcoming(), Residual: q.residual(p, in)}
		prob.Instances = append(prob.Instances, pi)
	}
	// A failed instance takes no group (no cost there: infeasible, as for a GPU without a
	// profile of the group's model).
	for _, g := range gs {
		pg := PlanGroup{ID: g.id, Model: g.model, Deadline: float64(g.deadline) / 1e6, Pinned: -1, Weight: len(g.members)}
		if g.started || p.opt.placement != "plan" {
			pg.Pinned = g.vq
		}
		for _, in := range p.inst {
			m := p.llmFor(in, g.model)
			if m == nil || in.down || !p.allowed(in, g.model, g.gpu) {
				pg.Cost = append(pg.Cost, nil)
				continue
			}
			th := p.theta(in, g.model)
			wm, wsd := q.rct.Drain(len(g.members), g.mu, g.sd, th)
			c := q.rct.Completion(len(g.members), g.mu, g.sd, g.maxOut, m, th, p.tokenSeconds(in, g.model))
			pg.Cost = append(pg.Cost, &GroupCost{WMean: wm, WQ: wm + q.rct.Z*wsd, CMean: c.Mean, CQ: c.Q, Swap: p.swapSeconds(in, g.model)})
		}
		prob.Groups = append(prob.Groups, pg)
	}
	// By default the decomposed generator alone (QLM §7 [ours]): deterministic, bounded by its
	// step budget, milliseconds at 400 groups. A set-up that names max_binaries also solves
	// the MILP of QLM §7 for problems up to that size, warm-started from it, inside solve_ms of
	// wall clock (which makes runs depend on the machine's speed).
	po := PlanOptions{TimeLimit: 100 * time.Millisecond, MaxBinaries: -1, SkipStrict: q.overloaded}
	if p.setup.SolveMs > 0 {
		po.TimeLimit = time.Duration(p.setup.SolveMs * float64(time.Millisecond))
	}
	if p.setup.MaxBinaries > 0 {
		po.MaxBinaries = p.setup.MaxBinaries
	}
	sol := SolvePlan(prob, po)
	if sol.Fallback {
		p.stats.PlanFallbacks++
	}
	// Stay in soft mode while the soft plan still predicts violations.
	q.overloaded = sol.Violations > 0
	for i := range q.vq {
		q.vq[i] = q.vq[i][:0]
	}
	for g, order := range sol.Queues {
		for _, k := range order {
			gr := gs[k]
			gr.vq = g
			for _, s := range gr.members {
				s.Inst = g
			}
			q.vq[g] = append(q.vq[g], gr)
			q.mark(g)
		}
		// Strict priorities (QLM App. A.3): the plan chooses the assignment and the order
		// within a priority; the relative order of priorities is fixed (lower first).
		sort.SliceStable(q.vq[g], func(a, b int) bool { return q.vq[g][a].prio < q.vq[g][b].prio })
	}
	for i, v := range q.vq {
		if len(v) > 0 && len(v[0].members) > 0 && v[0].members[0] != oldHead[i] {
			q.headChanged[i] = true
		}
	}
	q.recount()
	p.touchAll()
	q.predict(p, now)
}

// predictOne records the RCT estimate of a new request's completion where it joined: the
// same terms as predict, for its group's place in its virtual queue.
func (q *qlmQueue) predictOne(p *Policy, now dataplane.Time, s *seq) {
	g := ext(s).group
	in := p.inst[g.vq]
	k := 0
	for k < len(q.vq[in.ID]) && q.vq[in.ID][k] != g {
		k++
	}
	t := q.drain(p, in, k)
	prev := in.upcoming()
	if k > 0 {
		prev = q.vq[in.ID][k-1].model
	}
	m := p.llmFor(in, g.model)
	if g.model != prev {
		t += p.swapSeconds(in, g.model)
	}
	ahead := 0.0
	for _, x := range g.members[:len(g.members)-1] {
		ahead += p.class[x.App].Out.Mean
	}
	c := &p.class[s.App]
	c1 := t + ahead/p.theta(in, g.model) + float64(m.PrefillUs(s.Ctx()))/1e6 + c.Out.Mean*p.tokenSeconds(in, g.model)
	p.stats.Predicted[s.ID] = now + dataplane.Time(math.Round(c1*1e6))
	p.stats.PredictedAt[s.ID] = now
}

// predict records the RCT estimate of every waiting request's completion under the plan
// just installed (QLM §6, Eq. 2–4, means): the instance's residual work, model swaps and
// the drain of the groups ahead, then inside its group the output tokens of the members
// ahead at throughput Θ (Eq. 2), its own prefill, and its expected output at ε·d per token
// (Eq. 4). Stats.Predicted keeps the latest estimate per request (RCTR2 scores them).
func (q *qlmQueue) predict(p *Policy, now dataplane.Time) {
	for _, in := range p.inst {
		t := q.residual(p, in)
		prev := in.upcoming()
		for _, g := range q.vq[in.ID] {
			m := p.llmFor(in, g.model)
			if g.model != prev {
				t += p.swapSeconds(in, g.model)
				prev = g.model
			}
			ahead := 0.0
			for _, s := range g.members {
				c := &p.class[s.App]
				c1 := t + ahead/p.theta(in, g.model) + float64(m.PrefillUs(s.Ctx()))/1e6 + c.Out.Mean*p.tokenSeconds(in, g.model)
				p.stats.Predicted[s.ID] = now + dataplane.Time(math.Round(c1*1e6))
				p.stats.PredictedAt[s.ID] = now
				ahead += c.Out.Mean
			}
			mw, _ := q.rct.Drain(len(g.members), g.mu, g.sd, p.theta(in, g.model))
			t += mw
		}
	}
}

// regroup re-forms the waiting requests of groups not started yet by Alg. 1 (KMeansGroups:
// k-means over model, SLO and token statistics, split above δ·avg_batch; QLM §4), seeded
// by the policy's seed and the re-plan count. Started groups keep their members and their
// instance (QLM §5). A new group's output statistics pool its members' classes.
func (q *qlmQueue) regroup(p *Policy) []*group {
	var gs []*group
	var free []*seq
	for _, v := range q.vq {
		for _, g := range v {
			switch {
			case len(g.members) == 0:
			case g.started:
				gs = append(gs, g)
			default:
				free = append(free, g.members...)
			}
		}
	}
	if len(free) == 0 {
		return gs
	}
	// Strict priorities (QLM App. A.3): Alg. 1 groups the requests of each priority apart.
	sort.SliceStable(free, func(a, b int) bool {
		if free[a].Prio != free[b].Prio {
			return free[a].Prio < free[b].Prio
		}
		if ext(free[a]).gpu != ext(free[b]).gpu {
			return ext(free[a]).gpu < ext(free[b]).gpu
		}
		return free[a].ID < free[b].ID
	})
	capFor := p.capFor
	clear(q.open)
	for lo := 0; lo < len(free); {
		hi := lo
		for hi < len(free) && free[hi].Prio == free[lo].Prio && ext(free[hi]).gpu == ext(free[lo]).gpu {
			hi++
		}
		gs = q.kmeansGroups(p, free[lo:hi], capFor, gs)
		lo = hi
	}
	return gs
}

// kmeansGroups forms the groups of free (one priority) by Alg. 1 and appends them to gs.
func (q *qlmQueue) kmeansGroups(p *Policy, free []*seq, capFor func(string) int, gs []*group) []*group {
	items := make([]GroupItem, len(free))
	for i, s := range free {
		c := &p.class[s.App]
		items[i] = GroupItem{Model: s.Model, Deadline: float64(s.Deadline) / 1e6, InTokens: float64(s.Prompt), OutMean: c.Out.Mean, Arrival: float64(s.Arrival) / 1e6}
	}
	for _, members := range KMeansGroups(items, capFor, p.opt.seed+uint64(p.stats.Replans)) {
		first := free[members[0]]
		g := &group{id: q.next, app: first.App, model: first.Model, deadline: dataplane.Never, vq: first.Inst, prio: first.Prio, gpu: ext(first).gpu}
		q.next++
		var mu, v float64
		for _, i := range members {
			s := free[i]
			c := &p.class[s.App]
			g.members = append(g.members, s)
			g.deadline = min(g.deadline, s.Deadline)
			mu += c.Out.Mean
			v += c.Out.Std * c.Out.Std
			g.maxOut = max(g.maxOut, c.Out.Max)
			ext(s).group = g
		}
		g.size = len(g.members)
		g.mu, g.sd = mu/float64(len(members)), math.Sqrt(v/float64(len(members)))
		if g.vq < 0 || p.llmFor(p.inst[g.vq], g.model) == nil || !p.allowed(p.inst[g.vq], g.model, g.gpu) {
			g.vq = p.routed(g.model, g.gpu)[0].ID
		}
		gs = append(gs, g)
	}
	return gs
}

func (q *qlmQueue) head(p *Policy, in *instance) *seq {
	q.init(p)
	v := q.vq[in.ID]
	if len(v) > 0 && len(v[0].members) == 0 {
		// Others' pulls count the drained groups' model swaps (drain).
		p.changed()
	}
	for len(v) > 0 && len(v[0].members) == 0 {
		v = v[1:]
		p.forgetDrain(in.ID)
	}
	q.vq[in.ID] = v
	if len(v) == 0 {
		q.headChanged[in.ID] = false
		g := q.pull(p, in)
		if g == nil {
			return nil
		}
		return g.members[0]
	}
	return v[0].members[0]
}

func (q *qlmQueue) pop(p *Policy, _ *instance, s *seq) {
	g := ext(s).group
	for i, x := range g.members {
		if x == s {
			g.members = append(g.members[:i], g.members[i+1:]...)
			q.waiting--
			break
		}
	}
	p.changed()
	p.forgetDrain(g.vq)
	g.started = true
	g.retime()
}

// retime sets the group's deadline to the earliest deadline of its waiting members (QLM §7
// penalises a group against its SLO, Eq. 11; a request pulled into the running batch no
// longer waits in it). Otherwise a started group keeps the deadline of its first,
// long-served member, and the plan's order (QLM §7, our decomposed and EDF fallbacks
// included) serves all of its later members ahead of groups with earlier waiting requests: up to δ·avg_batch
// requests of one prompt-length bucket jump ahead of the others, which under overload makes
// the batch class miss deadlines that an earliest-deadline order meets.
func (g *group) retime() {
	g.deadline = dataplane.Never
	for _, s := range g.members {
		g.deadline = min(g.deadline, s.Deadline)
	}
}

// requeue puts an evicted sequence back at the front of its group, and the group back at the
// head of its instance's virtual queue when it had left it (pinned: no migration, QLM §5).
func (q *qlmQueue) requeue(p *Policy, in *instance, s *seq) {
	g := ext(s).group
	g.members = append([]*seq{s}, g.members...)
	p.forgetDrain(in.ID)
	p.forgetDrain(g.vq)
	q.waiting++
	p.changed()
	p.touch(in.ID)
	q.mark(in.ID)
	g.deadline = min(g.deadline, s.Deadline)
	for _, x := range q.vq[in.ID] {
		if x == g {
			return
		}
	}
	// Behind the head group (the eviction made room for it), before the rest.
	v := q.vq[in.ID]
	if len(v) == 0 {
		q.vq[in.ID] = []*group{g}
		return
	}
	q.vq[in.ID] = append([]*group{v[0], g}, v[1:]...)
}

// preemptFor is the eviction / KV-swap serving operation (QLM §5): after a replan put a new
// group at the head of a busy instance, preempt running sequences of other groups, least
// generated tokens first, as many as needed to admit the head group's next request.
func (q *qlmQueue) preemptFor(p *Policy, now dataplane.Time, in *instance, h *seq, _ int) bool {
	if !p.opt.evict || !q.headChanged[in.ID] || in.Busy() {
		return false
	}
	var v *seq
	for _, s := range in.Running() {
		// Never a sequence of the head group, nor one admitted at this instant (no
		// admit/evict ping-pong between groups within one step).
		if ext(s).group == ext(h).group || s.Admitted == now {
			continue
		}
		if v == nil || s.Gen < v.Gen || (s.Gen == v.Gen && s.ID > v.ID) {
			v = s
		}
	}
	if v == nil {
		q.headChanged[in.ID] = false
		return false
	}
	p.preempt(in, v, p.llmFor(in, in.model))
	return true
}

func (q *qlmQueue) finished(*Policy, *seq) {}

// withdraw takes a cancelled waiting sequence out of its request group (QLM §4); the group
// keeps its place, with its deadline that of its remaining members (retime). An emptied group
// leaves its virtual queue.
func (q *qlmQueue) withdraw(p *Policy, s *seq) {
	g := ext(s).group
	if g == nil {
		return
	}
	for i, x := range g.members {
		if x == s {
			g.members = append(g.members[:i], g.members[i+1:]...)
			p.forgetDrain(g.vq)
			q.waiting--
			g.retime()
			if len(g.members) == 0 {
				// An emptied group leaves its virtual queue now (estimates would count its
				// model swap) and takes no later arrival (it would join it there, unqueued).
				if k := (groupKey{int(g.app), g.bucket, g.prio, g.gpu}); q.open[k] == g {
					delete(q.open, k)
				}
				if g.vq >= 0 && g.vq < len(q.vq) {
					q.vq[g.vq] = slices.DeleteFunc(q.vq[g.vq], func(x *group) bool { return x == g })
				}
			}
			p.changed()
			p.touch(g.vq)
			return
		}
	}
}

// mark records that virtual queue i may hold a group.
func (q *qlmQueue) mark(i int) { q.queued[i/64] |= 1 << (i % 64) }

// nextQueued is the first instance at index ≥ from whose virtual queue holds a group, or -1;
// queues found empty on the way are unmarked. Under Policy.fullStep, every index (the
// equivalence test's reference: an empty queue contributes nothing to pull or split).
func (q *qlmQueue) nextQueued(p *Policy, from int) int {
	n := len(p.inst)
	if p.fullStep {
		if from < n {
			return from
		}
		return -1
	}
	for w := from / 64; w < len(q.queued); w++ {
		m := q.queued[w]
		if w == from/64 {
			m &^= uint64(1)<<(from%64) - 1
		}
		for m != 0 {
			i := w*64 + bits.TrailingZeros64(m)
			if i >= n {
				return -1
			}
			if len(q.vq[i]) > 0 {
				return i
			}
			q.queued[w] &^= 1 << (i % 64)
			m &^= 1 << (i % 64)
		}
	}
	return -1
}

// recount sets waiting from the virtual queues (after a replan re-forms them).
func (q *qlmQueue) recount() {
	q.waiting = 0
	for _, v := range q.vq {
		for _, g := range v {
			q.waiting += len(g.members)
		}
	}
}

func (q *qlmQueue) empty(in *instance) bool { return q.vq == nil || len(q.vq[in.ID]) == 0 }

// findsNothing: a quiet instance's pull (and split) is known to find nothing now (pullMemo).
func (q *qlmQueue) findsNothing(p *Policy, in *instance) bool {
	return p.memoOn && in.observed <= 0 && q.none.has(p.ss.ver, in, true)
}

// othersWaiting: pull and split (QLM §5 request pulling) take only groups with waiting
// members, and only under the plan's placement.
func (q *qlmQueue) othersWaiting(p *Policy) bool { return q.waiting > 0 && p.opt.placement == "plan" }

// evacuate empties a failed instance's virtual queue: its groups dissolve (their members are
// re-added, and re-grouped, on live instances) and no open group stays placed there.
func (q *qlmQueue) evacuate(p *Policy, in *instance) []*seq {
	q.init(p)
	p.changed()
	p.forgetDrain(in.ID)
	var out []*seq
	for _, g := range q.vq[in.ID] {
		out = append(out, g.members...)
		q.waiting -= len(g.members)
		g.members, g.size = nil, 0
	}
	q.vq[in.ID] = nil
	for k, g := range q.open {
		if g.vq == in.ID {
			delete(q.open, k)
		}
	}
	q.headChanged[in.ID] = false
	return out
}

// admitted ends the eviction trigger: a replan's head change preempts once, at the first
// admission round after it.
func (q *qlmQueue) admitted(_ *Policy, in *instance) { q.headChanged[in.ID] = false }

func (q *qlmQueue) tick(p *Policy, now dataplane.Time) {
	q.init(p)
	for _, in := range p.inst {
		in.floor = 0
		if m := p.llmFor(in, in.model); m != nil && p.opt.guard && q.behind(p, now, in) {
			in.floor = m.knee
		}
	}
	if q.replanDue(p, now) {
		q.replan(p, now)
	}
}

// replanDue: a predicted violation (QLM §4, §6) at least the replan gap after the last solve.
// The time check goes first: violation has no side effects and costs O(N) per arrival;
// fullStep keeps the old order (the equivalence test's reference).
func (q *qlmQueue) replanDue(p *Policy, now dataplane.Time) bool {
	if p.fullStep {
		return q.violation(p, now) && now-q.lastSolve >= p.setup.replanGap()
	}
	return now-q.lastSolve >= p.setup.replanGap() && q.violation(p, now)
}
