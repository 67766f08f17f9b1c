package workload

import (
	"slices"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
)

// TestPrefixHits: hand-counted cached tokens per request, for prefix groups and Mooncake
// hash ids, the last prompt token never cached.
func TestPrefixHits(t *testing.T) {
	ids := func(v ...int64) *[]int64 { return &v }
	for _, tc := range []struct {
		name  string
		block int
		reqs  []formats.TraceRequest
		want  []int
	}{
		{name: "no sharing", reqs: []formats.TraceRequest{{InputTokens: 100}, {InputTokens: 100}}, want: []int{0, 0}},
		{name: "a group: the first computes, the rest find the smaller prefix", reqs: []formats.TraceRequest{
			{InputTokens: 300, PrefixGroup: "sys", PrefixTokens: 200},
			{InputTokens: 300, PrefixGroup: "sys", PrefixTokens: 250}, // finds the 200 computed
			{InputTokens: 300, PrefixGroup: "sys", PrefixTokens: 100}, // shares only its 100
			{InputTokens: 300, PrefixGroup: "other", PrefixTokens: 100},
			{InputTokens: 220, PrefixGroup: "sys", PrefixTokens: 220}, // 250 computed; its last token recomputed
		}, want: []int{0, 200, 100, 0, 219}},
		{name: "hash ids: the leading run already seen", block: 16, reqs: []formats.TraceRequest{
			{InputTokens: 40, HashIDs: ids(1, 2, 3)},
			{InputTokens: 40, HashIDs: ids(1, 2, 9)}, // 1, 2 seen: 32 tokens
			{InputTokens: 40, HashIDs: ids(7, 2, 3)}, // a new first block: nothing
			{InputTokens: 32, HashIDs: ids(1, 2)},    // all seen: 32, less the last token
		}, want: []int{0, 32, 0, 31}},
		{name: "Mooncake's 512-token blocks by default", reqs: []formats.TraceRequest{
			{InputTokens: 1500, HashIDs: ids(5, 6, 7)}, {InputTokens: 1500, HashIDs: ids(5, 6, 8)},
		}, want: []int{0, 1024}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := prefixHits(tc.reqs, tc.block); !slices.Equal(got, tc.want) {
				t.Errorf("hits %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFromTracePrefixTokens: a class's prefix_tokens is its requests' mean cached tokens, and
// the description says so; a trace that shares nothing writes none.
func TestFromTracePrefixTokens(t *testing.T) {
	var reqs []formats.TraceRequest
	for i := range 4 {
		reqs = append(reqs, formats.TraceRequest{TimeUs: int64(i) * 1e6, Target: "llm", InputTokens: 1000, OutputTokens: 10, PrefixGroup: "sys", PrefixTokens: 600})
	}
	w, sums, err := FromTrace("t.json", &formats.Trace{Requests: reqs}, FromTraceOptions{SLO: 5e9})
	if err != nil {
		t.Fatal(err)
	}
	// 0 + 600 + 600 + 600 over 4 requests.
	if got := llmspec.ClassesOf(w)[0].PrefixTokens; got != 450 || sums[0].PrefixTokens != 450 {
		t.Errorf("prefix_tokens %d (summary %d), want 450", got, sums[0].PrefixTokens)
	}
	if d := describe("t.json", FromTraceOptions{Basis: "mean"}, sums); !strings.Contains(d, "450 prompt tokens cached per request") {
		t.Errorf("description %q", d)
	}
	for i := range reqs {
		reqs[i].PrefixGroup, reqs[i].PrefixTokens = "", 0
	}
	w, _, err = FromTrace("t.json", &formats.Trace{Requests: reqs}, FromTraceOptions{SLO: 5e9})
	if err != nil || llmspec.ClassesOf(w)[0].PrefixTokens != 0 {
		t.Errorf("no sharing: %+v, %v", llmspec.ClassesOf(w), err)
	}
}
