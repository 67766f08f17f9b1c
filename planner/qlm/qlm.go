// Package qlm is QLM's planner (Patke et al., "QLM", SoCC '24): `plan solve` for llm_classes
// workloads writes the initial instance/model placement and virtual queues — one instance per
// GPU set of the cluster, models placed in proportion to their expected decode load
// (Σ rate·μ_out / Θ, the drain time of QLM §6 Eq. 2), one initial request group per class queued
// on the instances hosting its model in deadline order — and a checker for `plan check`. The
// runtime plan generator (dataplane/qlm) re-plans the virtual queues from there.
package qlm

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/planner"
)

// Flags are QLM's `plan solve` options as a plan records them in provenance.options, read
// back by `plan check --resolve`.
type Flags struct {
	// Strategy is the placement algorithm: load (default) or round-robin.
	Strategy string `json:"strategy"`
	// Objective is cost for a least-cost fleet (cost.go, issue 34), absent otherwise.
	Objective string `json:"objective,omitempty"`
	// SLO, when set, replaces every class's slo in a cost solve (plan solve --slo, and
	// plan frontier --slo sweeps it).
	SLO formats.Duration `json:"slo,omitempty"`
}

// DefaultFlags are `plan solve`'s defaults for QLM.
func DefaultFlags() Flags { return Flags{Strategy: Strategies[0]} }

// Options tune Solve.
type Options struct {
	Flags
	// ToolVersion is recorded in the plan's provenance ("" = "dev").
	ToolVersion string
}

// Strategies are the planner's placement algorithms.
var Strategies = []string{"load", "round-robin"}

// instanceSlot is one GPU set an instance may occupy.
type instanceSlot struct {
	gpu string
	mem int64
}

// profileFor returns model's LLM profile on gpu.
func profileFor(profs []*formats.Profile, model, gpu string) *formats.LLMProfile {
	for _, p := range profs {
		for i := range p.LLMs {
			if p.LLMs[i].Model == model && p.LLMs[i].GPU == gpu {
				return &p.LLMs[i]
			}
		}
	}
	return nil
}

// profileForCount returns model's LLM profile on count GPUs of type gpu (a gpu_count of 0
// counts as 1).
func profileForCount(profs []*formats.Profile, model, gpu string, count int) *formats.LLMProfile {
	for _, p := range profs {
		for i := range p.LLMs {
			if l := &p.LLMs[i]; l.Model == model && l.GPU == gpu && max(l.GPUCount, 1) == max(count, 1) {
				return l
			}
		}
	}
	return nil
}

// Solve plans the initial placement.
func Solve(in planner.Inputs, o Options) (*formats.Plan, error) {
	strategy := o.Strategy
	if strategy == "" {
		strategy = Strategies[0]
	}
	if strategy != "load" && strategy != "round-robin" {
		return nil, &planner.InputError{Problems: []string{fmt.Sprintf("--strategy: %q: must be one of load, round-robin", strategy)}}
	}
	w, c := in.Workload, in.Cluster
	if w == nil || len(w.LLMClasses) == 0 {
		return nil, &planner.InputError{Problems: []string{"workload: llm_classes: must list at least one class"}}
	}
	if c == nil {
		return nil, &planner.InputError{Problems: []string{"cluster: required for llm_classes workloads"}}
	}
	var slots []instanceSlot
	for _, g := range c.GPUs {
		for k := 0; k < g.Count; k++ {
			slots = append(slots, instanceSlot{gpu: g.Type, mem: g.MemoryBytes})
		}
	}
	load, models, chosen, tp, probs := classLoads(in, w, slots)
	if len(probs) > 0 {
		return nil, &planner.InputError{Problems: probs}
	}
	q := &formats.QLMPlan{ReplanMs: 500}
	var assign []string
	var count map[string]int
	if tp {
		var err error
		if assign, count, err = placeTensorParallel(q, c, strategy, models, load, chosen); err != nil {
			return nil, err
		}
	} else {
		assign, count = assignInstances(strategy, models, load, len(slots))
		for i, s := range slots {
			q.Instances = append(q.Instances, formats.QLMInstance{Name: "llm-" + strconv.Itoa(i), GPU: s.gpu, GPUCount: 1, Model: assign[i]})
		}
	}
	initialGroups(q, in.Profiles, w, assign)
	emb := embedded(in.Profiles, c, w, load)
	digest, _ := planner.InputDigest(&emb)
	obj := 0.0
	for _, m := range models {
		if count[m] > 0 {
			obj = math.Max(obj, load[m]/float64(count[m]))
		}
	}
	if err := overloaded(models, load, count, len(slots)); err != nil {
		return nil, err
	}
	name := w.Metadata.Name
	if name == "" {
		name = "qlm"
	}
	tool := o.ToolVersion
	if tool == "" {
		tool = "dev"
	}
	// The initial placement is QLM's greedy heuristic (§5): no solver, no bound, so its
	// status is "heuristic", never "optimal".
	return &formats.Plan{
		TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindPlan},
		Metadata: formats.Metadata{Name: name, Description: fmt.Sprintf("QLM initial placement (%s): %d instances, %d request groups", strategy, len(q.Instances), len(q.Groups))},
		Provenance: formats.Provenance{Tool: "plan", ToolVersion: tool, InputDigest: digest, Inputs: in.Refs, Strategy: strategy,
			Options: planner.RecordOptions(Flags{Strategy: strategy}), Status: "heuristic", Objective: math.Round(obj*1e6) / 1e6, Embedded: &emb},
		Cluster: c,
		QLM:     q,
	}, nil
}

