package serve

import "github.com/plan-dev/plan/runtime"

// timerKind says what a driver timer is for.
type timerKind uint8

const (
	tPolicy   timerKind = iota + 1 // Effects.SetTimer: deliver EvTimer with key
	tTransfer                      // an emulated transfer ends: deliver EvTransferDone
	tBatch                         // an emulated hop ends: deliver EvBatchDone
	tFlush                         // a migration's flush deadline
	tDrain                         // the shutdown drain deadline
)

// timerItem is one entry of the driver's timer heap. Every engine timer and emulated
// transfer shares ONE time.Timer armed for the earliest entry, so a busy server keeps no
// goroutine or runtime timer per pending event.
type timerItem struct {
	at    runtime.Time
	seq   uint64
	kind  timerKind
	gen   int
	key   int64
	batch runtime.BatchID
	hop   int32
	start runtime.Time
	job   *Job
}

type timerHeap []timerItem

func (h timerHeap) less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}

func (h *timerHeap) push(x timerItem) {
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

func (h *timerHeap) pop() timerItem {
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
