package pard_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/pard"
	"github.com/plan-dev/plan/internal/fixture/policytest"
	"github.com/plan-dev/plan/sim"
)

// scaleRun is one BenchmarkSimScale point: policy pol on the k× pipeline at load for
// 10 simulated seconds; compact > 0 compacts the engine every that many events.
func scaleRun(tb testing.TB, pol string, k int, load float64, compact int64) *sim.Sim {
	tb.Helper()
	dep := scaledPipeline(tb, k, load)
	p, err := pard.NewPolicy(dataplane.Config{Policy: pol})
	if err != nil {
		tb.Fatal(err)
	}
	src, err := sim.ArrivalSpec{Kind: "poisson"}.New(dep.Apps[0].RateRPS, dep.Apps[0].Name, 1)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := sim.New(dep, p, []sim.Source{src}, sim.Options{Duration: 10 * dataplane.Second, Seed: 1, CompactEvery: compact})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestSimScaleDecisionHash runs BenchmarkSimScale's points once each (and the 16-worker
// points again with engine compaction) and checks the decision-stream hash against the one
// recorded before the cancel/forget change: a refactor of the policy's
// state must not change a single decision.
func TestSimScaleDecisionHash(t *testing.T) {
	// Recorded at e3a0a60, before PARD's policies handled EvCancel and Forget. At load 0.9
	// PARD drops nothing and decides as FIFO does; the overload points (load 1.5, every
	// pipeline policy) exercise the drop rules and queue orders.
	want := map[string]string{
		"pard/k=1/load=0.9/compact=0":           "f83b594b181aa748",
		"pard/k=4/load=0.9/compact=0":           "ab68b6946288d13b",
		"pard/k=16/load=0.9/compact=0":          "df239ba08c1d692e",
		"pard/k=1/load=0.9/compact=4096":        "f83b594b181aa748",
		"none/k=1/load=0.9/compact=0":           "f83b594b181aa748",
		"none/k=4/load=0.9/compact=0":           "ab68b6946288d13b",
		"none/k=16/load=0.9/compact=0":          "df239ba08c1d692e",
		"none/k=1/load=0.9/compact=4096":        "f83b594b181aa748",
		"none/k=1/load=1.5/compact=0":           "b6e0cdb8d4d8f202",
		"none/k=1/load=1.5/compact=4096":        "b6e0cdb8d4d8f202",
		"nexus/k=1/load=1.5/compact=0":          "1ce33a31d23296b5",
		"nexus/k=1/load=1.5/compact=4096":       "1ce33a31d23296b5",
		"clipper++/k=1/load=1.5/compact=0":      "453d76a8f288d9d8",
		"clipper++/k=1/load=1.5/compact=4096":   "453d76a8f288d9d8",
		"nexus-split/k=1/load=1.5/compact=0":    "69957791c1f33471",
		"nexus-split/k=1/load=1.5/compact=4096": "69957791c1f33471",
		"nexus-cum/k=1/load=1.5/compact=0":      "69957791c1f33471",
		"nexus-cum/k=1/load=1.5/compact=4096":   "69957791c1f33471",
		// One module: the cumulative deadline is the local one (clipper++ = clipper++-local,
		// the hash clipper++ had before its default became the cumulative reading).
		"clipper++-local/k=1/load=1.5/compact=0":           "453d76a8f288d9d8",
		"clipper++-local/k=1/load=1.5/compact=4096":        "453d76a8f288d9d8",
		"clipper++-local-expire/k=1/load=1.5/compact=0":    "453d76a8f288d9d8",
		"clipper++-local-expire/k=1/load=1.5/compact=4096": "453d76a8f288d9d8",
		"clipper++-local-te/k=1/load=1.5/compact=0":        "2d845bef0851a522",
		"clipper++-local-te/k=1/load=1.5/compact=4096":     "2d845bef0851a522",
		"clipper++-cum-te/k=1/load=1.5/compact=0":          "2d845bef0851a522",
		"clipper++-cum-te/k=1/load=1.5/compact=4096":       "2d845bef0851a522",
		"clipper++-enqueue/k=1/load=1.5/compact=0":         "9ca45f327286e26c",
		"clipper++-enqueue/k=1/load=1.5/compact=4096":      "9ca45f327286e26c",
		"pard/k=1/load=1.5/compact=0":                      "ded3cc2201392f09",
		"pard/k=1/load=1.5/compact=4096":                   "ded3cc2201392f09",
		"pard-back/k=1/load=1.5/compact=0":                 "4f2ef55b924c2308",
		"pard-back/k=1/load=1.5/compact=4096":              "4f2ef55b924c2308",
		"pard-sf/k=1/load=1.5/compact=0":                   "50734258b9edec1b",
		"pard-sf/k=1/load=1.5/compact=4096":                "50734258b9edec1b",
		"pard-oc/k=1/load=1.5/compact=0":                   "54bbc9c56783568f",
		"pard-oc/k=1/load=1.5/compact=4096":                "54bbc9c56783568f",
		"pard-split/k=1/load=1.5/compact=0":                "f361a21176b49a05",
		"pard-split/k=1/load=1.5/compact=4096":             "f361a21176b49a05",
		"pard-wcl/k=1/load=1.5/compact=0":                  "15a44e66f67d6112",
		"pard-wcl/k=1/load=1.5/compact=4096":               "15a44e66f67d6112",
		"pard-lower/k=1/load=1.5/compact=0":                "f420c2c1dcdfac00",
		"pard-lower/k=1/load=1.5/compact=4096":             "f420c2c1dcdfac00",
		"pard-upper/k=1/load=1.5/compact=0":                "f1ade6d1a4d41992",
		"pard-upper/k=1/load=1.5/compact=4096":             "f1ade6d1a4d41992",
		"pard-fcfs/k=1/load=1.5/compact=0":                 "41035cbd3b5fc602",
		"pard-fcfs/k=1/load=1.5/compact=4096":              "41035cbd3b5fc602",
		"pard-hbf/k=1/load=1.5/compact=0":                  "eba7bfc36abc25b7",
		"pard-hbf/k=1/load=1.5/compact=4096":               "eba7bfc36abc25b7",
		"pard-lbf/k=1/load=1.5/compact=0":                  "41035cbd3b5fc602",
		"pard-lbf/k=1/load=1.5/compact=4096":               "41035cbd3b5fc602",
		"pard-instant/k=1/load=1.5/compact=0":              "ded3cc2201392f09",
		"pard-instant/k=1/load=1.5/compact=4096":           "ded3cc2201392f09",
	}
	type point struct {
		pol     string
		k       int
		load    float64
		compact int64
	}
	var points []point
	for _, pol := range []string{"pard", "none"} {
		for _, k := range []int{1, 4, 16} {
			points = append(points, point{pol, k, 0.9, 0})
		}
		points = append(points, point{pol, 1, 0.9, 1 << 12})
	}
	for _, pol := range pard.PipelinePolicies() {
		points = append(points, point{pol, 1, 1.5, 0}, point{pol, 1, 1.5, 1 << 12})
	}
	full := os.Getenv("PLAN_SCALE_HASH_FULL") != ""
	for _, pt := range points {
		name := fmt.Sprintf("%s/k=%d/load=%g/compact=%d", pt.pol, pt.k, pt.load, pt.compact)
		if pt.k > 1 && !full {
			continue // the 64- and 256-worker points run with PLAN_SCALE_HASH_FULL=1
		}
		t.Run(name, func(t *testing.T) {
			s := scaleRun(t, pt.pol, pt.k, pt.load, pt.compact)
			h := &policytest.DecisionHasher{}
			s.Engine.Observe(h.Observe)
			if _, err := s.Run(); err != nil {
				t.Fatal(err)
			}
			got := h.Sum()
			t.Logf("%q: %q, // events %d", name, got, s.Engine.Events())
			if w := want[name]; w != got {
				t.Errorf("%s: decision hash %s, want %s", name, got, w)
			}
		})
	}
}
