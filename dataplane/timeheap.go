package dataplane

// Timed is a value due at a time. Seq breaks ties in insertion order, which is what makes
// drivers deterministic when several things fall due in the same microsecond.
type Timed[T any] struct {
	At  Time
	Seq uint64
	Val T
}

// TimeHeap is a binary min-heap on (At, Seq): the event queue of sim (virtual time) and the
// timer queue of serve (wall time). It avoids container/heap's interface calls because both
// drivers pop one entry per event on their hot path.
type TimeHeap[T any] []Timed[T]

func (h TimeHeap[T]) less(i, j int) bool {
	if h[i].At != h[j].At {
		return h[i].At < h[j].At
	}
	return h[i].Seq < h[j].Seq
}

// Push adds x.
func (h *TimeHeap[T]) Push(x Timed[T]) {
	*h = append(*h, x)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

// Pop removes and returns the earliest entry; the heap must not be empty.
func (h *TimeHeap[T]) Pop() Timed[T] {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && s.less(r, l) {
			m = r
		}
		if !s.less(m, i) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
