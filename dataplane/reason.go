package dataplane

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// reasonCode stands for a DropReason in the request record, which holds no pointers (Request):
// 0 is "", and code c > 0 is the (c−1)th reason interned. Reasons are a small open set of
// constants, so the table stays a few entries long; it is shared by every engine of the
// process and only grows.
type reasonCode uint8

// reasonTable is the interned reasons, in code order. Readers load the list without a lock;
// a new reason copies it under mu.
var reasonTable struct {
	mu   sync.Mutex
	list atomic.Pointer[[]DropReason]
}

func init() {
	l := []DropReason{DropDeadline, DropAdmission, DropWaitCorner, DropNoPath, DropShutdown, DropWorkerFailed, DropCancelled}
	reasonTable.list.Store(&l)
}

// codeOf interns r.
func codeOf(r DropReason) reasonCode {
	if r == "" {
		return 0
	}
	for i, x := range *reasonTable.list.Load() {
		if x == r {
			return reasonCode(i + 1)
		}
	}
	reasonTable.mu.Lock()
	defer reasonTable.mu.Unlock()
	l := *reasonTable.list.Load()
	for i, x := range l {
		if x == r {
			return reasonCode(i + 1)
		}
	}
	if len(l) >= 255 {
		panic(fmt.Sprintf("dataplane: more than 255 drop reasons (adding %q)", r))
	}
	nl := append(l[:len(l):len(l)], r)
	reasonTable.list.Store(&nl)
	return reasonCode(len(nl))
}

// reason is the reason c stands for.
func (c reasonCode) reason() DropReason {
	if c == 0 {
		return ""
	}
	return (*reasonTable.list.Load())[c-1]
}
