package ppipe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/planner"
)

// TestTimeLimitKeepsIncumbent: a limit far below what the 3-model P=3 case needs still gives a
// verified plan, marked time-limit, with its gap. Not parallel: within its 3 s the LP
// relaxation must solve for there to be a gap, which the package's other solves running
// beside it can prevent.
func TestTimeLimitKeepsIncumbent(t *testing.T) {
	if testing.Short() {
		t.Skip("solves a large instance")
	}
	c := benchCases[1]
	start := time.Now()
	pl, err := Solve(context.Background(), c.inputs(), Options{Alpha: DefaultAlpha, MaxPartitions: c.P, TimeLimit: 3 * time.Second})
	skipWithoutSolver(t, err)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v: status %s objective %.2f bound %.2f gap %.3f%%", time.Since(start), pl.Provenance.Status, pl.Provenance.Objective, formats.Num(pl.Provenance.Bound), formats.Num(pl.Provenance.Gap)*100)
	if pl.Provenance.Status != "time-limit" || !(formats.Num(pl.Provenance.Gap) > 0) || !(formats.Num(pl.Provenance.Bound) >= pl.Provenance.Objective) {
		t.Errorf("status %s gap %g bound %g objective %g", pl.Provenance.Status, formats.Num(pl.Provenance.Gap), formats.Num(pl.Provenance.Bound), pl.Provenance.Objective)
	}
	if v := Verify(pl); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
}

func TestInfeasibleSLONamesMinimum(t *testing.T) {
	t.Parallel()
	in := loadFixtureInputs(t)
	_, err := Solve(context.Background(), in, Options{Alpha: DefaultAlpha, SLO: time.Millisecond})
	skipWithoutSolver(t, err)
	var ie *InfeasibleError
	if !errors.As(err, &ie) || len(ie.Models) != 2 {
		t.Fatalf("want InfeasibleError for both models, got %v", err)
	}
	for _, m := range ie.Models {
		if m.MinFeasible <= time.Millisecond {
			t.Fatalf("%s: min feasible %s", m.Model, m.MinFeasible)
		}
		// The named minimum is feasible, and 1 µs less is not.
		for _, slo := range []time.Duration{m.MinFeasible, m.MinFeasible - time.Microsecond} {
			one := *in.Workload
			one.Sections = maps.Clone(one.Sections)
			ppipesec.SetModels(&one, nil)
			for _, w := range ppipesec.ModelsOf(in.Workload) {
				if w.Name == m.Model {
					w.SLO = formats.Duration(slo)
					ppipesec.SetModels(&one, append(ppipesec.ModelsOf(&one), w))
				}
			}
			_, err := Solve(context.Background(), Inputs{Profiles: in.Profiles, Cluster: in.Cluster, Workload: &one}, Options{Alpha: DefaultAlpha})
			if feasible := !errors.Is(err, planner.ErrInfeasible); feasible != (slo == m.MinFeasible) {
				t.Errorf("%s at %s: err %v", m.Model, slo, err)
			}
		}
	}
	if !strings.Contains(err.Error(), "smallest feasible SLO is") {
		t.Errorf("message: %v", err)
	}
}

