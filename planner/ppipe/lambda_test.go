package ppipe

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"

	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// TestBatchAllowanceEstimate: λ̂ of the batch-formation allowance β = ρ·(b−1)/λ̂ is each
// model's throughput in the NP plan without β (the artifact's first pass), for every model:
// the first one too, which an estimate taken with its own β already on (infinite past batch
// 1 while λ̂ is unknown) would hold to batch 1 and so underestimate.
func TestBatchAllowanceEstimate(t *testing.T) {
	in := batchingInputs(t)
	base := DefaultOptions()
	base.Deterministic, base.TimeLimit, base.Alpha = true, 30*time.Second, 0.4
	np := base
	np.Strategy = StrategyNP
	npPlan, err := Solve(context.Background(), in, np)
	if err != nil {
		t.Fatal(err)
	}
	lambda := map[string]float64{}
	for _, m := range ppipesec.PlanOf(npPlan).Models {
		lambda[m.Model] = m.ThroughputRPS
	}
	for _, strategy := range []string{StrategyNP, StrategyPPipe} {
		o := base
		o.Strategy, o.BatchAllowance, o.MaxPartitions = strategy, true, 1
		pl, err := Solve(context.Background(), in, o)
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for _, m := range ppipesec.PlanOf(pl).Models {
			for _, p := range m.Pipelines {
				if p.Batch < 2 {
					continue
				}
				want := BatchFormationRho * float64(p.Batch-1) / lambda[m.Model] * 1e6
				if math.Abs(p.BatchFormationUs-want) > 1e-6*want {
					t.Errorf("%s: model %s batch %d: β %g µs, want ρ·(b−1)/λ̂ = %g with λ̂ = %g req/s (NP without β)", strategy, m.Model, p.Batch, p.BatchFormationUs, want, lambda[m.Model])
				}
				checked++
			}
		}
		if checked == 0 {
			t.Errorf("%s: no pipeline batches more than 1: the test checks nothing", strategy)
		}
	}
}

// batchingInputs is testdata/batching: one model whose V100 plans batch 2–4.
func batchingInputs(t *testing.T) Inputs {
	t.Helper()
	dir := filepath.Join("testdata", "batching")
	prof, err := formats.ReadInto[*formats.Profile](filepath.Join(dir, "profile.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := formats.ReadInto[*formats.Cluster](filepath.Join(dir, "cluster.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	wl, err := formats.ReadInto[*formats.Workload](filepath.Join(dir, "workload.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	return Inputs{Profiles: []*formats.Profile{prof}, Cluster: cl, Workload: wl}
}

// TestNPRatesTieFree: λ̂ of the batch allowance does not depend on which NP optimum the first
// pass happened to find. On small cases whose NP optima differ in a non-bottleneck model's
// throughput, npRates started from each model's own maximal NP plan gives every model its
// maximum over the NP optima, never less than the plan it started from.
func TestNPRatesTieFree(t *testing.T) {
	t.Parallel()
	ties := 0
	for _, seed := range []uint64{2, 3, 5} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			p, s, est := firstPass(t, seed, 1e-9)
			n := len(p.models)
			starts := []solved{est}
			best := make([]float64, n)
			nm, ok := s.npMaxModel(est)
			if !ok {
				t.Fatal("the NP space cannot be built")
			}
			for mi := range n {
				sol, ok := s.npMax(nm, est, mi, time.Minute)
				if !ok {
					t.Fatalf("model %d: no NP plan keeps z = %g", mi, est.st.objective)
				}
				if z := p.objective(sol.pipes); z < est.st.objective*(1-1e-6) {
					t.Fatalf("model %d's maximal NP plan has z = %g, below the first pass's %g", mi, z, est.st.objective)
				}
				best[mi] = modelThroughput(sol.pipes, n)[mi]
				starts = append(starts, sol)
			}
			for mi := range n {
				lo := math.Inf(1)
				for _, st := range starts {
					lo = min(lo, modelThroughput(st.pipes, n)[mi])
				}
				if lo < best[mi]*(1-1e-6) {
					ties++
				}
			}
			for si, st := range starts {
				lam := s.npRates(st, time.Minute)
				thr := modelThroughput(st.pipes, n)
				for mi := range n {
					if math.Abs(lam[mi]-best[mi]) > 1e-6*best[mi] || lam[mi] < thr[mi]*(1-1e-9) {
						t.Errorf("start %d, model %d: λ̂ = %g req/s, want its NP maximum %g (the start carries %g)", si, mi, lam[mi], best[mi], thr[mi])
					}
				}
			}
		})
	}
	t.Cleanup(func() {
		if ties == 0 && !t.Failed() && !t.Skipped() {
			t.Error("no case's NP optima differ in any model's throughput: the test exercises nothing")
		}
	})
}

// TestBetaPassStart: the NP plan of the batch allowance's first pass (without β) is every
// β pass's MIP start, each pipeline on its GPUs at the option that carries the most there,
// a smaller batch where β no longer lets its own fill within the SLO: the start satisfies
// every row and bound of the β pass's model (HiGHS drops an infeasible start), gives every
// model a pipeline (z > 0), and HiGHS takes it.
func TestBetaPassStart(t *testing.T) {
	t.Parallel()
	p, s, est := firstPass(t, 2, 0)
	// λ̂ at a tenth of the first pass's rates: β grows tenfold, past some batches' slack.
	thr := modelThroughput(est.pipes, len(p.models))
	for mi, md := range p.models {
		md.lambda, md.betaOn = thr[mi]/10/1e6, true
	}
	cfg := spaceConfig{P: 1, wholeOnly: true}
	spaces, err := s.spaces(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := p.build(spaces, cfg)
	if dropped := len(est.pipes) - len(p.pipes(spaces, b.assignFrom(est.pipes), 1)); dropped == 0 {
		t.Fatal("every first-pass pipeline keeps its batch under β: the case does not test the refit")
	}
	a := b.assignRefit(est.pipes)
	if z := p.objective(p.pipes(spaces, a, 1)); !(z > 0) {
		t.Errorf("the start's objective is %g: some model has no pipeline", z)
	}
	checkStart(t, b.m, b.start(a))
	var log bytes.Buffer
	s.hooks.log = &log
	s.npFirst = est.pipes
	if _, err := s.np(); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`MIP start solution is feasible, objective value is [1-9]`).Match(log.Bytes()) {
		t.Errorf("HiGHS took no start with a positive objective; its log:\n%s", log.String())
	}
}

// firstPass is a generated three-model case on 4 L4 + 12 P4 (genProfile's seed) with the
// batch allowance, and its first pass, NP without β, solved to gap (0: the default).
func firstPass(t *testing.T, seed uint64, gap float64) (*problem, *session, solved) {
	t.Helper()
	gp := []gpuSpec{specL4, specP4}
	in := Inputs{Profiles: []*formats.Profile{genProfile(seed, 3, 6, gp, 4)}, Cluster: genCluster(gp, []int{4, 12}, 30)}
	p, err := prepare(in, Options{Alpha: DefaultAlpha, BatchAllowance: true, Deterministic: true, Gap: gap, TimeLimit: 5 * time.Minute}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	s := testSession(p)
	est, err := s.np()
	skipWithoutSolver(t, err)
	if err != nil {
		t.Fatal(err)
	}
	return p, s, est
}
