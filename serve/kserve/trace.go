package kserve

import (
	"fmt"
	"strconv"
)

// TraceIndexHeader is the HTTP header (and, lower-cased, the gRPC metadata key) by which a
// load generator replaying a trace (`plan load`) tells serve a request's index among its
// application's arrivals in that trace. serve hands it to the engine as Attrs.Trace, and the
// per-request draws of emulated workers (a workflow's branches, a cascade's validation
// sample) are keyed on it (dataplane.TraceKey). Without it they are keyed on the order
// requests reach the server, which differs from the trace's when two arrive within a
// millisecond, and a served run would then be another realization than the simulated one.
const TraceIndexHeader = "Plan-Trace-Index"

// MaxTraceIndex bounds TraceIndexHeader's value: a trace of 2^40 requests is beyond any
// replay, and the bound keeps the value clear of overflow wherever it is combined.
const MaxTraceIndex = 1<<40 - 1

// ParseTraceIndex reads a TraceIndexHeader value into Attrs.Trace's form (index + 1); an
// absent header ("") is 0.
func ParseTraceIndex(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > MaxTraceIndex {
		return 0, fmt.Errorf("header %s: %q: want a whole number from 0 to %d", TraceIndexHeader, Clip([]byte(v)), int64(MaxTraceIndex))
	}
	return n + 1, nil
}
