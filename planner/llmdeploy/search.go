package llmdeploy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/fleet"
)

// Row is one evaluated candidate: its capacity, what one unit costs, and what serving its
// model's whole rate with it alone would take.
type Row struct {
	Candidate Candidate
	Eval      Evaluation
	// UnitPrice is one unit's price per hour (its GPUs at the cluster's prices).
	UnitPrice float64
	// Replicas and CostPerHour: units needed for the model's rate with this candidate alone
	// (0, +Inf when it serves none), ignoring available counts.
	Replicas    int
	CostPerHour float64
	// PerMTokens is the price of a million output tokens at capacity.
	PerMTokens float64
	// Kind: the best engine setting of its (model, mode, GPU types, TPs), so it enters the
	// fleet MILP (a same-priced unit with less capacity never beats it).
	Kind bool
}

// Fleet is a least-cost fleet over a subset of the candidates: units per row.
type Fleet struct {
	Name  string
	Units map[int]int
	Cost  float64
	// Err says why the subset has no fleet (no candidate of some model, too few GPUs).
	Err    error
	Sizing *fleet.Solution
}

// Result is a search: every candidate evaluated, the chosen fleet, and the comparison
// fleets (aggregated-only at each single TP, each single GPU type).
type Result struct {
	Rows    []Row
	Models  []string
	Rates   map[string]float64
	Chosen  Fleet
	Compare []Fleet
	Wall    time.Duration
	// Notes say what the search did not try and why (a GPU type searched only at the
	// tensor-parallel sizes of the profiles given for it).
	Notes []string
	// Defaults are the notes that name a default the search took, with its value (the
	// plan's provenance.defaults).
	Defaults []string
	// Counts are the cluster's GPU counts of the types it gives no `available` for: a fleet
	// buys past them (available bounds a cost fleet), which its row says (describe).
	Counts map[string]int
}

// Search enumerates the candidates, finds each one's capacity in parallel (o.Workers), and
// picks the least-cost fleet within the cluster's available GPUs, with the comparison rows.
func Search(ctx context.Context, in planner.Inputs, o Options) (*Result, error) {
	start := time.Now()
	given := o
	o = o.withDefaults()
	if in.Workload == nil || len(llmspec.ClassesOf(in.Workload)) == 0 {
		return nil, &planner.InputError{Problems: []string{"workload: llm_classes: must list at least one class"}}
	}
	if in.Cluster == nil {
		return nil, &planner.InputError{Problems: []string{"cluster: required for llm_classes workloads"}}
	}
	// The search sizes a fleet for each class's rate: a class without one would be found
	// unservable only after every candidate's capacity search.
	var noRate []string
	for i, c := range llmspec.ClassesOf(in.Workload) {
		if !(c.RateRPS > 0) {
			noRate = append(noRate, fmt.Sprintf("workload: llm_classes[%d].rate_rps: %g: the deployment search sizes a fleet for each class's rate: must be > 0", i, c.RateRPS))
		}
	}
	for _, q := range o.Quantizations {
		if q != "fp8" {
			noRate = append(noRate, fmt.Sprintf("--search-quantization: %q: must be fp8 (vLLM's online quantization of a BF16 checkpoint as it loads; FP4 and MXFP4 come as quantized checkpoints)", q))
		}
	}
	if len(noRate) > 0 {
		return nil, &planner.InputError{Problems: noRate}
	}
	prices, _, err := in.Cluster.Prices()
	if err != nil {
		return nil, &planner.InputError{Problems: []string{err.Error()}}
	}
	if o.KVLinkGBps == 0 && in.Cluster.KVLinkGBps != nil {
		// The cluster's KV link (kv_link_gbps): without one, no disaggregated candidates.
		o.KVLinkGBps = *in.Cluster.KVLinkGBps
	}
	cands, err := Enumerate(in, o)
	if err != nil {
		return nil, err
	}
	var keep []Candidate
	for _, c := range cands {
		if containsMode(o.Modes, c.Mode) && Evaluators[c.Mode] != nil {
			keep = append(keep, c)
		}
	}
	defaults := append(llmspec.DefaultPercentileNotes(in.Workload), defaultSpaceNotes(given, o)...)
	res := &Result{Rates: map[string]float64{}, Notes: append(profileTPNotes(in, o), defaults...), Defaults: defaults, Counts: map[string]int{}}
	for _, g := range in.Cluster.GPUs {
		if g.Available == nil && g.Count > 0 {
			res.Counts[g.Type] += g.Count
		}
	}
	for _, c := range llmspec.ClassesOf(in.Workload) {
		if _, ok := res.Rates[c.Model]; !ok {
			res.Models = append(res.Models, c.Model)
		}
		res.Rates[c.Model] += math.Max(c.RateRPS, 0)
	}
	evals, err := evaluateAll(ctx, keep, in.Workload, o)
	if err != nil {
		return nil, err
	}
	for i, c := range keep {
		res.Rows = append(res.Rows, row(c, evals[i], prices, res.Rates[c.Model]))
	}
	markKinds(res.Rows)
	all := func(Row) bool { return true }
	res.Chosen = res.solve(ctx, in.Cluster, "search", all)
	for _, tp := range o.TP {
		res.Compare = append(res.Compare, res.solve(ctx, in.Cluster, fmt.Sprintf("aggregated TP%d only", tp), func(r Row) bool {
			return r.Candidate.Mode == Aggregated && r.Candidate.Roles[0].TP == tp
		}))
	}
	for _, g := range in.Cluster.GPUs {
		res.Compare = append(res.Compare, res.solve(ctx, in.Cluster, g.Type+" only", func(r Row) bool {
			for _, x := range r.Candidate.Roles {
				if x.GPU != g.Type {
					return false
				}
			}
			return true
		}))
	}
	// Each comparison is a subset of the search's space: the search's fleet is the cheapest
	// of them all (a MILP stopped within its gap may have found a dearer one; take the best).
	for _, f := range res.Compare {
		if f.Err == nil && (res.Chosen.Err != nil || f.Cost < res.Chosen.Cost) {
			name := res.Chosen.Name
			res.Chosen = f
			res.Chosen.Name = name
		}
	}
	res.Wall = time.Since(start)
	if res.Chosen.Err != nil {
		return res, res.Chosen.Err
	}
	return res, nil
}

