package llm

import (
	"slices"

	"github.com/plan-dev/plan/dataplane"
)

// Request is one request of a Replay: its arrival and token counts (and, for the policies
// that read them, its priority and deadline).
type Request struct {
	ID       dataplane.ReqID
	Arrival  dataplane.Time
	Prompt   int
	Out      int
	Prio     int32
	Deadline dataplane.Time
	// Prefix is what its prompt shares with others' (nil: nothing), for prefix caching.
	Prefix *dataplane.Prefix
}

// Result is what a Replay measured of one request: when its first token and its last reached
// the client (absolute µs), or that the engine refused it at arrival (it can never fit the
// KV cache, max_model_len, or a whole-prompt budget with chunked prefill off).
type Result struct {
	ID               dataplane.ReqID
	FirstToken, Done dataplane.Time
	Refused          bool
	Preemptions      int
	// Cached is the prompt tokens its admissions found in the prefix cache.
	Cached int
	// Prefilled and Landed are, in a disaggregated replay (ReplayDisagg), when its prefill
	// instance computed its first token and when its KV cache reached its decode instance
	// (0 in an aggregated replay, and Landed 0 for a one-token request, served by prefill).
	Prefilled, Landed dataplane.Time
}

// Refuses reports whether the engine can never admit a request of prompt and out tokens
// (LLM engine digest §2 and §4, llm-engine-2 §1): its KV at the last token exceeds the cache,
// its prompt exceeds what admission allows, prompt + output exceeds max_model_len, or chunked
// prefill is off and the prompt exceeds the token budget.
func (m *Model) Refuses(prompt, out int) bool {
	return m.Blocks(prompt+out) > m.KVCap/m.Block*m.Block || prompt > m.MaxPrompt() ||
		(m.MaxModelLen > 0 && prompt+out > m.MaxModelLen) || (!m.Chunked && prompt > m.MaxBatched)
}

// Replay runs one engine of model m over reqs in virtual time with waiting queue q, the
// engine alone (no deployment): the same rules QLM's instances and the simulator follow.
// Requests arriving at one instant are considered together: an idle engine starts its step
// 1 µs after them (the arrival hold); a step follows the last one at once while there is
// work; an idle engine that still holds outputs ends them with output-only steps
// (outputstep.go). At one instant, arrivals are queued before a step that ends then is
// applied, and an output-only step ends after both.
func Replay(m *Model, reqs []Request, q Queue) ([]Result, *Counters) {
	return ReplayWatched(m, reqs, q, nil)
}

// Watch is told each request's result once it is final (the request's last token reached
// the client, or the engine refused it at arrival), with the request's index, and returns
// true to stop the replay there. A caller that needs only a verdict, and can tell when the
// rest of the replay cannot change it, stops there. Requests unfinished when a replay stops
// keep Done Never. (A result's Preemptions and Cached are added when the replay ends.)
type Watch func(i int, r *Result) bool

// ReplayWatched is Replay, with watch (nil: none) told of every final result.
func ReplayWatched(m *Model, reqs []Request, q Queue, watch Watch) ([]Result, *Counters) {
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(reqs[a].Arrival - reqs[b].Arrival) })
	res := make([]Result, len(reqs))
	for i, r := range reqs {
		res[i] = Result{ID: r.ID, FirstToken: dataplane.Never, Done: dataplane.Never} // unanswered until its tokens come (for good if a watch stops the replay first)
	}
	seqs := make([]*Seq, len(reqs))
	at := map[*Seq]int{}
	e := &Engine{Ctr: &Counters{}}
	e.SetScheduler(q)
	stop := false
	emit := func(now dataplane.Time) func(Output) {
		return func(o Output) {
			i := at[o.S]
			r := &res[i]
			if o.First {
				r.FirstToken = now
			}
			if o.Last {
				r.Done = now
				stop = stop || (watch != nil && watch(i, r))
			}
		}
	}
	next, end, hold, wake, oend := 0, dataplane.Never, dataplane.Time(-1), dataplane.Never, dataplane.Never
	for {
		tA := dataplane.Never
		if next < len(order) {
			tA = reqs[order[next]].Arrival
		}
		tT := wake
		if hold >= 0 {
			tT = min(tT, hold)
		}
		now := min(tA, end, tT, oend)
		if now == dataplane.Never || stop {
			break
		}
		ended := false // a real step ended at now
		switch {
		case now == tA:
			for next < len(order) && reqs[order[next]].Arrival == now {
				i := order[next]
				next++
				r := reqs[i]
				if m.Refuses(r.Prompt, r.Out) {
					res[i].Refused = true
					stop = stop || (watch != nil && watch(i, &res[i]))
					continue
				}
				s := &Seq{ID: r.ID, Model: m.Name, Prompt: r.Prompt, Out: r.Out, Arrival: r.Arrival, Deadline: r.Deadline, Prio: r.Prio, Inst: -1, Prefix: r.Prefix}
				seqs[i], at[s] = s, i
				q.Push(s)
			}
			if hold <= now {
				hold = now + 1
			}
		case now == end:
			e.Done(now, m, emit(now))
			end = dataplane.Never
			ended = true
		case now == oend:
			oend = dataplane.Never
			if e.EndOutputStep(now, emit(now)) {
				oend = e.OutputStep(now, m, emit(now))
			}
		default:
			if hold == now {
				hold = -1
			}
			if wake == now {
				wake = dataplane.Never
			}
		}
		if !e.busy && (hold <= now || len(e.running) > 0 || len(e.swapped) > 0) {
			it, ok, w := e.Step(now, m, true)
			if ok {
				end = now + max(it.Dur, 1)
			} else if w != dataplane.Never {
				wake = w
			}
		}
		if ended {
			// No step follows at once (none, or the arrival hold): the outputs in flight end
			// with output-only steps until one does.
			oend = e.OutputStep(now, m, emit(now))
		}
	}
	for i, s := range seqs {
		if s != nil {
			res[i].Preemptions, res[i].Cached = s.Preemptions, s.Cached
		}
	}
	return res, e.Ctr
}
