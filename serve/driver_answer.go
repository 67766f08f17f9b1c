package serve

import (
	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/serve/kserve"
)

// cancel asks the driver to withdraw c, whose client left before its answer: a request
// nobody waits for must not keep costing GPU time. The engine is only ever
// called on the driver's goroutine, so the handler queues the call like an arrival, and
// waits until the driver has withdrawn it: when the handler returns, the engine knows.
func (d *driver) cancel(c *call) {
	d.inMu.Lock()
	if d.inClosed {
		d.inMu.Unlock()
		return // the driver answered everything on its way out
	}
	done := make(chan struct{})
	c.cancelDone = done
	d.cancelQ = append(d.cancelQ, c)
	d.inMu.Unlock()
	d.wt.Poke()
	select {
	case <-done:
	case <-d.stopped:
	}
}

// onCancel withdraws c (its client left). A call held by a migration's pause was never fed:
// it is answered here. A fed call is cancelled in the engine: a request no batch holds
// finishes at once (Effects.Finish answers it as cancelled); one a batch holds finishes when
// that batch ends, its result discarded (dataplane.Engine.Cancel).
func (d *driver) onCancel(c *call) {
	if c.answered || c.cancelled {
		return
	}
	c.cancelled = true
	for i, p := range d.paused {
		if p == c {
			d.paused = append(d.paused[:i], d.paused[i+1:]...)
			d.answerCancelled(c, "migration")
			return
		}
	}
	g := d.gen
	if g.call(c.req) != c {
		return // answered by an abandoned generation already, or never fed
	}
	q := g.eng.Req(c.req)
	queued, app := q.Dispatch == dataplane.Never && q.NumBatches() == 0, q.App
	if _, err := g.eng.Cancel(d.now, c.req); err != nil {
		d.fail(err)
		return
	}
	if queued && q.Outcome != dataplane.Pending {
		g.queued[app]--
	}
}

// answerCancelled answers a call the engine never saw whose client left.
func (d *driver) answerCancelled(c *call, stage string) {
	if c.answered {
		return
	}
	c.answered = true
	reason := string(dataplane.DropCancelled)
	d.m.drop(c.model, stage, reason)
	lat := int64(d.now - c.at)
	d.m.finished(c.ms, outcomeCancelled, lat)
	d.log.Info("request cancelled: its client left", "model", c.model, "id", c.id, "stage", stage)
	c.payload = nil
	c.reply(result{status: statusCancelled, outcome: outcomeCancelled, reason: reason, stage: stage,
		timing: kserve.Timing{LatencyUs: lat, IntakeUs: int64(c.received - c.at), MigrationUs: int64(d.now - c.received)}})
}

