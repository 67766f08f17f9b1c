package simulate

import (
	"fmt"
	"slices"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/run"
	"github.com/plan-dev/plan/profiler/llm"
	"github.com/plan-dev/plan/sim"
)

// printLLMBands prints, under the LLM table, the expected-error band of each LLM profile
// the plan runs (the validation set's leave-one-run-out errors in the profile's regime,
// llm.BandsFor) on the TTFT, TPOT and E2E means, and each distinct regime warning once.
// The bands hold for a load below saturation; the table's higher loads are past what the
// validation set covers.
func printLLMBands(io *run.IO, profs []formats.LLMProfile, rep *sim.Report) {
	hasLLM := false
	for _, p := range rep.Points {
		hasLLM = hasLLM || p.Total.LLM != nil
		for _, a := range p.Apps {
			hasLLM = hasLLM || a.LLM != nil
		}
	}
	if !hasLLM || len(profs) == 0 {
		return
	}
	seen := map[string]bool{}
	for i := range profs {
		p := &profs[i]
		key := fmt.Sprintf("%s@%d×%s", p.Model, max(p.GPUCount, 1), p.GPU)
		if seen[key] {
			continue
		}
		seen[key] = true
		b := llm.BandsFor(llm.RegimeOf(p), llm.ValidationRuns())
		fmt.Fprintf(io.Out, "expected error of the means, %s: ttft %s, tpot %s, e2e %s (below saturation; from %s)\n", key, b.TTFT, b.ITL, b.E2E, b.Basis)
		for _, w := range append(b.Widened, b.Warnings...) {
			if !seen[w] {
				seen[w] = true
				fmt.Fprintf(io.Out, "  %s\n", w)
			}
		}
	}
}

// printLatencyBands prints the expected-error band on the p50 and p99 latency the plan's
// own prediction recorded for each application other than an LLM class (at the plan's
// rates: formats.LatencyError), each distinct basis once. A plan written before bands were
// recorded has none and nothing is printed: the bands come from the prediction's runs, not
// from extra simulations.
func printLatencyBands(io *run.IO, pr *formats.Prediction) {
	if pr == nil {
		return
	}
	var bases []string
	for _, a := range pr.Apps {
		e := a.LatencyError
		if e == nil {
			continue
		}
		fmt.Fprintf(io.Out, "expected error of the latency at the plan's rates (its prediction), %s: p50 %s, p99 %s\n", a.Name, e.P50, e.P99)
		if !slices.Contains(bases, e.Basis) {
			bases = append(bases, e.Basis)
		}
	}
	for _, b := range bases {
		fmt.Fprintf(io.Out, "  from %s\n", b)
	}
}
