package dataplane

// ReqQueue is a queue of requests kept in an Order, with O(1) pops at the front and inserts
// that are O(1) when arrivals come in order (the common case: same SLO, time-ordered).
type ReqQueue struct {
	ids   []ReqID
	head  int
	order Order
	v     View
}

// NewReqQueue makes an empty queue ordered by o over the requests of v.
func NewReqQueue(v View, o Order) *ReqQueue { return &ReqQueue{order: o, v: v} }

// Len returns the number of queued requests.
func (q *ReqQueue) Len() int { return len(q.ids) - q.head }

// Front returns the first request (the caller checks Len first).
func (q *ReqQueue) Front() ReqID { return q.ids[q.head] }

// At returns the i-th request from the front.
func (q *ReqQueue) At(i int) ReqID { return q.ids[q.head+i] }

// Push inserts r in order (after equal elements).
func (q *ReqQueue) Push(r ReqID) {
	q.ids = append(q.ids, r)
	i := len(q.ids) - 1
	if q.order != nil {
		rr := q.v.Req(r)
		for i > q.head && q.order.Less(rr, q.v.Req(q.ids[i-1])) {
			q.ids[i] = q.ids[i-1]
			i--
		}
	}
	q.ids[i] = r
}

// PopFront removes and returns the first request.
func (q *ReqQueue) PopFront() ReqID {
	r := q.ids[q.head]
	q.Drop(1)
	return r
}

// Front n returns the first n requests (borrowed until the next mutation).
func (q *ReqQueue) FrontN(n int) []ReqID { return q.ids[q.head : q.head+n] }

// Drop removes the first n requests.
func (q *ReqQueue) Drop(n int) {
	q.head += n
	if q.head >= len(q.ids) {
		q.ids = q.ids[:0]
		q.head = 0
	} else if q.head > 256 && q.head*2 > len(q.ids) {
		k := copy(q.ids, q.ids[q.head:])
		q.ids = q.ids[:k]
		q.head = 0
	}
}
