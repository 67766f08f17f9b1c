package ppipe

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/planner"
)

// npAnalytic is NP for one model in closed form (PPipe §7.1): per type, the batch with the
// highest b/L(b) among those with L(b) ≤ T' (whole GPU), times the type's GPU count.
func npAnalytic(mp *formats.ModelProfile, cl *formats.Cluster, budget float64) (float64, map[string]int) {
	total := 0.0
	batch := map[string]int{}
	for _, g := range cl.GPUs {
		best, bestB := 0.0, 0
		for b := 1; b <= 64; b++ {
			e, ok := mp.Lookup(g.Type, 1, b)
			if !ok {
				continue
			}
			L := 0.0
			for _, x := range e.BlockUs {
				L += math.Max(1, x)
			}
			if L <= budget && float64(b)/L > best {
				best, bestB = float64(b)/L, b
			}
		}
		if bestB > 0 && g.Count > 0 {
			total += float64(g.Count) * best * 1e6
			batch[g.Type] = bestB
		}
	}
	return total, batch
}

func TestNPMatchesAnalytic(t *testing.T) {
	t.Parallel()
	gpus := []gpuSpec{specL4, specP4}
	for seed := uint64(1); seed <= 8; seed++ {
		prof := genProfile(seed, 1, 10, gpus, 0)
		cl := genCluster(gpus, []int{3 + int(seed%4), 5 + int(seed)}, 30)
		mp := &prof.Models[0]
		ref, _ := mp.Lookup("L4", 1, 1)
		for _, scale := range []float64{2, 5, 10} {
			T := math.Round(scale * ref.WholeUs())
			budget := T - math.Round(0.4*T)
			want, batches := npAnalytic(mp, cl, budget)
			wl := ppipesec.SetModels(&formats.Workload{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindWorkload}}, []ppipesec.ModelWorkload{{Name: mp.Name, SLO: formats.Duration(T * 1000)}})
			pl, err := Solve(context.Background(), Inputs{Profiles: []*formats.Profile{prof}, Cluster: cl, Workload: wl}, Options{Alpha: DefaultAlpha, Strategy: StrategyNP, Gap: 1e-9})
			skipWithoutSolver(t, err)
			if want == 0 {
				if !errors.Is(err, planner.ErrInfeasible) {
					t.Errorf("seed %d scale %g: analytic NP infeasible, Solve: %v", seed, scale, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("seed %d scale %g: %v", seed, scale, err)
			}
			m := ppipesec.PlanOf(pl).Models[0]
			if math.Abs(m.ThroughputRPS-want) > 1e-6*want {
				t.Errorf("seed %d scale %g: NP %.4f rps, analytic %.4f", seed, scale, m.ThroughputRPS, want)
			}
			for _, p := range m.Pipelines {
				pt := p.Partitions[0]
				if len(p.Partitions) != 1 || pt.VGPU != 1 || pt.FirstBlock != 0 || pt.EndBlock != len(mp.Blocks) {
					t.Errorf("seed %d: NP pipeline is not the whole model on a whole GPU: %+v", seed, p)
				}
				if p.Batch != batches[pt.GPU] {
					t.Errorf("seed %d scale %g: %s batch %d, analytic best %d", seed, scale, pt.GPU, p.Batch, batches[pt.GPU])
				}
			}
			if v := Verify(pl); len(v) > 0 {
				t.Errorf("seed %d: %v", seed, v)
			}
		}
	}
}

// TestDARTRProcedure re-derives a DART-r plan step by step through the public API (NP plan,
// even split of unused GPUs, one-high + one-low PPipe plan A, one-GPU plan B) and compares.
func TestDARTRProcedure(t *testing.T) {
	t.Parallel()
	l4 := specL4
	l4.levels = []int{1}
	gpus := []gpuSpec{l4, specP4}
	// The pair's MILP at P 2, and at P 3 with K^(P−D) replicas, where whole GPUs leave it no
	// three-stage pipeline and one copy of each template (wholeCopies).
	for seed := uint64(1); seed <= 6; seed++ {
		P, perLength := 2, false
		if seed > 4 {
			P, perLength = 3, true
		}
		prof := genProfile(seed+10, 2, 6, gpus, 4)
		cl := genCluster(gpus, []int{5 + int(seed), 9 + 2*int(seed)}, 40)
		wl := &formats.Workload{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindWorkload}}
		for i, m := range prof.Models {
			ref, _ := m.Lookup("L4", 1, 1)
			ppipesec.SetModels(wl, append(ppipesec.ModelsOf(wl), ppipesec.ModelWorkload{Name: m.Name, Weight: float64(1 + i), SLO: formats.Duration(math.Round(4*ref.WholeUs()) * 1000)}))
		}
		in := Inputs{Profiles: []*formats.Profile{prof}, Cluster: cl, Workload: wl}
		ctx := context.Background()
		opts := Options{Alpha: DefaultAlpha, MaxPartitions: P, ReplicasPerLength: perLength, Gap: 1e-9}
		opts.Strategy = StrategyDARTR
		got, err := Solve(ctx, in, opts)
		skipWithoutSolver(t, err)
		if err != nil {
			t.Fatalf("seed %d: dart-r: %v", seed, err)
		}
		opts.Strategy = StrategyNP
		np, err := Solve(ctx, in, opts)
		if err != nil {
			t.Fatalf("seed %d: np: %v", seed, err)
		}
		// Step 1: NP's GPUs per model and type; step 2: split the unused ones evenly.
		n := map[string]map[string]int{}
		used := map[string]int{}
		for _, m := range ppipesec.PlanOf(np).Models {
			n[m.Model] = map[string]int{}
			for _, p := range m.Pipelines {
				for _, pt := range p.Partitions {
					n[m.Model][pt.GPU] += pt.Count
					used[pt.GPU] += pt.Count
				}
			}
		}
		for _, g := range cl.GPUs {
			for _, m := range ppipesec.ModelsOf(wl) {
				n[m.Name][g.Type] += (g.Count - used[g.Type]) / len(ppipesec.ModelsOf(wl))
			}
		}
		// Step 3: per model, pairs × plan A + leftovers × plan B.
		solo := func(model string, slo formats.Duration, counts map[string]int, P int, strategy string) float64 {
			c := genCluster(gpus, []int{counts["L4"], counts["P4"]}, 40)
			w := ppipesec.SetModels(&formats.Workload{TypeMeta: wl.TypeMeta}, []ppipesec.ModelWorkload{{Name: model, SLO: slo}})
			pl, err := Solve(ctx, Inputs{Profiles: []*formats.Profile{prof}, Cluster: c, Workload: w}, Options{Alpha: DefaultAlpha, Strategy: strategy, MaxPartitions: P, ReplicasPerLength: perLength && strategy == StrategyPPipe, Gap: 1e-9})
			if errors.Is(err, planner.ErrInfeasible) {
				return 0
			}
			if err != nil {
				t.Fatalf("seed %d: %s on %v: %v", seed, model, counts, err)
			}
			return ppipesec.PlanOf(pl).Models[0].ThroughputRPS
		}
		for i, m := range ppipesec.ModelsOf(wl) {
			hi, lo := n[m.Name]["L4"], n[m.Name]["P4"]
			pairs := min(hi, lo)
			want := 0.0
			if pairs > 0 {
				want += float64(pairs) * solo(m.Name, m.SLO, map[string]int{"L4": 1, "P4": 1}, P, StrategyPPipe)
			}
			if q := hi - lo; q > 0 {
				want += float64(q) * solo(m.Name, m.SLO, map[string]int{"L4": 1}, 1, StrategyNP)
			} else if q < 0 {
				want += float64(-q) * solo(m.Name, m.SLO, map[string]int{"P4": 1}, 1, StrategyNP)
			}
			gotThr := ppipesec.PlanOf(got).Models[i].ThroughputRPS
			if math.Abs(gotThr-want) > 1e-6*math.Max(1, want) {
				t.Errorf("seed %d model %s (L4 %d, P4 %d): dart-r %.4f rps, procedure %.4f", seed, m.Name, hi, lo, gotThr, want)
			}
		}
		if v := Verify(got); len(v) > 0 {
			t.Errorf("seed %d: %v", seed, v)
		}
	}
}
