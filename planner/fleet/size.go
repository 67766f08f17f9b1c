package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/solver"
)

// Type is a GPU type a fleet may use: its price per hour and the most that can be had
// (Available < 0 = unbounded).
type Type struct {
	Name      string
	Price     float64
	Available int
	// Group and Units: each unit of this type takes Units GPUs of the group (a GPU type)
	// whose total Problem.Limits bounds (a tensor-parallel LLM instance takes several GPUs).
	Group string
	Units int
}

// Demand is a rate to serve (requests/s, or tokens/s): a model, module or request-size
// bucket. Cap[k] is the rate one GPU of Types[k] sustains of this demand alone within the SLO
// (0 = the type cannot serve it).
type Demand struct {
	Name string
	Rate float64
	Cap  []float64
}

// Problem is a fleet-sizing instance. Shared: a GPU may serve several demands, each taking
// the fraction rate/cap of it (Mélange §5, the load of a bucket on an instance); otherwise
// every GPU serves one demand (replicas dedicated to a module or service).
type Problem struct {
	Types   []Type
	Demands []Demand
	Shared  bool
	// Limits bounds the GPUs of a group across the types in it (absent = unbounded).
	Limits map[string]int
}

// Solution is a least-cost fleet. Count[k] GPUs of Types[k]; Share[d][k] is the fraction of
// demand d's rate served on type k; Dedicated[d][k] the GPUs of type k serving d alone
// (nil when Shared).
type Solution struct {
	Count     []int
	Cost      float64
	Share     [][]float64
	Dedicated [][]int
	// Status, Bound and Gap are the solver's.
	Status string
	Bound  float64
	Gap    float64
	Nodes  int64
	Wall   time.Duration
}

// ErrShort marks a problem the available GPUs cannot serve; the error is a *ShortError.
var ErrShort = errors.New("the available GPUs cannot serve the rates")

// ShortError says what fraction of the demands' rates the available fleet serves at most
// (Scale < 1), so a message can name the rate it can serve.
type ShortError struct {
	Scale   float64
	Demands []Demand
}

func (e *ShortError) Error() string {
	var parts []string
	for _, d := range e.Demands {
		parts = append(parts, fmt.Sprintf("%s %.4g/s of %.4g/s", d.Name, d.Rate*e.Scale, d.Rate))
	}
	switch {
	case !(e.Scale > 0):
		// Zero (or NaN, never a share): no positive multiple of the rates fits.
		return "the available GPUs serve none of the rates"
	case e.Scale >= 1:
		// The LP relaxation serves every rate but no whole-GPU fleet does (integrality, or
		// tensor-parallel instances that do not divide the available GPUs): no share to name.
		return "the available GPUs cannot serve the rates in whole GPUs (instances)"
	}
	return fmt.Sprintf("the available GPUs serve at most %.1f%% of the rates (%s)", 100*e.Scale, strings.Join(parts, ", "))
}

// Unwrap makes errors.Is(err, ErrShort) and errors.Is(err, planner.ErrInfeasible) true.
func (e *ShortError) Unwrap() []error { return []error{ErrShort, planner.ErrInfeasible} }

// bound is the most GPUs of type k any optimal fleet uses: its available, else enough to
// serve every demand it can serve on its own.
func (p *Problem) bound(k int) int {
	n := 0
	for _, d := range p.Demands {
		if d.Cap[k] > 0 {
			n += int(math.Ceil(d.Rate/d.Cap[k] - absTol))
		}
	}
	if a := p.Types[k].Available; a >= 0 && a < n {
		return a
	}
	return n
}

func (p *Problem) check() error {
	for di, d := range p.Demands {
		if len(d.Cap) != len(p.Types) {
			return fmt.Errorf("fleet: demand %d has %d capacities for %d types", di, len(d.Cap), len(p.Types))
		}
		if !(d.Rate >= 0) || math.IsInf(d.Rate, 0) {
			return fmt.Errorf("fleet: demand %s: rate %g", d.Name, d.Rate)
		}
		ok := false
		for _, c := range d.Cap {
			ok = ok || c > 0
		}
		if !ok && d.Rate > 0 {
			return fmt.Errorf("%w: %s: no GPU type can serve it", planner.ErrInfeasible, d.Name)
		}
	}
	for _, t := range p.Types {
		if !(t.Price >= 0) || math.IsInf(t.Price, 0) {
			return fmt.Errorf("fleet: type %s: price %g", t.Name, t.Price)
		}
	}
	return nil
}

