package llm

import "sort"

// Queue is a waiting-queue policy of one engine (vLLM's scheduling_policy, EDF): the unit the
// scheduler registry (package sched) builds by name. Its Scheduler methods ignore the engine
// argument: a Queue serves the engine it was made for.
type Queue interface {
	Scheduler
	// Push queues a new arrival.
	Push(s *Seq)
	// Remove takes waiting s out (its request was cancelled); false when s is not queued.
	Remove(s *Seq) bool
	// Len is the number of waiting requests; At(i) the i-th in admission order.
	Len() int
	At(i int) *Seq
	// Drain empties the queue and returns what waited, in order (its engine failed).
	Drain() []*Seq
}

// Ordered is a Queue kept in the order of Less (ties keep their arrival order); a preempted
// request goes back to the front when FrontRequeue (vLLM's FCFS: waiting.prepend_request),
// else to its place in the order (vLLM's priority heap, EDF). The in-tree policies are
// Ordered queues with their own Less (package sched).
type Ordered struct {
	Less         func(a, b *Seq) bool
	FrontRequeue bool
	wait         []*Seq
}

func (q *Ordered) insert(s *Seq) {
	w := q.wait
	k := sort.Search(len(w), func(j int) bool { return q.Less(s, w[j]) })
	w = append(w, nil)
	copy(w[k+1:], w[k:])
	w[k] = s
	q.wait = w
}

// Push implements Queue.
func (q *Ordered) Push(s *Seq) { q.insert(s) }

// Head implements Scheduler.
func (q *Ordered) Head(*Engine) *Seq {
	if len(q.wait) == 0 {
		return nil
	}
	return q.wait[0]
}

// Admit implements Scheduler.
func (q *Ordered) Admit(_ *Engine, s *Seq) { q.Remove(s) }

// Requeue implements Scheduler.
func (q *Ordered) Requeue(_ *Engine, s *Seq) {
	if q.FrontRequeue {
		q.wait = append([]*Seq{s}, q.wait...)
		return
	}
	q.insert(s)
}

// Remove implements Queue.
func (q *Ordered) Remove(s *Seq) bool {
	for i, x := range q.wait {
		if x == s {
			q.wait = append(q.wait[:i], q.wait[i+1:]...)
			return true
		}
	}
	return false
}

// Len implements Queue.
func (q *Ordered) Len() int { return len(q.wait) }

// At implements Queue.
func (q *Ordered) At(i int) *Seq { return q.wait[i] }

// Drain implements Queue.
func (q *Ordered) Drain() []*Seq {
	out := q.wait
	q.wait = nil
	return out
}

// Waiting implements WaitingCounter: the queued requests of model, up to limit, skipping
// others (an engine admits only its loaded model's).
func (q *Ordered) Waiting(_ *Engine, model string, limit int) int {
	n := 0
	for _, s := range q.wait {
		if n >= limit {
			break
		}
		if s.Model == model {
			n++
		}
	}
	return n
}

// ByArrival orders by arrival, then request ID (FCFS).
func ByArrival(a, b *Seq) bool {
	if a.Arrival != b.Arrival {
		return a.Arrival < b.Arrival
	}
	return a.ID < b.ID
}
