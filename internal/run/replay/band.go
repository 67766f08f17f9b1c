package replay

import (
	"fmt"
	"io"

	dllm "github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/llm"
	"github.com/plan-dev/plan/sim"
)

// engineOutput is `plan simulate --llm -O json`: the engine report and the expected-error
// bands of its means.
type engineOutput struct {
	*sim.EngineReport
	ExpectedError *llm.Bands `json:"expected_error,omitempty"`
}

// expectedError are the replay's expected-error bands: the validation set's
// leave-one-run-out errors in the profile's regime at the utilisation the replay ran at
// (its mean requests in the engine, by Little's law, over what the engine holds at once).
func expectedError(prof *formats.LLMProfile, recs []sim.RequestRecord) *llm.Bands {
	r := llm.RegimeOf(prof)
	if len(recs) > 0 {
		var inUs, ctx float64
		first, last := recs[0].ArrivalUs, recs[0].DoneUs
		for _, q := range recs {
			inUs += float64(q.DoneUs - q.ArrivalUs)
			ctx += float64(q.InputTokens) + float64(q.OutputTokens)/2
			first, last = min(first, q.ArrivalUs), max(last, q.DoneUs)
		}
		if last > first {
			m := dllm.NewModel(prof)
			mean := ctx / float64(len(recs))
			// The cache in sequences of the mean context: under a hybrid KV layout a
			// sequence's tokens cost more than one token of the pool each (Model.SeqKV).
			kv := int64(m.KVCap)
			if per := m.SeqKV(mean); per > 0 {
				kv = int64(float64(m.KVCap) * mean / per)
			}
			r.Utilisation = llm.Utilisation(inUs/float64(last-first), m.MaxSeqs, kv, mean)
		}
	}
	b := llm.BandsFor(r, llm.ValidationRuns())
	return &b
}

// printBands prints the expected-error bands of the means and the regime's warnings, each
// once.
func printBands(w io.Writer, b *llm.Bands) {
	if b == nil {
		return
	}
	fmt.Fprintf(w, "expected error of the means: ttft %s, tpot %s, e2e %s (from %s)\n", b.TTFT, b.ITL, b.E2E, b.Basis)
	for _, why := range b.Widened {
		fmt.Fprintf(w, "  widened: %s\n", why)
	}
	for _, warn := range b.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
}