// Size solves the fleet-sizing ILP: minimise Σ_k price_k·n_k subject to every demand's rate
// being served. Shared: Σ_k x_dk = 1, Σ_d (rate_d/cap_dk)·x_dk ≤ n_k (Mélange's ILP);
// dedicated: Σ_k cap_dk·n_dk ≥ rate_d, n_k = Σ_d n_dk. Both with n_k ≤ available_k. A
// problem the available GPUs cannot serve is a *ShortError.
func Size(ctx context.Context, p Problem, timeLimit time.Duration, gap float64) (*Solution, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	m := solver.NewModel("fleet", solver.Minimize)
	K, D := len(p.Types), len(p.Demands)
	n := make([]solver.Var, K)
	for k, t := range p.Types {
		// A tiny tie-break toward fewer GPUs among equal costs (free GPUs count too).
		n[k] = m.AddInteger("n_"+t.Name, 0, float64(p.bound(k)), t.Price+tieBreakPerGPU)
	}
	x := make([][]solver.Var, D)
	nd := make([][]solver.Var, D)
	load := make([][]solver.Term, K)
	for d, dm := range p.Demands {
		x[d] = make([]solver.Var, K)
		nd[d] = make([]solver.Var, K)
		var row []solver.Term
		for k := range p.Types {
			c := dm.Cap[k]
			if c <= 0 || dm.Rate == 0 {
				x[d][k], nd[d][k] = -1, -1
				continue
			}
			if p.Shared {
				x[d][k] = m.AddContinuous(fmt.Sprintf("x_%d_%d", d, k), 0, 1, 0)
				row = append(row, solver.Term{Var: x[d][k], Coef: 1})
				load[k] = append(load[k], solver.Term{Var: x[d][k], Coef: dm.Rate / c})
			} else {
				ub := math.Ceil(dm.Rate/c - absTol)
				nd[d][k] = m.AddInteger(fmt.Sprintf("n_%d_%d", d, k), 0, ub, 0)
				row = append(row, solver.Term{Var: nd[d][k], Coef: c / dm.Rate})
				load[k] = append(load[k], solver.Term{Var: nd[d][k], Coef: 1})
			}
		}
		if len(row) == 0 {
			continue
		}
		if p.Shared {
			m.AddRow("serve_"+dm.Name, 1, 1, row...)
		} else {
			m.AddRow("serve_"+dm.Name, 1, solver.Inf, row...)
		}
	}
	for k, t := range p.Types {
		m.AddRow("count_"+t.Name, -solver.Inf, 0, append(load[k], solver.Term{Var: n[k], Coef: -1})...)
	}
	p.addLimits(m, n)
	res, err := solver.Solve(ctx, m, solver.Options{TimeLimit: timeLimit, RelGap: gap, Deterministic: true})
	if err != nil {
		return nil, fmt.Errorf("fleet sizing: %w", err)
	}
	if !res.HasSolution {
		if res.Status == solver.StatusInfeasible {
			s, serr := MaxScale(ctx, p)
			if serr != nil {
				return nil, serr
			}
			return nil, &ShortError{Scale: s, Demands: p.Demands}
		}
		return nil, fmt.Errorf("%w: fleet sizing: %s", planner.ErrNoSolution, res.Status)
	}
	sol := &Solution{Count: make([]int, K), Share: make([][]float64, D), Status: res.Status.String(),
		Bound: res.Bound, Gap: res.Gap, Nodes: res.Nodes, Wall: res.Wall}
	if !p.Shared {
		sol.Dedicated = make([][]int, D)
	}
	for d, dm := range p.Demands {
		sol.Share[d] = make([]float64, K)
		if !p.Shared {
			sol.Dedicated[d] = make([]int, K)
		}
		for k := range p.Types {
			if p.Shared && x[d][k] >= 0 {
				sol.Share[d][k] = res.Value(x[d][k])
			}
			if !p.Shared && nd[d][k] >= 0 {
				c := int(math.Round(res.Value(nd[d][k])))
				sol.Dedicated[d][k] = c
				if dm.Rate > 0 {
					sol.Share[d][k] = float64(c) * dm.Cap[k] / dm.Rate
				}
			}
		}
	}
	for k, t := range p.Types {
		sol.Count[k] = int(math.Round(res.Value(n[k])))
		sol.Cost += t.Price * float64(sol.Count[k])
	}
	sol.Cost = roundCost(sol.Cost)
	sol.Bound, sol.Gap = p.costBound(res.Bound, sol.Cost)
	return sol, nil
}

// tieBreakPerGPU is what Size's objective adds to each GPU's price: among equal costs the
// fewer GPUs.
const tieBreakPerGPU = 1e-6