// classLoads checks every class against the cluster's GPUs and returns each model's expected
// decode load (Σ rate·μ_out/Θ over its classes, on the first GPU type that fits it), the
// models in class order and the profile each is planned with, or the problems found. A model
// runs on one GPU when a one-GPU profile fits; otherwise on the tensor-parallel profile
// (gpu_count k) that fits a server with k GPUs of its type (tensorParallel), and then tp is
// true.
func classLoads(in planner.Inputs, w *formats.Workload, slots []instanceSlot) (load map[string]float64, models []string, chosen map[string]*formats.LLMProfile, tp bool, probs []string) {
	profs := in.Profiles
	load, chosen = map[string]float64{}, map[string]*formats.LLMProfile{}
	for i, cl := range w.LLMClasses {
		p := fmt.Sprintf("workload: llm_classes[%d]", i)
		var fits bool
		var best *formats.LLMProfile
		var weightProbs []string
		for _, s := range slots {
			// A tensor-parallel profile is tried below, when no one-GPU profile fits.
			pr := profileForCount(profs, cl.Model, s.gpu, 1)
			if pr == nil {
				continue
			}
			if s.mem > 0 && pr.WeightBytes >= s.mem {
				weightProbs = append(weightProbs, fmt.Sprintf("%s.model: %s: weights of %d bytes exceed the %s's memory (%d bytes)", p, cl.Model, pr.WeightBytes, s.gpu, s.mem))
				continue
			}
			fits = true
			if best == nil {
				best = pr
			}
		}
		if !fits {
			pr, tpProbs := tensorParallel(in, cl.Model)
			if pr == nil {
				probs = append(probs, weightProbs...)
				probs = append(probs, fmt.Sprintf("%s.model: %s: no LLM profile fits any GPU type of the cluster", p, cl.Model))
				probs = append(probs, tpProbs...)
				continue
			}
			best, tp, weightProbs = pr, true, nil
		}
		probs = append(probs, weightProbs...)
		prefill := best.PrefillBaseUs + best.PrefillUsPerToken*cl.InputTokens.Mean
		if it := best.Iteration; it != nil && len(it.Prefill) > 0 {
			prefill = it.Prefill[0].Us
		}
		if float64(cl.SLO.D().Microseconds()) <= prefill {
			probs = append(probs, fmt.Sprintf("%s.slo: %s: below the prefill time of %s on %s (%.0f µs)", p, cl.SLO, cl.Model, best.GPU, prefill))
		}
		if _, ok := load[cl.Model]; !ok {
			models = append(models, cl.Model)
			chosen[cl.Model] = best
		}
		load[cl.Model] += cl.RateRPS * cl.OutputTokens.Mean / best.ThroughputTokensPerS
	}
	return load, models, chosen, tp, probs
}

// assignInstances gives each of n instances a model: round-robin over the models, or (load)
// at least one each while instances last, the rest by largest remaining load per instance
// (D'Hondt): the paper does not say how instances start.
func assignInstances(strategy string, models []string, load map[string]float64, n int) ([]string, map[string]int) {
	count := map[string]int{}
	order := append([]string(nil), models...)
	sort.SliceStable(order, func(a, b int) bool { return load[order[a]] > load[order[b]] })
	assign := make([]string, n)
	used := 0
	if strategy == "round-robin" {
		for i := range assign {
			assign[i] = models[i%len(models)]
		}
	} else {
		for _, m := range order {
			if used < n {
				count[m]++
				used++
			}
		}
		for used < n {
			best, bv := "", -1.0
			for _, m := range order {
				if v := load[m] / float64(count[m]+1); v > bv {
					best, bv = m, v
				}
			}
			count[best]++
			used++
		}
		i := 0
		for _, m := range order {
			for k := 0; k < count[m]; k++ {
				assign[i] = m
				i++
			}
		}
	}
	return assign, count
}

// initialGroups adds one initial group per class to q, in deadline (SLO) order, queued on the
// instances hosting its model in turn.
func initialGroups(q *formats.QLMPlan, profs []*formats.Profile, w *formats.Workload, assign []string) {
	cls := make([]int, len(w.LLMClasses))
	for i := range cls {
		cls[i] = i
	}
	sort.SliceStable(cls, func(a, b int) bool { return w.LLMClasses[cls[a]].SLO < w.LLMClasses[cls[b]].SLO })
	next := map[string]int{}
	for _, ci := range cls {
		cl := w.LLMClasses[ci]
		id := "rg-" + cl.Name
		q.Groups = append(q.Groups, formats.QLMGroup{ID: id, Model: cl.Model, Class: cl.Name, SLO: cl.SLO,
			Requests: max(1, int(math.Ceil(cl.RateRPS)))})
		var hosts []int
		for i, m := range assign {
			if m == cl.Model {
				hosts = append(hosts, i)
			}
		}
		if len(hosts) == 0 {
			for i := range q.Instances {
				if profileFor(profs, cl.Model, q.Instances[i].GPU) != nil {
					hosts = append(hosts, i)
				}
			}
		}
		h := hosts[next[cl.Model]%len(hosts)]
		next[cl.Model]++
		q.Instances[h].Queue = append(q.Instances[h].Queue, id)
	}
}