// Finish implements dataplane.Effects: answer the client.
func (fx *effects) Finish(now dataplane.Time, r *dataplane.Request) {
	g, d := fx.g, fx.d
	c := g.call(r.ID)
	if c == nil || c.answered {
		return
	}
	// The engine may finish a request at a due timer's own time (onTimers); the client gets
	// its answer now, and its latency and lateness are what it sees.
	wall := max(now, d.clk.Now())
	t := d.timing(g, c, r, wall)
	res := result{timing: t, payload: c.payload, res: r.Result, finished: now}
	if r.Result.Certainty > 0 && len(t.Stages) > 0 {
		res.answeredBy = answeredBy(g.dep, t.Stages[len(t.Stages)-1].Stage)
	}
	switch {
	case c.cancelled || r.Reason() == dataplane.DropCancelled && r.Outcome == dataplane.Dropped:
		// Nobody waits for this answer: a request whose client left is cancelled, never
		// completed (a batch that held it may have finished it before the cancel reached it).
		res.status = statusCancelled
		res.outcome = outcomeCancelled
		res.reason = string(dataplane.DropCancelled)
		res.stage = stageName(g.dep, r.DropStage)
		if r.Outcome != dataplane.Dropped && len(t.Stages) > 0 {
			res.stage = t.Stages[len(t.Stages)-1].Stage
		}
		if llm := streamsTokens(g.eng.Policy()); llm {
			// Where an LLM request was when its client left (vLLM's phases, drop-in §1):
			// waiting, prefilling its prompt, or decoding; the tokens it received count as
			// generated, as vLLM counts an aborted request's output.
			res.stage = llmPhase(r)
			d.m.llmFinished(c.model, "abort", r, c.at, t.LatencyUs, c.got, g.eng.Policy(), c.group)
		}
		d.m.drop(c.model, res.stage, res.reason)
		d.log.Info("request cancelled: its client left", "model", c.model, "id", c.id, "stage", res.stage)
	case r.Outcome == dataplane.Completed, r.Outcome == dataplane.Late:
		// On time by the request's true deadline, not the engine's (which is earlier by the
		// delivery margin), and by the wall clock the client sees.
		res.status = 200
		res.outcome = dataplane.Completed.String()
		if wall > c.deadline {
			res.outcome = dataplane.Late.String()
		}
		if c.payload != nil && c.payload.Err != nil {
			res.status = 502
			res.outcome = "error"
			res.stage = c.payload.ErrStage
			res.err = c.payload.Err.Error()
		}
		if r.FirstToken != dataplane.Never || streamsTokens(g.eng.Policy()) {
			reason := "error"
			if res.status == 200 {
				// The tokens still held by the output delay reach the client with its answer.
				out := max(int(r.Attrs.OutTokens), c.got)
				d.tokensSeen(c, out, now)
				reason = "stop"
				if c.attrs.OutTokens > 0 {
					reason = "length" // the client's max_tokens ended it
				}
			}
			d.m.llmFinished(c.model, reason, r, c.at, t.LatencyUs, c.got, g.eng.Policy(), c.group)
		}
	default:
		res.status = 503
		res.outcome = "dropped"
		res.reason = string(r.Reason())
		res.stage = stageName(g.dep, r.DropStage)
		res.estimate = int64(r.Estimate)
		d.m.drop(c.model, res.stage, res.reason)
	}
	if !streamsTokens(g.eng.Policy()) && r.FirstToken == dataplane.Never {
		queueUs := int64(-1)
		if r.Dispatch != dataplane.Never {
			queueUs = int64(r.Dispatch - c.at)
		}
		d.m.tritonAnswered(c.model, res.outcome, t.LatencyUs, queueUs)
	}
	d.answer(g, c, res)
}

// llmPhase names where an LLM request was (vLLM's request phases): queue before the
// engine scheduled it, prefill before its first token, decode after.
func llmPhase(r *dataplane.Request) string {
	switch {
	case r.Dispatch == dataplane.Never:
		return "queue"
	case r.FirstToken == dataplane.Never:
		return "prefill"
	}
	return "decode"
}

// tokensSeen records that n of c's output tokens have reached its client at engine time at:
// the intervals since the previous ones (vllm:inter_token_latency_seconds, every interval
// after the first token).
func (d *driver) tokensSeen(c *call, n int, at dataplane.Time) {
	if n <= c.got {
		return
	}
	if c.got > 0 {
		d.m.llmTokens(c.model, n-c.got, at-c.gotAt)
	} else if n > 1 {
		// The first token's interval is TTFT; the others shown with it came in the same
		// step (zero intervals apart is not known: spread over the step as one gap of 0).
		d.m.llmTokens(c.model, n-1, 0)
	}
	c.got, c.gotAt = n, at
}

// answeredBy names the model of the stage called stage (the stage's name when it names no
// model).
func answeredBy(dep *dataplane.Deployment, stage string) string {
	for i := range dep.Stages {
		if dep.Stages[i].Name == stage && dep.Stages[i].Model != "" {
			return dep.Stages[i].Model
		}
	}
	return stage
}

func stageName(dep *dataplane.Deployment, s dataplane.StageID) string {
	if s < 0 || int(s) >= len(dep.Stages) {
		return "queue"
	}
	return dep.Stages[s].Name
}