func containsMode(ms []Mode, m Mode) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// evaluateAll finds every candidate's capacity for its model's classes, workers at a time;
// evals[i] is keep[i]'s whatever the order the workers finish in.
func evaluateAll(ctx context.Context, keep []Candidate, w *formats.Workload, o Options) ([]Evaluation, error) {
	evals := make([]Evaluation, len(keep))
	errs := make([]error, len(keep))
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for range min(o.Workers, max(len(keep), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if err := ctx.Err(); err != nil {
					errs[i] = err
					continue
				}
				c := keep[i]
				oc := o
				oc.ctx = ctx
				evals[i], errs[i] = capacityMemo(Evaluators[c.Mode], c, classesOf(w, c.Model), oc)
				if o.Progress != nil {
					mu.Lock()
					done++
					o.Progress(done, len(keep))
					mu.Unlock()
				}
			}
		}()
	}
	for i := range keep {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return evals, errors.Join(errs...)
}

// classesOf is model's classes of w.
func classesOf(w *formats.Workload, model string) []llmspec.LLMClass {
	var out []llmspec.LLMClass
	for _, c := range llmspec.ClassesOf(w) {
		if c.Model == model {
			out = append(out, c)
		}
	}
	return out
}

func row(c Candidate, e Evaluation, prices map[string]float64, rate float64) Row {
	r := Row{Candidate: c, Eval: e, CostPerHour: math.Inf(1), PerMTokens: math.Inf(1)}
	for g, n := range c.GPUs() {
		r.UnitPrice += prices[g] * float64(n)
	}
	r.UnitPrice = math.Round(r.UnitPrice*1e6) / 1e6
	if e.Rate > 0 {
		r.Replicas = int(math.Ceil(rate/e.Rate - 1e-9))
		r.CostPerHour = math.Round(float64(r.Replicas)*r.UnitPrice*1e4) / 1e4
	}
	if e.OutTokensPerS > 0 {
		r.PerMTokens = math.Round(r.UnitPrice/(e.OutTokensPerS*3600)*1e6*1e4) / 1e4
	}
	return r
}

// markKinds marks, of the rows sharing a model, mode and GPU types and TPs (the same unit
// price), the one with the highest capacity (the first on ties) as the MILP's kind.
func markKinds(rows []Row) {
	best := map[string]int{}
	var order []string
	for i, r := range rows {
		if r.Eval.Rate <= 0 {
			continue
		}
		k := r.Candidate.Model + "|" + string(r.Candidate.Mode) + "|" + fmt.Sprint(r.Candidate.Ratio)
		for _, x := range r.Candidate.Roles {
			k += fmt.Sprintf("|%s/%s/%d", x.Role, x.GPU, x.TP)
		}
		b, ok := best[k]
		if !ok {
			order = append(order, k)
		}
		if !ok || r.Eval.Rate > rows[b].Eval.Rate {
			best[k] = i
		}
	}
	for _, k := range order {
		rows[best[k]].Kind = true
	}
}

