package sim

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// TestSummarizeUsMatchesSummarize: SummarizeUs's percentiles are Summarize's
// (internal/base/quantile's, to the µs), with p95 beside them.
func TestSummarizeUsMatchesSummarize(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{1, 2, 3, 10, 99, 100, 101, 1000} {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(r.IntN(1_000_000))
		}
		got, want := SummarizeUs(xs), Summarize(append([]float64(nil), xs...))
		if int64(got.P50Us) != want.P50Us || int64(got.P90Us) != want.P90Us || int64(got.P99Us) != want.P99Us || got.N != n ||
			got.P90Us > got.P95Us || got.P95Us > got.P99Us {
			t.Errorf("n %d: %+v, sim %+v", n, got, want)
		}
	}
}

// TestNewEngineReport: answered requests (on time or late) give the token timings and the
// throughput over first arrival to last finish; dropped ones count as refused by reason,
// cancelled ones apart; a single class is reported as the "all" row only.
func TestNewEngineReport(t *testing.T) {
	ft := func(us int64) *int64 { return &us }
	completed, late := dataplane.Completed.String(), dataplane.Late.String()
	tests := []struct {
		name                           string
		recs                           []RequestRecord
		answered, refused, cancelled   int
		classes                        []string
		spanUs                         int64
		reqPerS, tokPerS               float64
		ttftP50Us, tpotP50Us, e2eP99Us float64
	}{
		{
			name: "one class",
			recs: []RequestRecord{
				{Class: "chat", ArrivalUs: 0, FirstTokenUs: ft(100), DoneUs: 1_000_100, Outcome: completed, InputTokens: 10, OutputTokens: 11},
				{Class: "chat", ArrivalUs: 500_000, FirstTokenUs: ft(500_300), DoneUs: 2_000_000, Outcome: late, InputTokens: 5, OutputTokens: 1},
				{Class: "chat", ArrivalUs: 600_000, Outcome: "dropped", Reason: "kv-full"},
				{Class: "chat", ArrivalUs: 700_000, Outcome: "dropped", Reason: string(dataplane.DropCancelled)},
			},
			answered: 2, refused: 1, cancelled: 1, classes: []string{"all"},
			spanUs: 2_000_000, reqPerS: 1, tokPerS: 6,
			// numpy's linear percentiles of two samples: TTFT {100, 300} → p50 200; E2E
			// {1,000,100, 1,500,000} → p99 1,000,100 + 0.99 × 499,900.
			ttftP50Us: 200, tpotP50Us: 100_000, e2eP99Us: 1_495_001,
		},
		{
			name: "two classes",
			recs: []RequestRecord{
				{Class: "a", ArrivalUs: 0, FirstTokenUs: ft(10), DoneUs: 1_000_000, Outcome: completed, OutputTokens: 2},
				{Class: "b", ArrivalUs: 0, FirstTokenUs: ft(30), DoneUs: 500_000, Outcome: completed, OutputTokens: 2},
			},
			answered: 2, classes: []string{"all", "a", "b"},
			spanUs: 1_000_000, reqPerS: 2, tokPerS: 4,
			// TTFT {10, 30} → 20; TPOT {999,990, 499,970} → 749,980; E2E {500,000,
			// 1,000,000} → p99 995,000.
			ttftP50Us: 20, tpotP50Us: 749_980, e2eP99Us: 995_000,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := NewEngineReport("p.json", formats.LLMProfile{Model: "m", GPU: "A100"}, "fcfs", true, "t.json", &Point{Requests: tc.recs})
			var classes []string
			for _, c := range rep.Classes {
				classes = append(classes, c.Class)
			}
			if rep.Requests != len(tc.recs) || rep.Answered != tc.answered || rep.Refused != tc.refused || rep.Cancelled != tc.cancelled ||
				!slices.Equal(classes, tc.classes) || rep.SpanUs != tc.spanUs || rep.RequestsPerS != tc.reqPerS || rep.OutputTokensPerS != tc.tokPerS {
				t.Fatalf("report %+v, classes %v", rep, classes)
			}
			all := rep.Classes[0]
			if all.TTFT.P50Us != tc.ttftP50Us || all.TPOT.P50Us != tc.tpotP50Us || all.E2E.P99Us != tc.e2eP99Us {
				t.Errorf("all: ttft %+v, tpot %+v, e2e %+v", all.TTFT, all.TPOT, all.E2E)
			}
			if tc.refused > 0 && rep.Dropped["kv-full"] != tc.refused {
				t.Errorf("dropped %v", rep.Dropped)
			}
			if rep.GPUCount != 1 || rep.Engine[len(rep.Engine)-1].Name != "kv_capacity_tokens" {
				t.Errorf("gpu count %d, settings %v", rep.GPUCount, rep.Engine)
			}
		})
	}
}
