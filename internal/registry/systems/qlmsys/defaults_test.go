package qlmsys

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/sim"
)

// TestDefaultNotes: a solve records the defaults it took in provenance.defaults and reports
// the same lines (solve prints them); the SLO judged at the default percentile is named,
// and so is each model's engine left to vLLM's defaults for its GPU (once, with the
// values), but not once the workload states the percentile and the profile the budgets.
func TestDefaultNotes(t *testing.T) {
	in := ragInputs(t)
	pl := New(system.Handle{Point: sim.PoissonPoint}).(qlmSystem).NewPlanner()
	plan, err := pl.Solve(context.Background(), in, planner.Settings{Deterministic: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"SLOs judged at the default p99 (no percentile stated): rag slo"}
	if got := plan.Provenance.Defaults; !slices.Equal(got, want) {
		t.Errorf("provenance.defaults = %q, want %q", got, want)
	}
	rep := pl.(planner.Reporter).Report()
	if len(rep) != 1 || rep[0].Header[0] != "NOTE" || len(rep[0].Rows) != 1 || rep[0].Rows[0][0] != want[0] {
		t.Errorf("report %v, want one NOTE table of %q", rep, want)
	}

	// The same plan, its profile's budgets unset: the engine runs vLLM's defaults.
	bare := *in.Profiles[0]
	bare.LLMs = slices.Clone(bare.LLMs)
	for i := range bare.LLMs {
		if it := bare.LLMs[i].Iteration; it != nil {
			c := *it
			c.MaxSeqs, c.MaxBatchedTokens = 0, 0
			bare.LLMs[i].Iteration = &c
		}
		bare.LLMs[i].Engine = nil
	}
	tokens, seqs := formats.DefaultBatchedTokens("A100")
	engine := fmt.Sprintf("engine budgets at vLLM's defaults for A100 (the profile sets none): mistral-7b on 1×A100: max_num_seqs %d, max_num_batched_tokens %d", seqs, tokens)
	stated := *in.Workload
	stated.Sections = maps.Clone(stated.Sections) // its own classes
	classes := slices.Clone(llmspec.ClassesOf(in.Workload))
	for i := range classes {
		classes[i].SLOPercentile = "p90"
	}
	llmspec.SetClasses(&stated, classes)
	for _, tc := range []struct {
		name string
		in   planner.Inputs
		want []string
	}{
		{"budgets at the defaults", planner.Inputs{Workload: in.Workload, Profiles: []*formats.Profile{&bare}}, []string{want[0], engine}},
		{"all stated", planner.Inputs{Workload: &stated, Profiles: in.Profiles}, nil},
	} {
		if got := defaultNotes(tc.in, plan); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
