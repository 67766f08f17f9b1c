package qlm

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestRCTDrainHand: hand check 1 — Θ = 2000 tok/s, n = 64, μ = 300, σ = 150 gives
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

// TestPlanMatchesBruteForce: hand check 2 — the MILP's optimum equals enumeration for
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

// benchProblem is a synthetic plan problem: G instances over 3 models, N groups with
// pseudo-random costs and deadlines (our CI scale at G = 4, N = 16; paper scale at
// G = 100, N = 400).
func benchProblem(G, N int) *PlanProblem {
	pr := &PlanProblem{}
	models := []string{"a", "b", "c"}
	for g := 0; g < G; g++ {
		pr.Instances = append(pr.Instances, PlanInstance{Loaded: models[g%3], Residual: float64(g % 5)})
	}
	// Deadlines scale with the load per instance so the problem is tight but mostly feasible.
	span := 10 * float64(N) / float64(G)
	for i := 0; i < N; i++ {
		var cs []*GroupCost
		for g := 0; g < G; g++ {
			w := 5 + float64((i*7+g*3)%11)
			cs = append(cs, &GroupCost{WMean: w, WQ: 1.2 * w, CMean: w + 2, CQ: 1.3 * (w + 2), Swap: 3})
		}
		pr.Groups = append(pr.Groups, PlanGroup{ID: i, Model: models[i%3], Deadline: 40 + span*float64(i*13%90)/90, Pinned: -1, Cost: cs})
	}
	return pr
}

// BenchmarkPlanGenerator: one re-plan at our CI scale (G = 4, N = 16; the MILP
// warm-started from the decomposition, and the decomposition alone, which the policy runs by
// default) and at the paper's scale (N = 400 groups; G = 100 instances as in QLM §8, and G = 8
// for long queues).
// ms/group is the decision overhead per request in the worst case of one-request groups
// (QLM §8.3 reports milliseconds per request).
func BenchmarkPlanGenerator(b *testing.B) {
	for _, c := range []struct {
		G, N int
		milp bool
	}{{4, 16, true}, {4, 16, false}, {100, 400, false}, {8, 400, false}} {
		name := fmt.Sprintf("G=%d/N=%d/decomposed", c.G, c.N)
		o := PlanOptions{TimeLimit: time.Second, MaxBinaries: -1}
		if c.milp {
			name = fmt.Sprintf("G=%d/N=%d/milp", c.G, c.N)
			o.MaxBinaries = 0
		}
		b.Run(name, func(b *testing.B) {
			pr := benchProblem(c.G, c.N)
			var sol PlanSolution
			for b.Loop() {
				sol = SolvePlan(pr, o)
			}
			ms := float64(b.Elapsed().Microseconds()) / 1e3 / float64(b.N)
			b.ReportMetric(ms, "ms/solve")
			b.ReportMetric(ms/float64(c.N), "ms/group")
			b.ReportMetric(float64(sol.Violations), "violations")
		})
	}
}

// TestDecomposedOrderExact: on one instance the decomposed generator's per-queue branch and
// bound must find the brute-force optimum (decomposed step 2 [ours]: enumeration for N_g ≤ 8).
func TestDecomposedOrderExact(t *testing.T) {
	for _, n := range []int{1, 3, 5, 6} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			pr := benchProblem(1, n)
			for i := range pr.Groups {
				pr.Groups[i].Deadline += 200 // feasible: brute force minimises among feasible
			}
			want := brute(pr)
			sol := SolvePlan(pr, PlanOptions{MaxBinaries: -1})
			if sol.Mode != "decomposed" || sol.Violations != 0 {
				t.Fatalf("mode %s, %d violations", sol.Mode, sol.Violations)
			}
			if got := Expected(pr, sol.Queues); math.Abs(got-want) > 1e-6 {
				t.Fatalf("decomposed objective %g, brute force %g; queues %v", got, want, sol.Queues)
			}
		})
	}
}

// TestDecomposedPlan: at the paper's scale the decomposed plan places every group exactly
// once on an eligible (and, if pinned, its own) instance, reports its own violations and
// objective, is deterministic, and is no worse than the EDF fallback.
func TestDecomposedPlan(t *testing.T) {
	cases := []struct{ G, N int }{{100, 400}, {8, 400}, {3, 40}}
	for _, c := range cases {
		t.Run(fmt.Sprintf("G=%d/N=%d", c.G, c.N), func(t *testing.T) {
			pr := benchProblem(c.G, c.N)
			// Some groups cannot run everywhere, some are pinned.
			for i := range pr.Groups {
				if i%5 == 0 {
					pr.Groups[i].Cost[(i+1)%c.G] = nil
				}
				if i%7 == 0 {
					pr.Groups[i].Pinned = i % c.G
					pr.Groups[i].Cost[i%c.G] = &GroupCost{WMean: 4, WQ: 5, CMean: 5, CQ: 6, Swap: 3}
				}
			}
			sol := SolvePlan(pr, PlanOptions{MaxBinaries: -1})
			seen := make([]int, c.N)
			for g, q := range sol.Queues {
				for _, i := range q {
					seen[i]++
					if pr.Groups[i].Cost[g] == nil || (pr.Groups[i].Pinned >= 0 && pr.Groups[i].Pinned != g) {
						t.Fatalf("group %d on ineligible instance %d", i, g)
					}
				}
			}
			for i, n := range seen {
				if n != 1 {
					t.Fatalf("group %d placed %d times", i, n)
				}
			}
			if v := Violations(pr, sol.Queues); v != sol.Violations {
				t.Fatalf("reported %d violations, plan has %d", sol.Violations, v)
			}
			if o := Expected(pr, sol.Queues); math.Abs(o-sol.Objective) > 1e-6*o {
				t.Fatalf("reported objective %g, plan has %g", sol.Objective, o)
			}
			again := SolvePlan(pr, PlanOptions{MaxBinaries: -1})
			if fmt.Sprint(again.Queues) != fmt.Sprint(sol.Queues) {
				t.Fatal("two solves of the same problem differ")
			}
			e := edfPlan(pr)
			if planScore(pr, e).less(planScore(pr, sol.Queues)) {
				t.Fatalf("EDF plan (%d violations, %g) beats the decomposed one (%d, %g)", Violations(pr, e), Expected(pr, e), sol.Violations, sol.Objective)
			}
		})
	}
}

// TestMILPWarmStartNoWorse: the MILP path keeps the decomposed plan unless it finds a better
// one, so with a short limit it is never worse than the decomposition alone.
func TestMILPWarmStartNoWorse(t *testing.T) {
	pr := benchProblem(2, 6)
	dec := SolvePlan(pr, PlanOptions{MaxBinaries: -1})
	mi := SolvePlan(pr, PlanOptions{TimeLimit: 50 * time.Millisecond})
	if planScore(pr, dec.Queues).less(planScore(pr, mi.Queues)) {
		t.Fatalf("MILP path %s (%d, %g) worse than decomposed (%d, %g)", mi.Mode, mi.Violations, mi.Objective, dec.Violations, dec.Objective)
	}
}