// maxDisaggKinds is how many disaggregated kinds of a model (cheapest alone first) the fleet
// choice tries.
const maxDisaggKinds = 3

// solve is the least-cost fleet of the kinds keep admits. A model is served by its
// aggregated kinds together, or by one disaggregated kind alone: a plan gives every instance
// of a model a role or none, one kind per role (formats' plan rules, llm-deploy-search.md
// §1). Every choice of mode per model — aggregated, or each of its maxDisaggKinds cheapest
// disaggregated kinds — is one fleet MILP; the cheapest wins (the first on ties, aggregated
// choices before disaggregated ones).
func (res *Result) solve(ctx context.Context, c *formats.Cluster, name string, keep func(Row) bool) Fleet {
	agg := map[string][]int{}
	dis := map[string][]int{}
	tried := map[string]bool{} // models with a candidate of this comparison at all
	for i, r := range res.Rows {
		if keep(r) {
			tried[r.Candidate.Model] = true
		}
		if !r.Kind || !keep(r) {
			continue
		}
		m := r.Candidate.Model
		if r.Candidate.Mode == Aggregated {
			agg[m] = append(agg[m], i)
		} else {
			dis[m] = append(dis[m], i)
		}
	}
	var missing, absent []string
	opts := make([][]int, len(res.Models)) // per model: -1 = its aggregated kinds, else one kind
	for mi, m := range res.Models {
		d := dis[m]
		sort.SliceStable(d, func(a, b int) bool { return res.Rows[d[a]].CostPerHour < res.Rows[d[b]].CostPerHour })
		if len(agg[m]) > 0 {
			opts[mi] = append(opts[mi], -1)
		}
		opts[mi] = append(opts[mi], d[:min(len(d), maxDisaggKinds)]...)
		if len(opts[mi]) == 0 && res.Rates[m] > 0 {
			if tried[m] {
				missing = append(missing, m)
			} else {
				absent = append(absent, m)
			}
		}
		if len(opts[mi]) == 0 {
			opts[mi] = []int{-1}
		}
	}
	if len(absent) > 0 {
		// Not an SLO miss: no (GPU type, tensor-parallel size) of this comparison can hold
		// the model at all (its weights and a minimal KV cache, or the degree is not in the
		// profiles given).
		return Fleet{Name: name, Cost: math.Inf(1), Err: noCandidateError{models: absent}}
	}
	if len(missing) > 0 {
		return Fleet{Name: name, Cost: math.Inf(1), Err: fmt.Errorf("%w: no candidate serves %s within its classes' SLOs", planner.ErrInfeasible, strings.Join(missing, ", "))}
	}
	best := Fleet{Name: name, Cost: math.Inf(1)}
	pick := make([]int, len(res.Models))
	for {
		var kinds []int
		for mi, m := range res.Models {
			if o := opts[mi][pick[mi]]; o < 0 {
				kinds = append(kinds, agg[m]...)
			} else {
				kinds = append(kinds, o)
			}
		}
		sort.Ints(kinds)
		f := res.milp(ctx, c, name, kinds)
		if best.Units == nil && best.Err == nil || f.Err == nil && (best.Err != nil || f.Cost < best.Cost) {
			best = f
		}
		// The next choice, the last model's fastest (mixed radix).
		mi := len(pick) - 1
		for ; mi >= 0; mi-- {
			if pick[mi]++; pick[mi] < len(opts[mi]) {
				break
			}
			pick[mi] = 0
		}
		if mi < 0 {
			return best
		}
	}
}