// answer sends the result (the channel has room for exactly one) and does the bookkeeping.
func (d *driver) answer(g *generation, c *call, res result) {
	if c.answered {
		return
	}
	c.answered = true
	g.outstanding--
	if g.call(c.req) == c {
		g.clearCall(c.req)
	}
	c.payload = nil
	d.m.finished(c.ms, res.outcome, res.timing.LatencyUs)
	c.reply(res)
}

// answerShutdown answers a call the engine never saw with 503.
func (d *driver) answerShutdown(c *call, stage string) {
	if c.answered {
		return
	}
	c.answered = true
	reason := string(dataplane.DropShutdown)
	if stage == "migration" {
		reason = "migration"
	}
	d.m.drop(c.model, stage, reason)
	lat := int64(d.now - c.at)
	d.m.finished(c.ms, "dropped", lat)
	c.payload = nil
	c.reply(result{status: 503, outcome: "dropped", reason: reason, stage: stage,
		timing: kserve.Timing{LatencyUs: lat, IntakeUs: int64(c.received - c.at), MigrationUs: int64(d.now - c.received)}})
}

// abandon answers every unfinished call of g with 503 (drain or flush timeout). The engine's
// state is left as is: the generation is retired right after.
func (d *driver) abandon(g *generation, reason string) {
	eng := g.eng
	for _, c := range g.calls {
		if c == nil || c.answered {
			continue
		}
		r := eng.Req(c.req)
		stage := "queue"
		if bs := eng.RequestBatches(c.req); len(bs) > 0 && bs[len(bs)-1] >= eng.BatchBase() {
			b := eng.Batch(bs[len(bs)-1])
			for _, h := range b.Hops {
				stage = g.dep.Stages[h.Stage].Name
				if h.End < 0 {
					break
				}
			}
		}
		t := d.timing(g, c, r, d.now)
		d.m.drop(c.model, stage, reason)
		d.answer(g, c, result{status: 503, outcome: "dropped", reason: reason, stage: stage, timing: t})
	}
}

// timing computes the latency breakdown of r from the engine's batch records.
func (d *driver) timing(g *generation, c *call, r *dataplane.Request, now dataplane.Time) kserve.Timing {
	app := &g.dep.Apps[r.App]
	t := kserve.Timing{LatencyUs: int64(now - c.at), SLOUs: int64(app.SLO), IntakeUs: int64(c.received - c.at), MigrationUs: int64(c.fed - c.received)}
	if r.FirstToken != dataplane.Never {
		t.FirstTokenUs = int64(max(r.FirstToken-c.at, 1))
	}
	if r.NumBatches() == 0 || r.Dispatch == dataplane.Never {
		t.BatchWaitUs = int64(now - c.fed)
		return t
	}
	eng := g.eng
	t.BatchWaitUs = int64(r.Dispatch - c.fed)
	prev := r.Dispatch
	for _, bid := range eng.RequestBatches(r.ID) {
		if bid < eng.BatchBase() {
			continue // forgotten by Compact (an earlier batch of a re-batched request)
		}
		b := eng.Batch(bid)
		if b.Dispatched > prev {
			t.QueueUs += int64(b.Dispatched - prev)
			prev = b.Dispatched
		}
		for _, h := range b.Hops {
			if h.Start < 0 {
				break
			}
			st := kserve.StageTiming{Stage: g.dep.Stages[h.Stage].Name, Worker: g.dep.Topo.Workers[h.Worker].Name, Batch: len(b.Reqs),
				QueueUs: int64(max(h.Start-prev, 0))}
			prev = max(prev, h.Start)
			if h.End >= 0 {
				st.ExecUs = int64(h.End - h.Start)
				prev = h.End
			}
			if h.OutEnd >= 0 {
				st.QueueUs += int64(max(h.OutStart-prev, 0))
				st.TransferUs = int64(h.OutEnd - h.OutStart)
				prev = h.OutEnd
			}
			t.QueueUs += st.QueueUs
			t.ExecUs += st.ExecUs
			t.TransferUs += st.TransferUs
			if t.Stages == nil {
				t.Stages = c.stages[:0]
			}
			t.Stages = append(t.Stages, st)
		}
	}
	if now > prev {
		t.DeliveryUs = int64(now - prev)
	}
	return t
}
