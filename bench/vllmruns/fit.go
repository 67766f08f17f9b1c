package vllmruns

import (
	"context"
	"fmt"
	"go/format"
	"math"
	"slices"
	"strings"

	"github.com/plan-dev/plan/internal/base/quantile"
	"github.com/plan-dev/plan/profiler/llm"
)

// The step model's terms that no kernel table measures — the per-step host time an engine
// with async scheduling leaves exposed, and the share of the eager elementwise kernels'
// cost a compiling V1 engine pays — are fitted here, globally (one value each for every
// model, GPU and run), on the validation set, and reported with their leave-one-run-out
// error: each run predicted with the values fitted on the others.

// Grid are the candidate corrections: host overhead 0–1,200 µs by 50 (the synchronous
// engine's is 400; the runs' errors move about 0.3 points per 50 µs, so a coarser step
// leaves the fit and each leave-one-out fit a step apart), elementwise share 0–1 by 0.25.
func Grid() []llm.Corrections {
	var g []llm.Corrections
	for us := 0.0; us <= 1200; us += 50 {
		for e := 0.0; e <= 1.0001; e += 0.25 {
			g = append(g, llm.Corrections{HostUs: us, ElementwiseScale: e})
		}
	}
	return g
}

// CorrectionsFit is the fitted corrections and how well they predict runs they were not
// fitted on.
type CorrectionsFit struct {
	Corrections llm.Corrections `json:"corrections"`
	// Fit are the median absolute errors (%) over the runs at Corrections, LOO each run's
	// at the corrections fitted on the other runs (E2E mean, TTFT mean, ITL mean).
	Fit, LOO Measured `json:"-"`
	// LOOBy are the corrections fitted without each run.
	LOOBy map[string]llm.Corrections `json:"loo_by"`
	Runs  int                        `json:"runs"`
	// Validation are the runs with their regimes and leave-one-run-out signed errors: what
	// the expected-error bands read (llm.ValidationRuns).
	Validation []llm.ValidationRun `json:"validation"`
}

// loss is a run's error at one candidate: the mean of the Huber losses of its E2E-, TTFT-
// and ITL-mean errors (%), the three figures the validation targets judge. Quadratic up to
// huberDeltaPct, the loss has one well-defined minimum where the runs' errors are small:
// a sum of absolute errors is flat wherever the runs that want more overhead balance those
// that want less, so which candidate won, and each run's leave-one-out fit, swung by
// ±200 µs on a 0.05-point difference. Linear beyond it, so a run off for a reason the step
// model does not hold (Scout's TTFT, −44%) weighs no more than its distance.
func loss(e Measured) float64 {
	return (huber(e.E2EMean) + huber(e.TTFTMean) + huber(e.ITLMean)) / 3
}

// huberDeltaPct is where loss turns linear: 10%, the widest validation target (TTFT mean).
const huberDeltaPct = 10

func huber(x float64) float64 {
	if a := math.Abs(x); a > huberDeltaPct {
		return huberDeltaPct * (a - huberDeltaPct/2)
	}
	return x * x / 2
}

// FitCorrections replays every run at every candidate of grid and fits the corrections that
// minimize the mean loss over the runs, with each run's leave-one-run-out error.
func FitCorrections(ctx context.Context, runs []Run, replay Replayer, seed uint64, grid []llm.Corrections, progress func(done, total int)) (CorrectionsFit, error) {
	if len(runs) < 2 || len(grid) == 0 {
		return CorrectionsFit{}, fmt.Errorf("fit: needs two runs and a grid (have %d runs, %d candidates)", len(runs), len(grid))
	}
	errs := make([][]Measured, len(grid)) // errs[g][r]: run r's whole-run errors at candidate g
	utils := make([][]float64, len(grid))
	for gi := range grid {
		res, err := ReplayAll(ctx, runs, replay, seed, &grid[gi], nil)
		if err != nil {
			return CorrectionsFit{}, err
		}
		for _, r := range res {
			errs[gi] = append(errs[gi], r.All.ErrorPct)
			utils[gi] = append(utils[gi], r.Utilisation)
		}
		if progress != nil {
			progress(gi+1, len(grid))
		}
	}
	best := func(skip int) int {
		bi, bv := 0, math.Inf(1)
		for gi := range grid {
			var sum float64
			for r := range runs {
				if r != skip {
					sum += loss(errs[gi][r])
				}
			}
			if sum < bv-1e-9 {
				bi, bv = gi, sum
			}
		}
		return bi
	}
	all := best(-1)
	fit := CorrectionsFit{Corrections: grid[all], Runs: len(runs), LOOBy: map[string]llm.Corrections{}}
	var fitE, looE []Measured
	for r, run := range runs {
		g := best(r)
		fit.LOOBy[run.ID] = grid[g]
		fitE, looE = append(fitE, errs[all][r]), append(looE, errs[g][r])
		e := errs[g][r]
		fit.Validation = append(fit.Validation, llm.ValidationRun{ID: run.ID, Model: run.model.Name, GPU: run.GPU, TP: run.TP, MoE: run.MoE(),
			WeightDType: strings.ToLower(run.Weights), Utilisation: utils[g][r], E2E: e.E2EMean, TTFT: e.TTFTMean, ITL: e.ITLMean})
	}
	fit.Fit, fit.LOO = absMedians(fitE), absMedians(looE)
	return fit, nil
}

