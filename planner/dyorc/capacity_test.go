package dyorc

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	dp "github.com/plan-dev/plan/dataplane/dyorc"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/sim"
)

// TestCapacity: the capacity of testdata/dyorc/small.json's plan grows with the GPUs its
// placement is solved on and keeps the workload's mix; without a simulator it is the fitted
// formula U·(G − G₀)/W, bounded by each service's replicas; a plan missing what the model
// needs is an error naming it.
func TestCapacity(t *testing.T) {
	wl := load(t, "small.json").(*formats.Workload)
	base := load(t, "cluster.json").(*formats.Cluster)
	w, err := dp.Compile(dyorcsec.WorkflowsOf(wl))
	if err != nil {
		t.Fatal(err)
	}
	gillRate, imageRate := dyorcsec.WorkflowsOf(wl).Apps["gill"].RateRPS, dyorcsec.WorkflowsOf(wl).Apps["image"].RateRPS
	var work float64
	for _, l := range Load(w) {
		work += l
	}
	prev := 0.0
	for _, gpus := range []int{2, 4} {
		cl := *base
		cl.GPUs = append([]formats.GPUPool(nil), base.GPUs...)
		cl.GPUs[0].Count, cl.GPUs[0].PerServer = gpus, gpus
		p, err := Solve(context.Background(), wl, &cl, nil, Options{TimeLimit: 20 * time.Second, Deterministic: true})
		if err != nil {
			t.Fatal(err)
		}
		c, err := Capacity(p, testSim)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d GPUs: %v", gpus, c)
		if c["gill"] <= prev {
			t.Errorf("%d GPUs: gill capacity %.3f does not grow (%.3f on fewer)", gpus, c["gill"], prev)
		}
		if math.Abs(c["image"]/c["gill"]-imageRate/gillRate) > 1e-9 {
			t.Errorf("%d GPUs: capacity %v leaves the workload's mix %g:%g", gpus, c, gillRate, imageRate)
		}
		prev = c["gill"]
		{ // no simulator: the fitted formula alone
			c, err := Capacity(p, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := gillRate * CapacityUtilization * (float64(gpus) - CapacityReserveGPUs) / work
			if math.Abs(c["gill"]-want) > 1e-9 || math.Abs(c["image"]-imageRate/gillRate*want) > 1e-9 {
				t.Errorf("%d GPUs, fitted formula: capacity %v, want the pooled gill %.4f and image %.4f", gpus, c, want, imageRate/gillRate*want)
			}
		}
	}
	// One GPU holds every service, 15 more hold llm7b alone: by the fitted formula sd15's
	// single replica bounds gill (U·1/load of sd15), cap's bounds image.
	var place []dyorcsec.GPUServices
	place = append(place, dyorcsec.GPUServices{GPU: 0, Services: []string{"vit", "llm7b", "sd15", "det", "ocr", "cap", "upscale"}})
	for g := 1; g < 16; g++ {
		place = append(place, dyorcsec.GPUServices{GPU: g, Services: []string{"llm7b"}})
	}
	one := dyorcsec.SetPlan(&formats.Plan{Cluster: base, Provenance: formats.Provenance{Embedded: &formats.EmbeddedInputs{Workload: wl}}}, &dyorcsec.DyOrcPlan{Placement: place})
	{ // no simulator: the fitted formula alone
		c, err := Capacity(one, nil)
		if err != nil {
			t.Fatal(err)
		}
		l := Load(w)
		if want := gillRate * CapacityUtilization / l[w.SvcIndex["sd15"]]; math.Abs(c["gill"]-want) > 1e-9 {
			t.Errorf("one sd15 replica: gill capacity %.4f, want %.4f", c["gill"], want)
		}
		if want := imageRate * CapacityUtilization / l[w.SvcIndex["cap"]]; math.Abs(c["image"]-want) > 1e-9 {
			t.Errorf("one cap replica: image capacity %.4f, want %.4f", c["image"], want)
		}
	}
	cases := []struct {
		name string
		p    *formats.Plan
		want string
	}{
		{"no section", &formats.Plan{}, "no dyorc section"},
		{"no inputs", dyorcsec.SetPlan(&formats.Plan{}, &dyorcsec.DyOrcPlan{}), "provenance.embedded holds no workload"},
		{"service unplaced", dyorcsec.SetPlan(&formats.Plan{Cluster: base, Provenance: formats.Provenance{Embedded: &formats.EmbeddedInputs{Workload: wl}}},
			&dyorcsec.DyOrcPlan{Placement: []dyorcsec.GPUServices{{GPU: 0, Services: []string{"vit", "llm7b", "det", "ocr", "cap", "upscale"}}}}), "service sd15 is placed on no GPU"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Capacity(tc.p, testSim); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestSearchScale: the capacity search brackets from its start by capacityStep and bisects to
// CapacityPrecision from either side, and gives 0 when nothing holds.
func TestSearchScale(t *testing.T) {
	for _, tc := range []struct{ start, limit float64 }{{1, 1.7}, {1, 0.3}, {0.2, 5}, {3, 3}, {1, 0}} {
		probes := 0
		got, err := searchScale(tc.start, func(k float64) (bool, error) { probes++; return k <= tc.limit, nil })
		if err != nil {
			t.Fatal(err)
		}
		if tc.limit == 0 {
			if got != 0 {
				t.Errorf("start %g, nothing holds: %g, want 0", tc.start, got)
			}
			continue
		}
		if got > tc.limit || got < tc.limit/CapacityPrecision {
			t.Errorf("start %g, limit %g: %g (%d probes), want within %g below the limit", tc.start, tc.limit, got, probes, CapacityPrecision)
		}
	}
}

// TestCapacityAgreesWithSimulation: on every bundled DyOrc workload, on the cluster it is
// solved on, the plan's capacity is what the simulator serves: at the capacity, arrivals
// other than those the search simulated keep every app within 5 points of its 99% target;
// at 1.4× the capacity some app misses its target (the capacity is not far below what the
// plan serves: on 4 GPUs, with few and long batches, the attainment sinks by only about 1.5
// points per quarter of the capacity, so that 1.25× stays within the arrivals' scatter).
// The fitted formula (estimate) is logged beside it: it is 2 to 3× low for an app alone and
// was 17% high for the autopilot fixture's mix at 16 and 160 rps, whose plan missed.
func TestCapacityAgreesWithSimulation(t *testing.T) {
	const (
		target = 0.99
		slack  = 0.05 // attainment points
		above  = 1.4
		seed   = 1000 // other arrivals than the search's (PredictionSeed and its replications)
	)
	cases := []struct{ workload, cluster string }{
		{"dyorc/small.json", "dyorc/cluster-small.json"},
		{"dyorc/small-overload.json", "dyorc/cluster-small.json"},
		{"dyorc/image.json", "dyorc/cluster.json"},
		{"dyorc/gill.json", "dyorc/cluster.json"},
		{"dyorc/kc.json", "dyorc/cluster.json"},
		{"dyorc/debate.json", "dyorc/cluster.json"},
		{"dyorc/workload.json", "dyorc/cluster.json"},
		{"autopilot/dyorc-workload.json", "autopilot/dyorc-cluster.json"},
	}
	for _, tc := range cases {
		t.Run(tc.workload, func(t *testing.T) {
			wl, cl := readInputs(t, tc.workload, tc.cluster)
			p, err := Solve(context.Background(), wl, cl, nil, Options{TimeLimit: 20 * time.Second, Deterministic: true})
			if err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			c, err := Capacity(p, testSim)
			if err != nil {
				t.Fatal(err)
			}
			searched := time.Since(began)
			est, w, err := estimate(p)
			if err != nil {
				t.Fatal(err)
			}
			a0 := &w.Apps[0]
			k := c[a0.Name] / rateOf(a0)
			at := func(k float64) []float64 {
				q, err := atScale(p, k)
				if err != nil {
					t.Fatal(err)
				}
				dep, err := dp.FromPlan(q)
				if err != nil {
					t.Fatal(err)
				}
				var rates []float64
				for _, a := range dep.Apps {
					rates = append(rates, a.RateRPS)
				}
				dur := dataplane.Time(workload.PredictionSpan(rates) * float64(dataplane.Second))
				pt, err := sim.PoissonPoint(dep, dataplane.NewRegistry(dp.Policies()...), policyOf(p), nil, dur, -1, seed)
				if err != nil {
					t.Fatal(err)
				}
				var att []float64
				for _, a := range pt.Apps {
					att = append(att, a.Attainment)
				}
				return att
			}
			atCap, past := at(k), at(above*k)
			t.Logf("capacity %.3f× the rates (fitted formula %.3f×, searched in %v): attainment %v there, %v at %.2f×",
				k, est[a0.Name]/rateOf(a0), searched.Round(time.Millisecond), atCap, past, above)
			if k <= 0 {
				t.Fatalf("capacity %v: the plan serves no rate in simulation", c)
			}
			for i, a := range atCap {
				if a < target-slack {
					t.Errorf("%s at its capacity %.4g req/s: attainment %.2f%%, more than %.0f points below %.0f%%", w.Apps[i].Name, c[w.Apps[i].Name], 100*a, 100*slack, 100*target)
				}
			}
			missed := false
			for _, a := range past {
				missed = missed || a < target
			}
			if !missed {
				t.Errorf("every app holds %.0f%% at %.2f× the capacity (%v): the capacity is too low", 100*target, above, past)
			}
		})
	}
}
