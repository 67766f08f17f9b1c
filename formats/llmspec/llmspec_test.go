package llmspec_test

import (
	"slices"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/sectiontest"
)

// The in-tree set: the shared fixtures carry every system's section.
var secs = intree.Sections()

// badCase is a sectiontest.Case written positionally, as formats' tables were.
type badCase struct {
	name   string
	file   string
	mutate func(formats.Document)
	want   []string
}

func cases(bs []badCase) []sectiontest.Case {
	out := make([]sectiontest.Case, len(bs))
	for i, b := range bs {
		out[i] = sectiontest.Case{Name: b.name, File: b.file, Mutate: b.mutate, Want: b.want}
	}
	return out
}

func ms(d time.Duration) formats.Duration { return formats.Duration(d * time.Millisecond) }

// One bad-input case per rule of the workload section (moved from formats' tests, then from QLM's section).
func TestValidateLLMClasses(t *testing.T) {
	sectiontest.Run(t, secs, cases([]badCase{
		{"class name", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { llmspec.ClassesOf(w)[1].Name = "chat" }), []string{`workload.yaml: llm_classes[1].name: "chat": duplicate name (first at llm_classes[0].name)`}},
		{"class model", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { llmspec.ClassesOf(w)[1].Model = "" }), []string{`workload.yaml: llm_classes[1].model: "": must not be empty`}},
		{"class slo", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { llmspec.ClassesOf(w)[1].SLO = ms(-1) }), []string{`workload.yaml: llm_classes[1].slo: -1ms: must be > 0`}},
		{"class rate", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { llmspec.ClassesOf(w)[1].RateRPS = -1 }), []string{`workload.yaml: llm_classes[1].rate_rps: -1: must be >= 0`}},
		{"tokens mean", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { llmspec.ClassesOf(w)[1].InputTokens.Mean = 0 }), []string{`workload.yaml: llm_classes[1].input_tokens.mean: 0: must be > 0`}},
		{"tokens std", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { llmspec.ClassesOf(w)[1].OutputTokens.Std = -1 }), []string{`workload.yaml: llm_classes[1].output_tokens.std: -1: must be >= 0`}},
		{"tokens max", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { llmspec.ClassesOf(w)[1].OutputTokens.Max = 0 }), []string{`workload.yaml: llm_classes[1].output_tokens.max: 0: must be >= 1`}},
		{"slo percentile", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { llmspec.ClassesOf(w)[1].SLOPercentile = "p75" }), []string{`workload.yaml: llm_classes[1].slo_percentile: "p75": must be p50, p90, p95 or p99`}},
		{"ttft percentile without ttft_slo", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) {
			llmspec.ClassesOf(w)[1].TTFTSLO, llmspec.ClassesOf(w)[1].TTFTPercentile = 0, "p90"
		}), []string{`workload.yaml: llm_classes[1].ttft_percentile: "p90": states a percentile of an SLO the class does not set (ttft_slo)`}},
		{"tokens mean above max", "workload.yaml", sectiontest.Workload(func(w *formats.Workload) { llmspec.ClassesOf(w)[1].OutputTokens.Mean = 600 }), []string{`workload.yaml: llm_classes[1].output_tokens.mean: 600: must be <= max (512)`}},
	}))
}

// The classes against the other files given with them: each class's LLM in the profiles.
func TestCrossCheck(t *testing.T) {
	sectiontest.RunCross(t, secs, []sectiontest.CrossCase{
		{Name: "LLM class not profiled", Files: []string{"profile.json", "workload.yaml"}, Mutate: func(d map[string]formats.Document) {
			llmspec.ClassesOf(d["workload.yaml"].(*formats.Workload))[0].Model = "resnet50"
		}, Want: []string{`workload.yaml: llm_classes[0].model: "resnet50": LLM not found in any profile (profile.json)`}},
	})
}

// Percentiles: the stated percentile of each SLO, p99 where none (or an unknown one) is.
func TestPercentiles(t *testing.T) {
	c := llmspec.LLMClass{TTFTPercentile: "p90", TPOTPercentile: "p75"}
	if e2e, ttft, tpot := c.Percentiles(); e2e != 0.99 || ttft != 0.90 || tpot != 0.99 {
		t.Errorf("Percentiles() = %g, %g, %g, want 0.99, 0.9, 0.99", e2e, ttft, tpot)
	}
}

// DefaultPercentileNotes: one line naming each SLO set without a percentile, with the
// default it is judged at; none when every SLO set states one.
func TestDefaultPercentileNotes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		classes []llmspec.LLMClass
		want    []string
	}{
		{"all stated", []llmspec.LLMClass{{Name: "chat", SLO: formats.Duration(time.Second), SLOPercentile: "p90"}}, nil},
		{"unset SLOs need no percentile", []llmspec.LLMClass{{Name: "chat", TTFTSLO: formats.Duration(time.Second), TTFTPercentile: "p95"}}, nil},
		{"two defaulted", []llmspec.LLMClass{
			{Name: "chat", SLO: formats.Duration(time.Second), TTFTSLO: formats.Duration(time.Second), TTFTPercentile: "p95", TPOTSLO: formats.Duration(time.Millisecond)},
			{Name: "batch", SLO: formats.Duration(time.Minute)}},
			[]string{"SLOs judged at the default p99 (no percentile stated): chat slo, chat tpot_slo, batch slo"}},
	} {
		w := llmspec.SetClasses(&formats.Workload{}, tc.classes)
		if got := llmspec.DefaultPercentileNotes(w); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Rates: the section's targets are its classes' rates, and WithRates changes a copy.
func TestRates(t *testing.T) {
	w := llmspec.SetClasses(&formats.Workload{}, []llmspec.LLMClass{{Name: "chat", RateRPS: 2}, {Name: "batch", RateRPS: 1}})
	orig := llmspec.ClassesOf(w)
	llmspec.WorkloadSection.WithRates(w, func(name string, r float64) float64 { return 10 * r })
	got := llmspec.WorkloadSection.Targets(w)
	if len(got) != 2 || got[0].Name != "chat" || got[0].RateRPS != 20 || got[1].RateRPS != 10 {
		t.Errorf("targets after WithRates: %+v", got)
	}
	if orig[0].RateRPS != 2 {
		t.Errorf("WithRates changed the classes it copied: %g", orig[0].RateRPS)
	}
}
