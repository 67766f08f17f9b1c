package kserve

import (
	"fmt"
	"strconv"
	"strings"
)

// TraceTokensHeader is the HTTP header by which a load generator replaying an LLM trace
// exactly (`plan load --trace`) gives a request's prompt and output token
// counts, "IN,OUT" (the KServe v2 infer body carries tensors, not text): serve hands them to
// the engine as Attrs.InTokens and Attrs.OutTokens, as the OpenAI front end does from a
// prompt and max_tokens, so a served replay runs the trace's tokens, as a simulated one does.
const TraceTokensHeader = "Plan-Trace-Tokens"

// MaxTraceTokens bounds each count of TraceTokensHeader (2^24, as a trace file's).
const MaxTraceTokens = 1 << 24

// ParseTraceTokens reads a TraceTokensHeader value; an absent header ("") is 0, 0.
func ParseTraceTokens(v string) (in, out int32, err error) {
	if v == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(v, ",")
	x, err1 := strconv.Atoi(strings.TrimSpace(a))
	y, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || x < 0 || y < 0 || x > MaxTraceTokens || y > MaxTraceTokens {
		return 0, 0, fmt.Errorf("header %s: %q: want IN,OUT: two whole numbers from 0 to %d", TraceTokensHeader, Clip([]byte(v)), MaxTraceTokens)
	}
	return int32(x), int32(y), nil
}