// absMedians are the medians of the absolute E2E-, TTFT- and ITL-mean errors.
func absMedians(es []Measured) Measured {
	var e2e, ttft, itl []float64
	for _, e := range es {
		e2e, ttft, itl = append(e2e, math.Abs(e.E2EMean)), append(ttft, math.Abs(e.TTFTMean)), append(itl, math.Abs(e.ITLMean))
	}
	return Measured{E2EMean: round2(quantile.Median(e2e)), TTFTMean: round2(quantile.Median(ttft)), ITLMean: round2(quantile.Median(itl))}
}

// FittedCorrectionsSource is the Go source of profiler/llm's fitted corrections file.
func FittedCorrectionsSource(fit CorrectionsFit) string {
	ids := make([]string, 0, len(fit.LOOBy))
	for id := range fit.LOOBy {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var per strings.Builder
	for _, id := range ids {
		c := fit.LOOBy[id]
		fmt.Fprintf(&per, "//   - without run %s: %g µs, %g\n", id, c.HostUs, c.ElementwiseScale)
	}
	c := fit.Corrections
	src := fmt.Sprintf(`// Code generated by `+"`go test ./bench/vllmruns -run TestFitCorrections -update`"+`; DO NOT EDIT.

package llm

// The step model's learned terms (Corrections), fitted globally on the %d real vLLM runs of
// the validation set (bench/vllmruns: vLLM 0.15.1 on H100) by grid search, minimizing the
// mean over the runs of the Huber loss (quadratic to 10%%, linear beyond) of the E2E-, TTFT-
// and ITL-mean errors. At the fit the runs' median absolute errors are %.2f%% (E2E mean),
// %.2f%% (TTFT mean) and %.2f%% (ITL mean); each run predicted with the values fitted
// without it (leave one run out): %.2f%%, %.2f%% and %.2f%%. The values fitted without
// each run (host overhead, elementwise share):
%sconst (
	asyncStepOverheadUs      = %g
	compiledElementwiseScale = %g
)

// CorrectionsLOO are the leave-one-run-out median absolute errors (%%) of the fit on E2E
// mean, TTFT mean and ITL mean, which `+"`plan profile --explain`"+` reports beside the terms.
var CorrectionsLOO = [3]float64{%g, %g, %g}
`, fit.Runs, fit.Fit.E2EMean, fit.Fit.TTFTMean, fit.Fit.ITLMean, fit.LOO.E2EMean, fit.LOO.TTFTMean, fit.LOO.ITLMean,
		per.String(), c.HostUs, c.ElementwiseScale, fit.LOO.E2EMean, fit.LOO.TTFTMean, fit.LOO.ITLMean)
	if b, err := format.Source([]byte(src)); err == nil {
		return string(b)
	}
	return src
}

// ValidationSource is the Go source of profiler/llm's validation_errors.go: the runs'
// leave-one-run-out errors and the measured GPUs' kernel-table leave-one-out medians (loo:
// GPU → [worst of GEMM and decode attention, fused MoE], percent).
func ValidationSource(fit CorrectionsFit, loo map[string][2]float64) string {
	var b strings.Builder
	b.WriteString("// Code generated by `go test ./bench/vllmruns -run TestFitCorrections -update`; DO NOT EDIT.\n\npackage llm\n\n")
	b.WriteString("// validationRuns are the validation set's runs (bench/vllmruns) with their regimes and\n")
	b.WriteString("// leave-one-run-out signed errors, percent: each run predicted with the corrections fitted\n// on the others.\n")
	b.WriteString("var validationRuns = []ValidationRun{\n")
	for _, v := range fit.Validation {
		fmt.Fprintf(&b, "\t{ID: %q, Model: %q, GPU: %q, TP: %d, MoE: %t, WeightDType: %q, Utilisation: %g, E2E: %g, TTFT: %g, ITL: %g},\n",
			v.ID, v.Model, v.GPU, v.TP, v.MoE, v.WeightDType, v.Utilisation, v.E2E, v.TTFT, v.ITL)
	}
	b.WriteString("}\n\n// kernelTableLOO are each measured GPU's kernel-table leave-one-out medians, percent: the\n")
	b.WriteString("// worst of GEMM and decode attention, and the fused MoE table (kerneltab.LeaveOneOut).\n")
	b.WriteString("var kernelTableLOO = map[string][2]float64{\n")
	gpus := make([]string, 0, len(loo))
	for g := range loo {
		gpus = append(gpus, g)
	}
	slices.Sort(gpus)
	for _, g := range gpus {
		fmt.Fprintf(&b, "\t%q: {%g, %g},\n", g, loo[g][0], loo[g][1])
	}
	b.WriteString("}\n\n// ValidationRuns are the validation set's runs as the expected-error bands read them.\n")
	b.WriteString("func ValidationRuns() []ValidationRun { return validationRuns }\n")
	if src, err := format.Source([]byte(b.String())); err == nil {
		return string(src)
	}
	return b.String()
}