// milp is the least-cost fleet of the given kinds: the fleet MILP (planner/fleet, dedicated)
// with one demand per model (its classes' total rate; a unit of a kind serves its capacity
// of it), each GPU type's units × GPUs within its available count. A kind over two GPU
// types (a disaggregated pair across types) serves its model alone (solve's rule), so its
// units are the model's rate over its capacity, taken off each type's available count
// before the MILP sizes the rest.
func (res *Result) milp(ctx context.Context, c *formats.Cluster, name string, kinds []int) Fleet {
	f := Fleet{Name: name, Units: map[int]int{}}
	p := fleet.Problem{Limits: map[string]int{}}
	used := map[string]int{}
	direct := map[string]bool{}
	var single []int
	cost := 0.0
	for _, i := range kinds {
		r := res.Rows[i]
		if len(r.Candidate.GPUs()) == 1 {
			single = append(single, i)
			continue
		}
		units := int(math.Ceil(res.Rates[r.Candidate.Model]/r.Eval.Rate - 1e-9))
		f.Units[i] = units
		cost += float64(units) * r.UnitPrice
		direct[r.Candidate.Model] = true
		for g, n := range r.Candidate.GPUs() {
			used[g] += units * n
		}
	}
	for g, n := range used {
		if a := c.AvailableOf(g); n > a {
			f.Err, f.Cost = fmt.Errorf("%w: cluster: gpus[type=%s].available: %d: the disaggregated pairs chosen need %d", fleet.ErrShort, g, a, n), math.Inf(1)
			return f
		}
	}
	for _, i := range single {
		r := res.Rows[i]
		units, group := 0, ""
		for g, n := range r.Candidate.GPUs() {
			units, group = units+n, g
		}
		p.Types = append(p.Types, fleet.Type{Name: r.Candidate.Label(), Price: r.UnitPrice, Available: -1, Group: group, Units: units})
		if a := c.AvailableOf(group); a < math.MaxInt {
			p.Limits[group] = a - used[group]
		}
	}
	for _, m := range res.Models {
		if direct[m] {
			continue
		}
		d := fleet.Demand{Name: m, Rate: res.Rates[m], Cap: make([]float64, len(single))}
		for k, i := range single {
			if res.Rows[i].Candidate.Model == m {
				d.Cap[k] = res.Rows[i].Eval.Rate
			}
		}
		p.Demands = append(p.Demands, d)
	}
	if len(p.Demands) == 0 {
		// Every model on a pair across types: sized exactly, nothing left to the MILP.
		f.Sizing, f.Cost = &fleet.Solution{Status: "optimal", Cost: cost, Bound: cost}, cost
		return f
	}
	sol, err := fleet.Size(ctx, p, 20*time.Second, 1e-6)
	if err != nil {
		f.Err, f.Cost = err, math.Inf(1)
		return f
	}
	// The pairs sized outside the MILP add their cost to its objective and its bound alike.
	total := *sol
	total.Cost += cost
	total.Bound += cost
	f.Sizing, f.Cost = &total, total.Cost
	for d := range p.Demands {
		for k, n := range sol.Dedicated[d] {
			if n > 0 {
				f.Units[single[k]] += n
			}
		}
	}
	return f
}

// Chosen lists the chosen fleet's rows in row order with their units.
func (f Fleet) Chosen() []int {
	var out []int
	for i := range f.Units {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// noCandidateError says a fleet has no candidate at all for some models — no GPU type and
// tensor-parallel size of its comparison holds them — which is not an SLO miss; it is still
// infeasible (errors.Is planner.ErrInfeasible).
type noCandidateError struct{ models []string }

func (e noCandidateError) Error() string {
	return fmt.Sprintf("no candidate exists for %s (no GPU type and tensor-parallel size here holds it)", strings.Join(e.models, ", "))
}

func (e noCandidateError) Unwrap() error { return planner.ErrInfeasible }

// defaultSpaceNotes say which of the search space's axes took their defaults, with the
// values: they decide which candidates exist.
func defaultSpaceNotes(given, o Options) []string {
	ints := func(v []int) string {
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = fmt.Sprint(x)
		}
		return strings.Join(s, ",")
	}
	var d []string
	if len(given.TP) == 0 {
		d = append(d, "tensor-parallel "+ints(o.TP))
	}
	if len(given.BatchedTokens) == 0 {
		d = append(d, "max_num_batched_tokens "+ints(o.BatchedTokens))
	}
	if len(given.MaxSeqs) == 0 {
		d = append(d, "max_num_seqs "+ints(o.MaxSeqs))
	}
	if len(given.Ratios) == 0 && slices.Contains(o.Modes, Disaggregated) {
		r := make([]string, len(o.Ratios))
		for i, x := range o.Ratios {
			r[i] = fmt.Sprintf("%d:%d", x[0], x[1])
		}
		d = append(d, "prefill:decode "+strings.Join(r, ","))
	}
	if given.Requests <= 0 {
		d = append(d, fmt.Sprintf("%d requests per capacity probe", o.Requests))
	}
	if len(d) == 0 {
		return nil
	}
	return []string{"search space by default: " + strings.Join(d, "; ")}
}
