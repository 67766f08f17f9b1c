package qlm

import (
	"math"
	"testing"
	"time"
)

// TestRCTDrainHand: spec §6 CI check 1 — Θ = 2000 tok/s, n = 64, μ = 300, σ = 150 gives
// E[W] = 9.6 s and sd = 0.6 s.
func TestRCTDrainHand(t *testing.T) {
	m, s := NewRCT(0).Drain(64, 300, 150, 2000)
	if math.Abs(m-9.6) > 1e-9 || math.Abs(s-0.6) > 1e-9 {
		t.Fatalf("drain %g ± %g, want 9.6 ± 0.6", m, s)
	}
	if z := NewRCT(0.95).Z; math.Abs(z-1.6449) > 1e-3 {
		t.Fatalf("z(0.95) = %g", z)
	}
}

// brute enumerates every assignment and order of groups to queues and returns the best
// expected objective among plans without predicted violations (+Inf when none).
func brute(pr *PlanProblem) float64 {
	best := math.Inf(1)
	G, N := len(pr.Instances), len(pr.Groups)
	q := make([][]int, G)
	used := make([]bool, N)
	var rec func(k int)
	rec = func(k int) {
		if k == N {
			if Violations(pr, q) == 0 {
				best = math.Min(best, Expected(pr, q))
			}
			return
		}
		for i := 0; i < N; i++ {
			if used[i] {
				continue
			}
			// place groups in index order of first use to avoid duplicates: any unused
			// group may go next on any queue.
			for g := 0; g < G; g++ {
				if pr.Groups[i].Cost[g] == nil || (pr.Groups[i].Pinned >= 0 && pr.Groups[i].Pinned != g) {
					continue
				}
				used[i] = true
				q[g] = append(q[g], i)
				rec(k + 1)
				q[g] = q[g][:len(q[g])-1]
				used[i] = false
			}
		}
	}
	rec(0)
	return best
}

// TestPlanMatchesBruteForce: spec §6 CI check 2 — the MILP's optimum equals enumeration for
// G ≤ 2, N ≤ 5 (strict mode, feasible instances).
func TestPlanMatchesBruteForce(t *testing.T) {
	mk := func(w, c, dl, swap float64) *GroupCost {
		return &GroupCost{WMean: w, WQ: w * 1.2, CMean: c, CQ: c * 1.3, Swap: swap}
	}
	cases := []struct {
		name string
		pr   PlanProblem
	}{
		{"one queue, three groups", PlanProblem{Now: 0, Instances: []PlanInstance{{Loaded: "a"}},
			Groups: []PlanGroup{
				{ID: 0, Model: "a", Deadline: 100, Pinned: -1, Cost: []*GroupCost{mk(10, 12, 0, 5)}},
				{ID: 1, Model: "b", Deadline: 30, Pinned: -1, Cost: []*GroupCost{mk(4, 6, 0, 5)}},
				{ID: 2, Model: "a", Deadline: 60, Pinned: -1, Cost: []*GroupCost{mk(8, 9, 0, 5)}},
			}}},
		{"two queues, five groups, swaps and pinning", PlanProblem{Now: 10, Instances: []PlanInstance{{Loaded: "a", Residual: 2}, {Loaded: "b"}},
			Groups: []PlanGroup{
				{ID: 0, Model: "a", Deadline: 60, Pinned: -1, Cost: []*GroupCost{mk(10, 12, 0, 3), mk(12, 14, 0, 3)}},
				{ID: 1, Model: "b", Deadline: 40, Pinned: -1, Cost: []*GroupCost{mk(4, 6, 0, 4), mk(5, 7, 0, 4)}},
				{ID: 2, Model: "a", Deadline: 80, Pinned: 0, Cost: []*GroupCost{mk(8, 9, 0, 3), mk(9, 10, 0, 3)}},
				{ID: 3, Model: "b", Deadline: 90, Pinned: -1, Cost: []*GroupCost{mk(6, 7, 0, 4), mk(6, 7, 0, 4)}},
				{ID: 4, Model: "a", Deadline: 100, Pinned: -1, Cost: []*GroupCost{nil, mk(3, 4, 0, 3)}},
			}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := brute(&c.pr)
			sol := SolvePlan(&c.pr, PlanOptions{TimeLimit: 5 * time.Second})
			if sol.Mode != "strict" {
				t.Fatalf("mode %s, want strict (brute force optimum %g)", sol.Mode, want)
			}
			got := Expected(&c.pr, sol.Queues)
			if math.Abs(got-want) > 1e-6*math.Max(1, want) || Violations(&c.pr, sol.Queues) != 0 {
				t.Fatalf("MILP objective %g (%d violations), brute force %g; queues %v", got, Violations(&c.pr, sol.Queues), want, sol.Queues)
			}
		})
	}
}

// TestPlanFallbacks: an infeasible (overloaded) problem falls back to soft mode and still
// places every group.
func TestPlanFallbacks(t *testing.T) {
	pr := PlanProblem{Instances: []PlanInstance{{Loaded: "a"}}, Groups: []PlanGroup{
		{ID: 0, Model: "a", Deadline: 1, Pinned: -1, Cost: []*GroupCost{{WMean: 5, WQ: 6, CMean: 5, CQ: 6, Swap: 1}}},
		{ID: 1, Model: "a", Deadline: 2, Pinned: -1, Cost: []*GroupCost{{WMean: 5, WQ: 6, CMean: 5, CQ: 6, Swap: 1}}},
	}}
	sol := SolvePlan(&pr, PlanOptions{})
	if !sol.Fallback || sol.Mode != "soft" || len(sol.Queues[0]) != 2 || sol.Violations != 2 {
		t.Fatalf("solution %+v", sol)
	}
}

// BenchmarkPlanGenerator: the CI-scale MILP of spec §4.3 (G = 4 instances, N = 16 groups,
// 3 models); divide ns/op by the requests the groups hold for the per-request overhead.
func BenchmarkPlanGenerator(b *testing.B) {
	pr := PlanProblem{}
	models := []string{"a", "b", "c"}
	for g := 0; g < 4; g++ {
		pr.Instances = append(pr.Instances, PlanInstance{Loaded: models[g%3], Residual: float64(g)})
	}
	for i := 0; i < 16; i++ {
		var cs []*GroupCost
		for g := 0; g < 4; g++ {
			w := 5 + float64((i*7+g*3)%11)
			cs = append(cs, &GroupCost{WMean: w, WQ: 1.2 * w, CMean: w + 2, CQ: 1.3 * (w + 2), Swap: 3})
		}
		pr.Groups = append(pr.Groups, PlanGroup{ID: i, Model: models[i%3], Deadline: 40 + float64(i*13%90), Pinned: -1, Cost: cs})
	}
	for b.Loop() {
		SolvePlan(&pr, PlanOptions{TimeLimit: time.Second})
	}
}