// embedded is what the plan embeds to be re-solved: the cluster, the workload and the LLM
// profiles of the planned models.
func embedded(profs []*formats.Profile, c *formats.Cluster, w *formats.Workload, load map[string]float64) formats.EmbeddedInputs {
	emb := formats.EmbeddedInputs{Cluster: c, Workload: w}
	for _, p := range profs {
		cp := formats.Profile{TypeMeta: p.TypeMeta, Metadata: p.Metadata}
		for _, l := range p.LLMs {
			if _, ok := load[l.Model]; ok {
				cp.LLMs = append(cp.LLMs, l)
			}
		}
		if len(cp.LLMs) > 0 {
			emb.Profiles = append(emb.Profiles, cp)
		}
	}
	return emb
}

// GPUSet names an instance's GPUs: "A100", or "2×A100" when tensor-parallel, with the GPU
// indices when the plan records them ("2×A100 (GPUs 0,1)").
func GPUSet(in formats.QLMInstance) string {
	s := in.GPU
	if in.GPUCount > 1 {
		s = fmt.Sprintf("%d×%s", in.GPUCount, in.GPU)
	}
	if len(in.GPUs) > 0 {
		s += " (GPUs " + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(in.GPUs)), ","), "[]") + ")"
	}
	return s
}

// overloaded refuses a placement that cannot sustain the class rates (issue 31 item 4: such a
// plan was written as "optimal" and only plan check noticed): a model without an instance, or
// one whose expected decode load per instance (Σ rate·μ_out/Θ over its instances) reaches 1.
// It names the load and the instances that would carry it.
func overloaded(models []string, load map[string]float64, count map[string]int, slots int) error {
	need := 0
	var worst string
	for _, m := range models {
		need += int(math.Floor(load[m])) + 1
		if count[m] == 0 || load[m] >= float64(count[m]) {
			if worst == "" {
				worst = fmt.Sprintf("model %s: expected decode load %.3f (Σ rate·mean output tokens / Θ) on %d instance(s)", m, load[m], count[m])
			}
		}
	}
	if worst == "" {
		return nil
	}
	return &planner.InputError{Problems: []string{fmt.Sprintf("workload: llm_classes: rate_rps: %s: %s: a load below 1 per instance is needed; the best placement on the cluster's %d instance slots cannot reach it: about %d instances would (add GPUs, or lower the classes' rate_rps)",
		planner.ErrInfeasible, worst, slots, need)}}
}

// Utilization is the expected decode load per instance of the model (the plan's objective:
// the busiest model's Σ rate·μ_out/Θ divided by its instances; < 1 is sustainable).
func Utilization(p *formats.Plan) float64 { return p.Provenance.Objective }

// Verify checks a plan's qlm section against its embedded inputs: every instance's model has
// a profile on its GPU and fits its memory, every class's model is hosted or hostable, the
// queued groups name known classes, and the expected load per instance is below 1.
func Verify(p *formats.Plan) []string {
	var out []string
	e := p.Provenance.Embedded
	if e == nil || e.Workload == nil {
		return []string{"provenance.embedded: no embedded workload: cannot verify"}
	}
	var profs []*formats.Profile
	for i := range e.Profiles {
		profs = append(profs, &e.Profiles[i])
	}
	hosted := map[string]int{}
	for i, in := range p.QLM.Instances {
		if in.Model == "" {
			continue
		}
		pr := profileForCount(profs, in.Model, in.GPU, in.GPUCount)
		if pr == nil {
			out = append(out, fmt.Sprintf("qlm.instances[%d]: model %s has no profile on %s", i, in.Model, GPUSet(in)))
			continue
		}
		hosted[in.Model]++
	}
	classes := map[string]bool{}
	for i, cl := range e.Workload.LLMClasses {
		classes[cl.Name] = true
		ok := false
		for _, in := range p.QLM.Instances {
			ok = ok || profileFor(profs, cl.Model, in.GPU) != nil
		}
		if !ok {
			out = append(out, fmt.Sprintf("workload.llm_classes[%d]: model %s: no instance can host it", i, cl.Model))
		}
	}
	for i, g := range p.QLM.Groups {
		if g.Class != "" && !classes[g.Class] {
			out = append(out, fmt.Sprintf("qlm.groups[%d].class: %s: not a class of the embedded workload", i, g.Class))
		}
	}
	if u := Utilization(p); u >= 1 && p.Fleet == nil { // a cost plan's objective is its cost (cost.go)
		out = append(out, fmt.Sprintf("expected decode load per instance %.3f >= 1: the placement cannot sustain the class rates", u))
	}
	return out
}
