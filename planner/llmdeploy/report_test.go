package llmdeploy

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/plan-dev/plan/planner"
)

// TestNoCandidateError: a comparison with no candidate at all says so — not that an SLO
// cannot be met — and is still infeasible to callers.
func TestNoCandidateError(t *testing.T) {
	err := error(noCandidateError{models: []string{"llama-3.1-70b"}})
	if !errors.Is(err, planner.ErrInfeasible) {
		t.Error("not infeasible")
	}
	if msg := err.Error(); strings.Contains(msg, "SLO") || !strings.Contains(msg, "no candidate exists for llama-3.1-70b") {
		t.Errorf("message %q", msg)
	}
}

// TestProfileTPNotes: a profile given for a GPU type replaces that type's estimates, so the
// search says which tensor-parallel sizes it therefore does not try there (and how to profile
// them); types without a profile get no note.
func TestProfileTPNotes(t *testing.T) {
	in := inputs(t, "workload.yaml", "cluster.yaml", "profile-8b-h100-tp1.json")
	notes := profileTPNotes(in, Options{TP: []int{1, 2, 4, 8}})
	if len(notes) != 1 || !strings.Contains(notes[0], "llama-3.1-8b on H100") || !strings.Contains(notes[0], "not at 2, 4, 8") || !strings.Contains(notes[0], "--tp 2,4,8") {
		t.Errorf("notes %q", notes)
	}
	if n := profileTPNotes(inputs(t, "workload.yaml", "cluster.yaml"), Options{TP: []int{1, 2, 4, 8}}); len(n) != 0 {
		t.Errorf("no profiles: notes %q", n)
	}
}

// TestCapacityCancelled: a cancelled search stops inside a candidate's capacity search (at
// its next probe), not only between candidates.
func TestCapacityCancelled(t *testing.T) {
	in := inputs(t, "workload.yaml", "cluster.yaml")
	cands, err := Enumerate(in, small)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := small.withDefaults()
	o.ctx = ctx
	c := cands[0]
	if _, err := Capacity(Evaluators[c.Mode], c, classesOf(in.Workload, c.Model), o); !errors.Is(err, context.Canceled) {
		t.Errorf("capacity under a cancelled context: %v, want context.Canceled", err)
	}
}

// TestDescribePastCount: a fleet row that buys more GPUs of a type than the cluster counts
// (a cost fleet is bounded by `available`, unset) says so, naming both numbers; within the
// count, or with available set (no count recorded), it says nothing.
func TestDescribePastCount(t *testing.T) {
	row := Row{Candidate: Candidate{Model: "m", Mode: Aggregated, Roles: []Role{{GPU: "H100", TP: 2}}}}
	for _, c := range []struct {
		name   string
		units  int
		counts map[string]int
		want   string
	}{
		{"past the count", 23, map[string]int{"H100": 16}, "(46 H100, the cluster has 16: no available set, so the cost fleet buys more)"},
		{"within it", 8, map[string]int{"H100": 16}, ""},
		{"available set", 23, map[string]int{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := &Result{Rows: []Row{row}, Counts: c.counts}
			got := res.describe(Fleet{Units: map[int]int{0: c.units}})
			if c.want == "" && strings.Contains(got, "(") || c.want != "" && !strings.HasSuffix(got, c.want) {
				t.Errorf("%q, want suffix %q", got, c.want)
			}
		})
	}
}
