package fleet

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/plan-dev/plan/planner"
)

// randomProblem draws a small instance: 1–3 GPU types with prices, each with an available
// count of 1 to 8 (so it binds: the cheapest type per request often has too few), 1–2
// demands whose capacity per type is random (a type cannot serve a demand with chance 1/6),
// at rates that need a few GPUs.
func randomProblem(r *rand.Rand, shared bool) Problem {
	K := 1 + r.IntN(3)
	D := 1 + r.IntN(2)
	p := Problem{Shared: shared}
	for k := range K {
		p.Types = append(p.Types, Type{Name: string(rune('A' + k)), Price: math.Round((0.2+4*r.Float64())*100) / 100, Available: 1 + r.IntN(8)})
	}
	for d := range D {
		dm := Demand{Name: string(rune('a' + d))}
		for range K {
			c := 0.0
			if r.IntN(6) != 0 {
				c = math.Round(5+95*r.Float64()) / 1
			}
			dm.Cap = append(dm.Cap, c)
		}
		dm.Rate = math.Round((10 + 250*r.Float64()))
		p.Demands = append(p.Demands, dm)
	}
	return p
}

// exhaustiveDedicated enumerates every count of GPUs of each type for each demand (at most 8
// per type in all) and returns the least cost that serves every rate (+Inf if none).
func exhaustiveDedicated(p Problem) float64 {
	K, D := len(p.Types), len(p.Demands)
	best := math.Inf(1)
	n := make([][]int, D)
	for d := range n {
		n[d] = make([]int, K)
	}
	var rec func(i int)
	rec = func(i int) {
		if i == D*K {
			cost := 0.0
			for k, t := range p.Types {
				tot := 0
				for d := range D {
					tot += n[d][k]
				}
				if tot > t.Available {
					return
				}
				cost += t.Price * float64(tot)
			}
			for d, dm := range p.Demands {
				s := 0.0
				for k := range K {
					s += dm.Cap[k] * float64(n[d][k])
				}
				if s < dm.Rate-1e-9 {
					return
				}
			}
			best = math.Min(best, cost)
			return
		}
		d, k := i/K, i%K
		for c := 0; c <= p.Types[k].Available; c++ {
			n[d][k] = c
			rec(i + 1)
		}
		n[d][k] = 0
	}
	rec(0)
	return best
}

// sharedFeasible decides exactly whether n GPUs per type serve one or two demands with
// fractional shares: one demand needs Σ n_k·cap_k ≥ rate; for two, demand a takes the types
// where its capacity relative to b's is highest first (the exchange argument of the
// two-commodity LP), and b must fit in what is left.
func sharedFeasible(p Problem, n []int) bool {
	if len(p.Demands) == 1 {
		d := p.Demands[0]
		s := 0.0
		for k, c := range d.Cap {
			s += c * float64(n[k])
		}
		return s >= d.Rate-1e-9
	}
	a, b := p.Demands[0], p.Demands[1]
	idx := make([]int, len(n))
	for k := range idx {
		idx[k] = k
	}
	ratio := func(k int) float64 {
		if a.Cap[k] == 0 {
			return -1
		}
		if b.Cap[k] == 0 {
			return math.Inf(1)
		}
		return a.Cap[k] / b.Cap[k]
	}
	sort.SliceStable(idx, func(i, j int) bool { return ratio(idx[i]) > ratio(idx[j]) })
	needA, gotB := a.Rate, 0.0
	for _, k := range idx {
		gpus := float64(n[k])
		if needA > 1e-12 && a.Cap[k] > 0 {
			use := math.Min(gpus, needA/a.Cap[k])
			needA -= use * a.Cap[k]
			gpus -= use
		}
		gotB += gpus * b.Cap[k]
	}
	return needA <= 1e-9 && gotB >= b.Rate-1e-9
}

func exhaustiveShared(p Problem) float64 {
	best := math.Inf(1)
	n := make([]int, len(p.Types))
	var rec func(k int)
	rec = func(k int) {
		if k == len(n) {
			if sharedFeasible(p, n) {
				c := 0.0
				for i, t := range p.Types {
					c += t.Price * float64(n[i])
				}
				best = math.Min(best, c)
			}
			return
		}
		for c := 0; c <= p.Types[k].Available; c++ {
			n[k] = c
			rec(k + 1)
		}
	}
	rec(0)
	return best
}

