package formats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
)

// Trace is a recorded or generated arrival process: either per-request timestamps or
// per-interval counts (Azure-Functions style), never both.
type Trace struct {
	TypeMeta
	Metadata Metadata       `json:"metadata"`
	Requests []TraceRequest `json:"requests,omitempty"`
	Counts   *RateSeries    `json:"counts,omitempty"`
	// HashBlockTokens is the tokens per hash id of the requests' hash_ids (Mooncake's traces:
	// 512, llm-engine-2.md §3); required when a request has hash_ids.
	HashBlockTokens int `json:"hash_block_tokens,omitempty"`
}

// TraceRequest is one arrival. TimeUs is the offset from the trace start, non-decreasing.
type TraceRequest struct {
	TimeUs int64  `json:"t_us"`
	Target string `json:"target,omitempty"` // model or application; empty = any
	Class  string `json:"class,omitempty"`
	// Token counts for LLM requests.
	InputTokens  int `json:"input_tokens,omitempty"`
	OutputTokens int `json:"output_tokens,omitempty"`
	// ID names the request (unique in the trace when set), for logs and per-request records.
	ID string `json:"id,omitempty"`
	// What the prompt shares with other requests' prompts, for automatic prefix caching
	// (llm-engine-2.md §2); at most one of the two ways:
	//   - PrefixGroup and PrefixTokens: requests of one group share their first
	//     prefix_tokens prompt tokens (two of a group share min(their prefix_tokens));
	//   - HashIDs (Mooncake): one id per hash_block_tokens prompt tokens, the last covering
	//     the partial block; equal id prefixes are equal token prefixes.
	PrefixGroup  PrefixGroup `json:"prefix_group,omitempty"`
	PrefixTokens int         `json:"prefix_tokens,omitempty"`
	// HashIDs is a pointer so that TraceRequest stays comparable (callers compare requests
	// with ==); Hashes reads it.
	HashIDs *[]int64 `json:"hash_ids,omitempty"`
}

// Hashes is the request's hash ids (nil when it has none).
func (r *TraceRequest) Hashes() []int64 {
	if r.HashIDs == nil {
		return nil
	}
	return *r.HashIDs
}

// RateSeries is a count of arrivals per fixed interval.
type RateSeries struct {
	Interval Duration `json:"interval"`
	Target   string   `json:"target,omitempty"`
	Counts   []int64  `json:"counts"`
}

// PrefixGroup names a group of requests sharing a prompt prefix. Files may write it as a
// string or an integer; an integer is the group named by its decimal text (7 and "7" are one
// group), and it is written back as a string.
type PrefixGroup string

var prefixGroupType = reflect.TypeFor[PrefixGroup]()

// UnmarshalJSON accepts a string or an integer.
func (g *PrefixGroup) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*g = PrefixGroup(s)
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("prefix_group must be a string or an integer, got %s", b)
	}
	*g = PrefixGroup(strconv.FormatInt(n, 10))
	return nil
}

// prefixGroupOK reports whether a decoded JSON value (string, or json.Number) is a prefix
// group: a string or an integer that fits in 64 bits.
func prefixGroupOK(v any) bool {
	switch x := v.(type) {
	case string:
		return true
	case json.Number:
		_, err := strconv.ParseInt(string(x), 10, 64)
		return err == nil
	}
	return false
}

// prefixGroupRule is the structural rule a prefix_group breaks.
const prefixGroupRule = "must be a string or an integer"
