package ppipe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
)

// TestTimeLimitKeepsIncumbent: a limit far below what the 3-model P=3 case needs still gives a
// verified plan, marked time-limit, with its gap.
func TestTimeLimitKeepsIncumbent(t *testing.T) {
	if testing.Short() {
		t.Skip("solves a large instance")
	}
	c := benchCases[1]
	start := time.Now()
	pl, err := Solve(context.Background(), c.inputs(), Options{MaxPartitions: c.P, TimeLimit: 3 * time.Second})
	skipWithoutSolver(t, err)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v: status %s objective %.2f bound %.2f gap %.3f%%", time.Since(start), pl.Provenance.Status, pl.Provenance.Objective, pl.Provenance.Bound, pl.Provenance.Gap*100)
	if pl.Provenance.Status != "time-limit" || !(pl.Provenance.Gap > 0) || pl.Provenance.Bound < pl.Provenance.Objective {
		t.Errorf("status %s gap %g bound %g objective %g", pl.Provenance.Status, pl.Provenance.Gap, pl.Provenance.Bound, pl.Provenance.Objective)
	}
	if v := Verify(pl); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
}

func TestInfeasibleSLONamesMinimum(t *testing.T) {
	in := loadFixtureInputs(t)
	_, err := Solve(context.Background(), in, Options{SLO: time.Millisecond})
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
			one.Models = nil
			for _, w := range in.Workload.Models {
				if w.Name == m.Model {
					w.SLO = formats.Duration(slo)
					one.Models = append(one.Models, w)
				}
			}
			_, err := Solve(context.Background(), Inputs{Profiles: in.Profiles, Cluster: in.Cluster, Workload: &one}, Options{})
			if feasible := !errors.Is(err, ErrInfeasible); feasible != (slo == m.MinFeasible) {
				t.Errorf("%s at %s: err %v", m.Model, slo, err)
			}
		}
	}
	if !strings.Contains(err.Error(), "smallest feasible SLO is") {
		t.Errorf("message: %v", err)
	}
}

func TestInputErrors(t *testing.T) {
	in := loadFixtureInputs(t)
	cases := map[string]func(in *Inputs){
		"unknown model": func(in *Inputs) {
			w := *in.Workload
			w.Models = []formats.ModelWorkload{{Name: "nope"}}
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
		_, err := Solve(context.Background(), cp, Options{})
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
	if _, err := Solve(context.Background(), in, Options{Strategy: "x"}); !errors.Is(err, ErrInput) {
		t.Errorf("bad strategy: %v", err)
	}
}

// TestDeterministic: identical inputs give byte-identical plans (solve_ms zeroed).
func TestDeterministic(t *testing.T) {
	in := loadFixtureInputs(t)
	var prev []byte
	for range 2 {
		pl, err := Solve(context.Background(), in, Options{MaxPartitions: 2, Deterministic: true})
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
	good, err := formats.ReadInto[*formats.Plan](fixturePath("good-plan.json"))
	if err != nil {
		f.Fatal(err)
	}
	seed, _ := json.Marshal(good)
	f.Add(seed)
	f.Add([]byte(`{"ppipe":{"models":[{"pipelines":[{"partitions":[{"vgpu":-1,"end_block":99}]}]}]},"cluster":{"gpus":[{"type":"L4","count":1}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var p formats.Plan
		if json.Unmarshal(data, &p) != nil {
			return
		}
		_ = Verify(&p)
	})
}

// TestBatchAllowance: with β the head stage of every batched pipeline budgets ρ·(b−1)/λ̂,
// the plan still verifies, and throughput cannot exceed the β-free plan's.
func TestBatchAllowance(t *testing.T) {
	in := loadFixtureInputs(t)
	plain, err := Solve(context.Background(), in, Options{MaxPartitions: 2, Gap: 1e-6})
	skipWithoutSolver(t, err)
	if err != nil {
		t.Fatal(err)
	}
	withBeta, err := Solve(context.Background(), in, Options{MaxPartitions: 2, Gap: 1e-6, BatchAllowance: true})
	if err != nil {
		t.Fatal(err)
	}
	if v := Verify(withBeta); len(v) > 0 {
		t.Fatalf("violations: %v", v)
	}
	for _, m := range withBeta.PPipe.Models {
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
