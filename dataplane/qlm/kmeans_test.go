package qlm

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/sim"
)

// TestKMeansGroups: Alg. 1 (QLM §4) — groups never mix models, SLO classes stay apart,
// token statistics separate when k allows, no group exceeds δ·avg_batch (split earliest
// arrivals first), every request is in exactly one group, and the result is seeded.
func TestKMeansGroups(t *testing.T) {
	mk := func(model string, dl, in float64, n int, arr0 float64) []GroupItem {
		var out []GroupItem
		for k := 0; k < n; k++ {
			out = append(out, GroupItem{Model: model, Deadline: dl + float64(k%3)*0.1, InTokens: in + float64(k%5), OutMean: 200, Arrival: arr0 + float64(k)})
		}
		return out
	}
	cases := []struct {
		name  string
		items []GroupItem
		cap   int
		// same[i][j]: items i and j must share a group; apart: must not.
		apart [][2]int
		same  [][2]int
		want  int // number of groups (0 = do not check)
	}{
		{"two models", append(mk("a", 10, 100, 4, 0), mk("b", 10, 100, 4, 0)...), 100, [][2]int{{0, 4}, {3, 7}}, [][2]int{{0, 3}, {4, 7}}, 2},
		{"interactive vs batch", append(mk("a", 5, 100, 4, 0), mk("a", 600, 100, 4, 10)...), 100, [][2]int{{0, 4}, {3, 7}}, [][2]int{{0, 3}, {4, 7}}, 2},
		{"token lengths", append(mk("a", 10, 50, 4, 0), mk("a", 10, 2000, 4, 0)...), 4, [][2]int{{0, 4}, {1, 5}}, [][2]int{{0, 3}, {4, 7}}, 2},
		{"split above cap", mk("a", 10, 100, 1, 0), 3, [][2]int{{0, 3}, {2, 3}, {4, 5}, {7, 8}}, [][2]int{{0, 1}, {0, 2}, {3, 4}, {5, 6}, {5, 7}, {8, 9}}, 4},
	}
	// The split case: ten identical requests in arrival order, cap 3: halves 5+5, then
	// 3+2 each, earliest arrivals first.
	for k := 1; k < 10; k++ {
		it := cases[3].items[0]
		it.Arrival = float64(k)
		cases[3].items = append(cases[3].items, it)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			capFor := func(string) int { return c.cap }
			gs := KMeansGroups(c.items, capFor, 7)
			where := map[int]int{}
			for g, members := range gs {
				if len(members) > c.cap {
					t.Fatalf("group %d has %d members, cap %d", g, len(members), c.cap)
				}
				for k, i := range members {
					if _, dup := where[i]; dup {
						t.Fatalf("item %d in two groups", i)
					}
					where[i] = g
					if c.items[i].Model != c.items[members[0]].Model {
						t.Fatalf("group %d mixes models", g)
					}
					if k > 0 && c.items[i].Arrival < c.items[members[k-1]].Arrival {
						t.Fatalf("group %d not in arrival order: %v", g, members)
					}
				}
			}
			if len(where) != len(c.items) {
				t.Fatalf("%d of %d items grouped", len(where), len(c.items))
			}
			for _, p := range c.apart {
				if where[p[0]] == where[p[1]] {
					t.Errorf("items %d and %d share group %d: %v", p[0], p[1], where[p[0]], gs)
				}
			}
			for _, p := range c.same {
				if where[p[0]] != where[p[1]] {
					t.Errorf("items %d and %d apart: %v", p[0], p[1], gs)
				}
			}
			if c.want > 0 && len(gs) != c.want {
				t.Errorf("%d groups, want %d: %v", len(gs), c.want, gs)
			}
			if again := KMeansGroups(c.items, capFor, 7); fmt.Sprint(again) != fmt.Sprint(gs) {
				t.Errorf("not deterministic: %v vs %v", again, gs)
			}
		})
	}
}

// withSetup returns a copy of dep whose stored set-up is edited by f.
func withSetup(t *testing.T, dep *dataplane.Deployment, f func(*Setup)) *dataplane.Deployment {
	t.Helper()
	var st Setup
	if err := json.Unmarshal([]byte(dep.Apps[0].Params[paramSetup]), &st); err != nil {
		t.Fatal(err)
	}
	f(&st)
	cp := *dep
	cp.Apps = append([]dataplane.App(nil), dep.Apps...)
	cp.Apps[0].Params = map[string]string{paramSetup: encode(st), paramClass: dep.Apps[0].Params[paramClass]}
	return &cp
}

// TestKMeansGroupingPolicy: with grouping "kmeans" QLM re-forms groups at every re-plan and
// still finishes every request exactly once, deterministically; an unknown grouping is
// refused at attach time naming the field.
func TestKMeansGroupingPolicy(t *testing.T) {
	dep := withSetup(t, Sample(rand.New(rand.NewPCG(1, 0xc0f0))), func(s *Setup) { s.Grouping = "kmeans" })
	run := func() (string, *Stats) {
		p, err := Registry().New(dep, dataplane.Config{Policy: PolicyQLM}, PolicyQLM)
		if err != nil {
			t.Fatal(err)
		}
		spec, _ := sim.ParseArrival("bursty:3")
		srcs := make([]sim.Source, len(dep.Apps))
		for a := range dep.Apps {
			// Three times the classes' rates: overloaded enough to predict a violation (and
			// re-plan) even once idle instances split started groups.
			srcs[a], _ = spec.New(dep.Apps[a].RateRPS*3, dep.Apps[a].Name, uint64(a))
		}
		s, err := sim.New(dep, p, srcs, sim.Options{Duration: 3 * dataplane.Second, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Run(); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, r := range s.Engine.Requests() {
			if r.Outcome == dataplane.Pending {
				t.Fatalf("request %d never finished", r.ID)
			}
			fmt.Fprintf(&b, "%d:%v:%d ", r.ID, r.Outcome, r.Done)
		}
		return b.String(), p.(*Policy).Stats()
	}
	a, st := run()
	if st.Replans == 0 {
		t.Fatal("no re-plan happened: the k-means path was not exercised")
	}
	if b, _ := run(); a != b {
		t.Fatal("two runs differ")
	}
	bad := withSetup(t, dep, func(s *Setup) { s.Grouping = "kmedoids" })
	p, err := Registry().New(bad, dataplane.Config{Policy: PolicyQLM}, PolicyQLM)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.New(bad, p, make([]sim.Source, len(bad.Apps)), sim.Options{Duration: dataplane.Second}); err == nil || !strings.Contains(err.Error(), "setup.grouping") {
		t.Fatalf("unknown grouping: %v", err)
	}
}