// costBound turns the solver's bound lb on Size's objective (the cost plus tieBreakPerGPU a
// GPU) into a bound on the cost itself, and the gap of cost to it. A fleet of cost C on N GPUs
// has objective C + tieBreakPerGPU·N, and N ≤ C/pmin (pmin the cheapest price) plus the free
// types' GPUs, at most their bounds; so no fleet costs less than (lb − tieBreakPerGPU·free) /
// (1 + tieBreakPerGPU/pmin), rounded down to the cost's precision and never above cost. A free
// type without a bound bounds nothing: 0.
func (p *Problem) costBound(lb, cost float64) (bound, gap float64) {
	pmin, free := math.Inf(1), 0.0
	for k, t := range p.Types {
		if t.Price > 0 {
			pmin = math.Min(pmin, t.Price)
			continue
		}
		free += float64(p.bound(k))
	}
	bound = lb - tieBreakPerGPU*free
	if !math.IsInf(pmin, 1) {
		bound /= 1 + tieBreakPerGPU/pmin
	}
	if math.IsNaN(bound) || math.IsInf(bound, 0) || bound < 0 {
		bound = 0
	}
	bound = math.Min(cost, math.Floor(bound*1e6)/1e6)
	if cost > 0 {
		gap = math.Ceil((cost-bound)/cost*1e6) / 1e6 // rounded up: still proven
	}
	return bound, gap
}

// MaxScale is the largest s such that s times every demand's rate is servable with all the
// available GPUs (the LP relaxation: fractional GPUs of the bounded types). An unbounded type
// frees only the demands it serves: s is unbounded, reported as +Inf, only when every demand
// with a rate is served by some unbounded type; otherwise the demands that only bounded types
// serve bound it (one unbounded type serving one demand used to make it +Inf, and the
// message then read "+Inf% of the rates"). It is what the infeasibility message names.
func MaxScale(ctx context.Context, p Problem) (float64, error) {
	free := true
	for _, d := range p.Demands {
		served := d.Rate <= 0
		for k, t := range p.Types {
			if _, limited := p.Limits[t.Group]; t.Available < 0 && !limited && d.Cap[k] > 0 {
				served = true
			}
		}
		free = free && served
	}
	if free {
		return math.Inf(1), nil
	}
	m := solver.NewModel("fleet-scale", solver.Maximize)
	s := m.AddContinuous("s", 0, solver.Inf, 1)
	load := make([][]solver.Term, len(p.Types))
	for d, dm := range p.Demands {
		row := []solver.Term{{Var: s, Coef: -dm.Rate}}
		for k := range p.Types {
			if dm.Cap[k] <= 0 {
				continue
			}
			y := m.AddContinuous(fmt.Sprintf("y_%d_%d", d, k), 0, solver.Inf, 0)
			row = append(row, solver.Term{Var: y, Coef: 1})
			load[k] = append(load[k], solver.Term{Var: y, Coef: 1 / dm.Cap[k]})
		}
		m.AddRow(fmt.Sprintf("rate_%d", d), 0, 0, row...)
	}
	// n_k ≥ its load, bounded by its available count and its group's limit.
	n := make([]solver.Var, len(p.Types))
	for k, t := range p.Types {
		ub := solver.Inf
		if t.Available >= 0 {
			ub = float64(t.Available)
		}
		n[k] = m.AddContinuous("n_"+t.Name, 0, ub, 0)
		m.AddRow("load_"+t.Name, -solver.Inf, 0, append(load[k], solver.Term{Var: n[k], Coef: -1})...)
	}
	p.addLimits(m, n)
	res, err := solver.Solve(ctx, m, solver.Options{Deterministic: true})
	if err != nil {
		return 0, fmt.Errorf("fleet scale: %w", err)
	}
	if !res.HasSolution {
		return 0, nil
	}
	return res.Value(s), nil
}

// addLimits bounds each group's GPUs: Σ_{k in group} units_k·n_k ≤ limit.
func (p *Problem) addLimits(m *solver.Model, n []solver.Var) {
	groups := slices.Sorted(maps.Keys(p.Limits))
	for _, g := range groups {
		var terms []solver.Term
		for k, t := range p.Types {
			if t.Group == g {
				terms = append(terms, solver.Term{Var: n[k], Coef: float64(max(t.Units, 1))})
			}
		}
		if len(terms) > 0 {
			m.AddRow("limit_"+g, -solver.Inf, float64(p.Limits[g]), terms...)
		}
	}
}
