package formats

// Trace is a recorded or generated arrival process: either per-request timestamps or
// per-interval counts (Azure-Functions style), never both.
type Trace struct {
	TypeMeta
	Metadata Metadata       `json:"metadata"`
	Requests []TraceRequest `json:"requests,omitempty"`
	Counts   *RateSeries    `json:"counts,omitempty"`
}

// TraceRequest is one arrival. TimeUs is the offset from the trace start, non-decreasing.
type TraceRequest struct {
	TimeUs int64  `json:"t_us"`
	Target string `json:"target,omitempty"` // model or application; empty = any
	Class  string `json:"class,omitempty"`
	// Token counts for LLM requests.
	InputTokens  int `json:"input_tokens,omitempty"`
	OutputTokens int `json:"output_tokens,omitempty"`
}

// RateSeries is a count of arrivals per fixed interval.
type RateSeries struct {
	Interval Duration `json:"interval"`
	Target   string   `json:"target,omitempty"`
	Counts   []int64  `json:"counts"`
}
