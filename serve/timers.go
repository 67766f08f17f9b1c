package serve

import (
	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/serve/worker"
)

// timerKind says what a driver timer is for.
type timerKind uint8

const (
	tPolicy   timerKind = iota + 1 // Effects.SetTimer: deliver EvTimer with key
	tTransfer                      // an emulated transfer ends: deliver EvTransferDone
	tBatch                         // an emulated hop ends: deliver EvBatchDone
	tFlush                         // a migration's flush deadline
	tDrain                         // the shutdown drain deadline
)

// timerItem is the payload of one entry of the driver's timer heap (a dataplane.TimeHeap).
// Every engine timer and emulated transfer shares ONE time.Timer armed for the earliest
// entry, so a busy server keeps no goroutine or runtime timer per pending event.
type timerItem struct {
	kind  timerKind
	gen   int
	key   int64
	batch dataplane.BatchID
	hop   int32
	start dataplane.Time
	job   *worker.Job
}