// TestSizeExhaustive: on 200 random instances per mode small enough to enumerate (≤ 3 GPU
// types, 1–8 available of each), Size's cost equals the exhaustive optimum within the
// available counts, its fleet never exceeds them, some instances are short only because of
// them (the optimum without the counts is cheaper or exists where none does within them),
// and an instance with no feasible fleet is a *ShortError.
func TestSizeExhaustive(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shared bool
		brute  func(Problem) float64
	}{
		{"dedicated", false, exhaustiveDedicated},
		{"shared", true, exhaustiveShared},
	} {
		t.Run(tc.name, func(t *testing.T) {
			feasible, binding := 0, 0
			for seed := range uint64(200) {
				p := randomProblem(rand.New(rand.NewPCG(seed, 34)), tc.shared)
				want := tc.brute(p)
				free := p
				free.Types = append([]Type(nil), p.Types...)
				for k := range free.Types {
					free.Types[k].Available = 8
				}
				if unbound := tc.brute(free); unbound < want-1e-6 {
					binding++
				}
				sol, err := Size(context.Background(), p, 0, 1e-9)
				if math.IsInf(want, 1) {
					if !errors.Is(err, ErrShort) && !errors.Is(err, planner.ErrInfeasible) {
						t.Errorf("seed %d: exhaustive search finds no fleet, Size: %v, %v", seed, sol, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("seed %d: %v (exhaustive optimum %g)", seed, err, want)
				}
				feasible++
				if math.Abs(sol.Cost-want) > 1e-6 {
					t.Errorf("seed %d: cost %g, exhaustive optimum %g (fleet %v, problem %+v)", seed, sol.Cost, want, sol.Count, p)
				}
				// The bound is a proof about the cost, not about the solver's objective (which
				// adds a tie-break per GPU): never above the least cost.
				if sol.Bound > want+1e-9 || sol.Gap < 0 || (want > 0 && sol.Gap < (sol.Cost-sol.Bound)/sol.Cost-1e-12) {
					t.Errorf("seed %d: bound %g, gap %g for cost %g: the exhaustive optimum is %g", seed, sol.Bound, sol.Gap, sol.Cost, want)
				}
				for k, ty := range p.Types {
					if sol.Count[k] > ty.Available {
						t.Errorf("seed %d: %d GPUs of %s, %d available", seed, sol.Count[k], ty.Name, ty.Available)
					}
				}
			}
			if feasible < 50 || binding < 20 {
				t.Fatalf("%d of 200 instances feasible, %d where the available counts bind: the generator tests too little", feasible, binding)
			}
		})
	}
}

// TestSizeShort: a rate beyond the available GPUs names the fraction they serve.
func TestSizeShort(t *testing.T) {
	p := Problem{Types: []Type{{Name: "L4", Price: 0.56, Available: 2}, {Name: "A100", Price: 3.93, Available: 1}},
		Demands: []Demand{{Name: "m", Rate: 100, Cap: []float64{10, 30}}}}
	_, err := Size(context.Background(), p, 0, 1e-6)
	var se *ShortError
	if !errors.As(err, &se) || !errors.Is(err, planner.ErrInfeasible) {
		t.Fatalf("err = %v, want a *ShortError", err)
	}
	if math.Abs(se.Scale-0.5) > 1e-6 {
		t.Errorf("scale %g, want 0.5 (2·10 + 30 of 100 requests/s)", se.Scale)
	}
}

// TestSizeShortUnbounded: an unbounded GPU type serving one demand does not make the share of
// the rates the available GPUs serve unbounded when another demand only a bounded type serves
// falls short (the message read "+Inf% of the rates").
func TestSizeShortUnbounded(t *testing.T) {
	for _, tc := range []struct {
		name      string
		available int
		want      float64
		msg       string
	}{
		{"short", 1, 0.3, "serve at most 30.0% of the rates"},
		{"none", 0, 0, "serve none of the rates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Problem{Types: []Type{{Name: "L4", Price: 0.56, Available: -1}, {Name: "A100", Price: 3.93, Available: tc.available}},
				Demands: []Demand{{Name: "small", Rate: 10, Cap: []float64{10, 30}}, {Name: "large", Rate: 100, Cap: []float64{0, 30}}}}
			_, err := Size(context.Background(), p, 0, 1e-6)
			var se *ShortError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a *ShortError", err)
			}
			if math.Abs(se.Scale-tc.want) > 1e-6 {
				t.Errorf("scale %g, want %g (one A100 at 30 of the large demand's 100 requests/s)", se.Scale, tc.want)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.msg) || strings.Contains(msg, "Inf") || strings.Contains(msg, "NaN") {
				t.Errorf("message %q, want it to say %q", msg, tc.msg)
			}
		})
	}
}

// TestShortErrorMessage: no share is ever printed as ±Inf or NaN.
func TestShortErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		scale float64
		want  string
	}{
		{0, "none of the rates"},
		{math.NaN(), "none of the rates"},
		{math.Inf(1), "cannot serve the rates in whole GPUs"},
		{1, "cannot serve the rates in whole GPUs"},
		{0.25, "at most 25.0% of the rates (m 2.5/s of 10/s)"},
	} {
		msg := (&ShortError{Scale: tc.scale, Demands: []Demand{{Name: "m", Rate: 10}}}).Error()
		if !strings.Contains(msg, tc.want) {
			t.Errorf("scale %g: %q, want %q", tc.scale, msg, tc.want)
		}
	}
}