func TestInputErrors(t *testing.T) {
	t.Parallel()
	in := loadFixtureInputs(t)
	cases := map[string]func(in *Inputs){
		"unknown model": func(in *Inputs) {
			w := *in.Workload
			w.Sections = maps.Clone(w.Sections)
			ppipesec.SetModels(&w, []ppipesec.ModelWorkload{{Name: "nope"}})
			in.Workload = &w
		},
		"no latency for GPU type T4": func(in *Inputs) {
			c := *in.Cluster
			c.GPUs = append(append([]formats.GPUPool{}, c.GPUs...), formats.GPUPool{Type: "T4", Count: 2, PerServer: 1})
			in.Cluster = &c
		},
		"need at least one GPU": func(in *Inputs) {
			c := *in.Cluster
			c.GPUs = []formats.GPUPool{{Type: "L4", Count: 0, PerServer: 1}}
			in.Cluster = &c
		},
		"model appears in more than one profile": func(in *Inputs) {
			in.Profiles = append(in.Profiles, in.Profiles[0])
		},
	}
	for want, mutate := range cases {
		cp := in
		mutate(&cp)
		_, err := Solve(context.Background(), cp, Options{Alpha: DefaultAlpha})
		if !errors.Is(err, planner.ErrInput) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
	if _, err := Solve(context.Background(), in, Options{Alpha: DefaultAlpha, Strategy: "x"}); !errors.Is(err, planner.ErrInput) {
		t.Errorf("bad strategy: %v", err)
	}
}

// TestDeterministic: identical inputs give byte-identical plans (solve_ms zeroed).
func TestDeterministic(t *testing.T) {
	t.Parallel()
	in := loadFixtureInputs(t)
	var prev []byte
	for range 2 {
		pl, err := Solve(context.Background(), in, Options{Alpha: DefaultAlpha, MaxPartitions: 2, Deterministic: true})
		skipWithoutSolver(t, err)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := formats.Marshal(pl)
		if prev != nil && !bytes.Equal(prev, b) {
			t.Fatal("plans differ")
		}
		prev = b
	}
}

// FuzzVerify: Verify must never panic, whatever the plan holds.
func FuzzVerify(f *testing.F) {
	good, err := formats.ReadInto[*formats.Plan](fixturePath("good-plan.json"), intree.Sections())
	if err != nil {
		f.Fatal(err)
	}
	seed, _ := json.Marshal(good)
	f.Add(seed)
	f.Add([]byte(`{"ppipe":{"models":[{"pipelines":[{"partitions":[{"vgpu":-1,"end_block":99}]}]}]},"cluster":{"gpus":[{"type":"L4","count":1}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := formats.Parse("plan.json", data, intree.Sections())
		if err != nil {
			return
		}
		if p, ok := doc.(*formats.Plan); ok {
			_ = Verify(p)
		}
	})
}

// TestVerifyMalformed: Verify panicked with "index out of range [3] with
// length 0" on a plan whose embedded profile has fewer cut sizes than blocks (the FuzzVerify
// crasher kept in testdata/fuzz/FuzzVerify). Malformed embedded inputs are violations.
func TestVerifyMalformed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(p *formats.Plan)
		want   string
	}{
		{"cut_bytes shorter than blocks", func(p *formats.Plan) { p.Provenance.Embedded.Profiles[0].Models[0].CutBytes = nil },
			"plan: provenance.embedded.profiles[0] is invalid (models[0].cut_bytes: 0: length must be len(blocks)-1 = 5)"},
		{"block_us shorter than blocks", func(p *formats.Plan) {
			e := &p.Provenance.Embedded.Profiles[0].Models[0].Latency[0]
			e.BlockUs = e.BlockUs[:2]
		}, "plan: provenance.embedded.profiles[0] is invalid"},
		{"no pipelines", func(p *formats.Plan) { ppipesec.PlanOf(p).Models[0].Pipelines = nil }, "model m0: model: no pipelines"},
		{"unknown rounding", func(p *formats.Plan) { ppipesec.PlanOf(p).Extra["rounding"] = "x" }, `budget: ppipe.extra.rounding "x": must be pipeline or stage`},
		{"partition beyond the blocks", func(p *formats.Plan) { ppipesec.PlanOf(p).Models[0].Pipelines[0].Partitions[0].EndBlock = 99 }, "contiguity"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := formats.ReadInto[*formats.Plan](fixturePath("good-plan.json"), intree.Sections())
			if err != nil {
				t.Fatal(err)
			}
			c.mutate(p)
			var got []string
			for _, v := range Verify(p) {
				got = append(got, v.String())
			}
			if !strings.Contains(strings.Join(got, "\n"), c.want) {
				t.Errorf("violations lack %q:\n%s", c.want, strings.Join(got, "\n"))
			}
		})
	}
}

// TestBatchAllowance: with β the head stage of every batched pipeline budgets ρ·(b−1)/λ̂,
// the plan still verifies, and throughput cannot exceed the β-free plan's.
func TestBatchAllowance(t *testing.T) {
	t.Parallel()
	in := loadFixtureInputs(t)
	plain, err := Solve(context.Background(), in, Options{Alpha: DefaultAlpha, MaxPartitions: 2, Gap: 1e-6})
	skipWithoutSolver(t, err)
	if err != nil {
		t.Fatal(err)
	}
	withBeta, err := Solve(context.Background(), in, Options{Alpha: DefaultAlpha, MaxPartitions: 2, Gap: 1e-6, BatchAllowance: true})
	if err != nil {
		t.Fatal(err)
	}
	if v := Verify(withBeta); len(v) > 0 {
		t.Fatalf("violations: %v", v)
	}
	for _, m := range ppipesec.PlanOf(withBeta).Models {
		for _, p := range m.Pipelines {
			if (p.Batch > 1) != (p.BatchFormationUs > 0) {
				t.Errorf("%s: batch %d with batch_formation_us %g", m.Model, p.Batch, p.BatchFormationUs)
			}
		}
	}
	if withBeta.Provenance.Objective > plain.Provenance.Objective*(1+1e-6) {
		t.Errorf("β made the plan better: %g > %g", withBeta.Provenance.Objective, plain.Provenance.Objective)
	}
}

// TestStageRoundingPlansValidate: plan solve --rounding stage --replicas -1
// solved, then refused to write its own plan ("pipelines use 76 GPUs of this type, cluster has
// 75") because the format counted GPUs per pool. Plans whose pools share GPUs at a stage
// index must pass Validate and Verify alike; at least one case here shares GPUs, so the old
// per-pool count would have refused it.
func TestStageRoundingPlansValidate(t *testing.T) {
	t.Parallel()
	base := loadFixtureInputs(t)
	shared := 0
	for _, c := range []struct{ l4, p4 int }{{3, 5}, {5, 3}} {
		in := base
		cl := *base.Cluster
		cl.GPUs = slices.Clone(cl.GPUs)
		cl.GPUs[0].Count, cl.GPUs[1].Count = c.l4, c.p4
		in.Cluster = &cl
		pl, err := Solve(context.Background(), in, Options{Alpha: DefaultAlpha, MaxPartitions: 3, Rounding: RoundingStage, ReplicasPerLength: true, Gap: 1e-4, Deterministic: true})
		skipWithoutSolver(t, err)
		if err != nil {
			t.Fatalf("%d L4 + %d P4: %v", c.l4, c.p4, err)
		}
		if errs := pl.Validate(intree.Sections()); len(errs) > 0 {
			t.Errorf("%d L4 + %d P4: the solver's stage-rounded plan fails validation:\n%v", c.l4, c.p4, errs)
		}
		if v := Verify(pl); len(v) > 0 {
			t.Errorf("%d L4 + %d P4: %v", c.l4, c.p4, v)
		}
		_, perPool := ppipesec.PlanOf(pl).PhysicalGPUsWith(RoundingPipeline)
		for _, g := range cl.GPUs {
			if perPool[g.Type] > g.Count {
				shared++
				t.Logf("%d L4 + %d P4: %s pools share GPUs (%d per pool, %d in the cluster)", c.l4, c.p4, g.Type, perPool[g.Type], g.Count)
			}
		}
	}
	if shared == 0 {
		t.Fatal("no case shares GPUs between pools: the test no longer exercises stage rounding")
	}
}

// TestBatchAllowanceArrivalRate: β = ρ·(b−1)/λ̂ could only use the NP
// estimate of λ̂. It takes Options.ArrivalRate when set, else each model's workload rate_rps,
// and records the option for re-solves. The fixture's m0 alone: its throughput-maximising
// plan batches (with both models, max-min leaves m0's batches a tie the solver may break
// either way, and a plan of batch-1 pipelines has β = 0 whatever λ̂ is).
func TestBatchAllowanceArrivalRate(t *testing.T) {
	t.Parallel()
	base := loadFixtureInputs(t)
	one := *base.Workload
	one.Sections = maps.Clone(one.Sections)
	ppipesec.SetModels(&one, slices.Clone(ppipesec.ModelsOf(&one)[:1]))
	withRates := one
	withRates.Sections = maps.Clone(one.Sections)
	ppipesec.SetModels(&withRates, slices.Clone(ppipesec.ModelsOf(&one)))
	ppipesec.ModelsOf(&withRates)[0].RateRPS = 4000
	cases := []struct {
		name     string
		workload *formats.Workload
		arrival  float64
		want     map[string]float64 // λ̂ per model, req/s
	}{
		{"workload rate_rps", &withRates, 0, map[string]float64{"m0": 4000}},
		{"option over the workload", &withRates, 3000, map[string]float64{"m0": 3000}},
		{"option alone", &one, 5000, map[string]float64{"m0": 5000}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			in := base
			in.Workload = c.workload
			pl, err := Solve(context.Background(), in, Options{Alpha: DefaultAlpha, MaxPartitions: 2, BatchAllowance: true, ArrivalRate: c.arrival, Deterministic: true})
			skipWithoutSolver(t, err)
			if err != nil {
				t.Fatal(err)
			}
			if v := Verify(pl); len(v) > 0 {
				t.Fatalf("violations: %v", v)
			}
			batched := 0
			for _, m := range ppipesec.PlanOf(pl).Models {
				for _, p := range m.Pipelines {
					want := BatchFormationRho * float64(p.Batch-1) / c.want[m.Model] * 1e6
					if math.Abs(p.BatchFormationUs-want) > 1e-6*max(want, 1) {
						t.Errorf("%s batch %d: β = %g µs, want ρ·(b−1)/λ̂ = %g µs", m.Model, p.Batch, p.BatchFormationUs, want)
					}
					if p.Batch > 1 {
						batched++
					}
				}
			}
			if batched == 0 {
				t.Fatal("no pipeline batches: β is 0 whatever λ̂ is, the case tests nothing")
			}
			var rec Flags
			if err := planner.ReadOptions(pl.Provenance.Options, &rec); err != nil || rec.ArrivalRate != c.arrival {
				t.Errorf("provenance option arrival_rate = %g (%v), want %g", rec.ArrivalRate, err, c.arrival)
			}
		})
	}
	if _, err := Solve(context.Background(), base, Options{Alpha: DefaultAlpha, ArrivalRate: 100}); !errors.Is(err, planner.ErrInput) {
		t.Errorf("arrival rate without the batch allowance: %v", err)
	}
}

// TestContinuousCounts: the continuous-count phase (relaxation, then repair) changes how a
// multi-model plan is found, never what an optimal solve finds: on small instances that both
// pipelines solve to optimality, the objectives agree, and its plans verify.
func TestContinuousCounts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		models int
		seed   uint64
	}{{"2 models", 2, 5}, {"3 models", 3, 7}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			gpus := []gpuSpec{specL4, specP4}
			in := Inputs{Profiles: []*formats.Profile{genProfile(c.seed, c.models, 4, gpus, 0)}, Cluster: genCluster(gpus, []int{3, 8}, 30)}
			var objs []float64
			for _, no := range []bool{true, false} {
				pl, err := Solve(context.Background(), in, Options{Alpha: DefaultAlpha, MaxPartitions: 2, TimeLimit: 60 * time.Second, Gap: 1e-6, NoContinuousCounts: no, Deterministic: true})
				if err != nil {
					t.Fatal(err)
				}
				if pl.Provenance.Status != "optimal" {
					t.Fatalf("NoContinuousCounts=%v: no proven optimum within a minute on a tiny instance (%s)", no, pl.Provenance.Status)
				}
				if errs := Verify(pl); len(errs) > 0 {
					t.Fatalf("NoContinuousCounts=%v: the plan does not verify: %v", no, errs)
				}
				objs = append(objs, pl.Provenance.Objective)
			}
			if math.Abs(objs[0]-objs[1]) > 1e-6*math.Max(1, objs[0]) {
				t.Errorf("optimal objective %.6f without the continuous-count phase, %.6f with it", objs[0], objs[1])
			}
		})
	}
}
