package pard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/pardsec"
	"github.com/plan-dev/plan/planner"
)

// randomCostCase is a chain of 2–3 modules (one model each) on 1–3 GPU types with random
// prices, at most 8 of each type, batch latencies for batches 1–4 per type.
func randomCostCase(r *rand.Rand) (Inputs, time.Duration) {
	K, M := 1+r.IntN(3), 2+r.IntN(2)
	c := &formats.Cluster{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindCluster}, NICGbps: 10}
	for k := range K {
		price := math.Round((0.2+3*r.Float64())*100) / 100
		if r.IntN(5) == 0 {
			price = 0 // a free type: no worker count follows from the cost
		}
		avail := 8
		c.GPUs = append(c.GPUs, formats.GPUPool{Type: fmt.Sprintf("G%d", k), PerServer: 8, MemoryBytes: 16 << 30, PricePerHour: &price, Available: &avail})
	}
	prof := formats.Profile{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindProfile}}
	pl := pardsec.Pipeline{Name: "app", RateRPS: float64(50 + r.IntN(150))}
	for m := range M {
		name := fmt.Sprintf("m%d", m)
		mp := formats.ModelProfile{Name: name, Backend: "roofline", Blocks: []formats.Block{{FirstLayer: 0, EndLayer: 1}}}
		for k := range K {
			base := 2000 + 20000*r.Float64()
			for b := 1; b <= 4; b++ {
				lat := math.Round(base * (1 + 0.6*float64(b-1)) * (0.9 + 0.2*r.Float64()))
				mp.Latency = append(mp.Latency, formats.LatencyEntry{GPU: c.GPUs[k].Type, VGPU: 1, Batch: b, BlockUs: []float64{lat}})
			}
		}
		prof.Models = append(prof.Models, mp)
		mod := pardsec.Module{Name: name, Model: name}
		if m > 0 {
			mod.After = []pardsec.Edge{{Module: fmt.Sprintf("m%d", m-1)}}
		}
		pl.Modules = append(pl.Modules, mod)
	}
	slo := time.Duration(40+r.IntN(120)) * time.Millisecond
	pl.SLO = formats.Duration(slo)
	w := pardsec.SetPipelines(&formats.Workload{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindWorkload}}, []pardsec.Pipeline{pl})
	return Inputs{Workload: w, Profiles: []formats.Profile{prof}, Cluster: c}, slo
}

// exhaustiveCost enumerates every (GPU type, batch) per module of the chain and returns the
// least Σ price·workers meeting Σ 2·d ≤ 0.8·SLO and every type's available count.
func exhaustiveCost(in Inputs, slo time.Duration) float64 {
	pl := pardsec.PipelinesOf(in.Workload)[0]
	type opt struct {
		k, workers int
		lat        float64
	}
	var opts [][]opt
	for _, mod := range pl.Modules {
		mp, _ := in.Profiles[0].Model(mod.Model)
		var os []opt
		for k, g := range in.Cluster.GPUs {
			for b := 1; b <= 4; b++ {
				e, _ := mp.Lookup(g.Type, 1, b)
				lat := e.WholeUs()
				os = append(os, opt{k, max(1, int(math.Ceil(pl.RateRPS*lat/1e6/float64(b)))), lat})
			}
		}
		opts = append(opts, os)
	}
	budget := DefaultSLOFraction * float64(slo/time.Microsecond)
	best := math.Inf(1)
	pick := make([]opt, len(opts))
	var rec func(i int)
	rec = func(i int) {
		if i == len(opts) {
			lat, cost := 0.0, 0.0
			use := make([]int, len(in.Cluster.GPUs))
			for _, o := range pick {
				lat += 2 * o.lat
				use[o.k] += o.workers
				cost += *in.Cluster.GPUs[o.k].PricePerHour * float64(o.workers)
			}
			if lat > budget {
				return
			}
			for k, u := range use {
				if u > *in.Cluster.GPUs[k].Available {
					return
				}
			}
			best = math.Min(best, cost)
			return
		}
		for _, o := range opts[i] {
			pick[i] = o
			rec(i + 1)
		}
	}
	rec(0)
	return best
}

// TestProvisionCostExhaustive: on 100 random chains small enough to enumerate (≤ 3 GPU types,
// ≤ 8 GPUs each), the cost objective's fleet costs exactly the exhaustive optimum, its
// recorded objective is that cost and its bound lies at or below it (a proof about the cost,
// not about the solver's objective with its tie-breaks, nor rounded to whole units; a fifth of
// the types are free, where the bound is 0), the plan validates, and an
// instance with no feasible provisioning is bad input.
func TestProvisionCostExhaustive(t *testing.T) {
	feasible := 0
	for seed := range uint64(100) {
		in, slo := randomCostCase(rand.New(rand.NewPCG(seed, 340)))
		want := exhaustiveCost(in, slo)
		pl, err := Provision(context.Background(), in, Options{Objective: planner.ObjectiveCost})
		if math.IsInf(want, 1) {
			if err == nil || !errors.Is(err, ErrBadInput) {
				t.Errorf("seed %d: no provisioning exists, got %v", seed, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("seed %d: %v (exhaustive optimum %g)", seed, err, want)
		}
		feasible++
		if math.Abs(pl.Fleet.CostPerHour-want) > 1e-6 {
			t.Errorf("seed %d: cost %g, exhaustive optimum %g", seed, pl.Fleet.CostPerHour, want)
		}
		if errs := pl.Validate(intree.Sections()); len(errs) > 0 {
			t.Errorf("seed %d: the plan does not validate: %v", seed, errs)
		}
		pv := pl.Provenance
		if pv.Objective != pl.Fleet.CostPerHour || (pv.Bound != nil && *pv.Bound > want+1e-9) || (pv.Gap != nil && *pv.Gap < 0) {
			t.Errorf("seed %d: objective %g, bound %v, gap %v for cost %g (optimum %g)", seed, pv.Objective, formats.Num(pv.Bound), formats.Num(pv.Gap), pl.Fleet.CostPerHour, want)
		}
	}
	if feasible < 40 {
		t.Fatalf("only %d of 100 instances feasible: the generator tests too little", feasible)
	}
}
