// Package qlm is QLM's planner (Patke et al., "QLM", SoCC '24): `plan solve` for llm_classes
// workloads writes the initial instance/model placement and virtual queues — one instance per
// GPU set of the cluster (or the fewest meeting the SLOs, --min-gpus), models placed in
// proportion to their load in instances (rate over the simulated capacity of one instance,
// simcap.go), one initial request group per class queued
// on the instances hosting its model in deadline order — and a checker for `plan check`. The
// runtime plan generator (dataplane/qlm) re-plans the virtual queues from there.
package qlm

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	"github.com/plan-dev/plan/planner"
)

// Flags are QLM's `plan solve` options as a plan records them in provenance.options, read
// back by `plan check --resolve`.
type Flags struct {
	// Strategy is the placement algorithm: load (default) or round-robin.
	Strategy string `json:"strategy"`
	// Objective is cost for a least-cost fleet (cost.go), absent otherwise.
	Objective string `json:"objective,omitempty"`
	// SLO, when set, replaces every class's slo in a cost solve (plan solve --slo, and
	// plan frontier --slo sweeps it).
	SLO formats.Duration `json:"slo,omitempty"`
	// MinGPUs plans the fewest instances whose simulation meets every class's targets
	// instead of one on every GPU set of the cluster (plan solve --min-gpus).
	MinGPUs bool `json:"min_gpus,omitempty" flag:"min-gpus" help:"search the fewest GPUs whose plan meets every SLO (default: an instance on every GPU set of the cluster)"`
	// Search plans the cost objective by the deployment search (planner/llmdeploy: GPU
	// type × tensor parallelism × engine settings, capacity by simulation) instead of
	// Mélange's buckets (plan solve --objective cost --search).
	Search bool `json:"search,omitempty" flag:"search" help:"with --objective cost: search GPU type × tensor-parallel size × expert parallelism (mixture-of-experts models) × engine settings × aggregated or prefill/decode disaggregated (where the cluster gives kv_link_gbps), each candidate's capacity simulated at the classes' SLO percentiles, for the least-cost fleet (prints the candidates and comparison fleets on stderr)"`
	// Quantizations are weight dtypes the search tries beside each checkpoint's own
	// (plan solve --search-quantization fp8).
	Quantizations string `json:"search_quantization,omitempty" flag:"search-quantization" help:"with --search: weight dtypes tried beside each model's checkpoint, fp8 (vLLM's online FP8 of a BF16 checkpoint: half the weight bytes, FP8 GEMMs where the GPU has them); default: the checkpoint's only"`
}

// DefaultFlags are `plan solve`'s defaults for QLM.
func DefaultFlags() Flags { return Flags{Strategy: Strategies[0]} }

// Options tune Solve.
type Options struct {
	Flags
	// ToolVersion is recorded in the plan's provenance ("" = "dev").
	ToolVersion string
	// AcceptMiss returns a placement whose simulation misses a target (the run's prediction
	// records it) instead of refusing it (plan solve --accept-miss).
	AcceptMiss bool
	// Status, when set, is told the phase (placing, simulating the placement) for a status
	// line.
	Status func(string)
	// Sim is the simulator the solve sizes instances and checks its plan with (required:
	// nil fails the solve with ErrNoSimulator).
	Sim PointSimulator
	// Probe, when set, runs the instances' capacity probes in Sim's place: Sim's point
	// stopped once a class is certain to miss (sim.PoissonProbe), the same verdicts sooner
	// (InstanceRateUnder). nil: Sim.
	Probe PointSimulator
}

// probe is the simulator the capacity probes run: Probe, else Sim.
func (o Options) probe() PointSimulator {
	if o.Probe != nil {
		return o.Probe
	}
	return o.Sim
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

// llmProfilePath names pr in errors: its file and its index, "profile.json: llms[0]".
func llmProfilePath(in planner.Inputs, pr *formats.LLMProfile) string {
	for i, p := range in.Profiles {
		for j := range p.LLMs {
			if &p.LLMs[j] == pr {
				return fmt.Sprintf("%s: llms[%d]", profilePath(in, i), j)
			}
		}
	}
	return "llms"
}

// gpuMemory is one GPU's memory: the cluster's memory_bytes, else the known type's (a
// cluster may leave memory_bytes out for the GPU catalogue's types, formats.KnownGPUMemory),
// so a model's weights are checked against it either way; 0 when neither says.
func gpuMemory(gpu string, given int64) int64 {
	if given > 0 {
		return given
	}
	return formats.KnownGPUMemory(gpu)
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

// Solve plans the initial placement: each model's instances by its load in instances (its
// classes' rate over what one instance serves them at within every SLO, InstanceRate), on
// every GPU set of the cluster, or with MinGPUs on the fewest that meet the targets; the
// placement is then simulated at the workload's rates (`plan simulate --load 1`), and a plan
// some class of which misses Target there is refused naming the class, its target and what
// the best placement reaches.
func Solve(in planner.Inputs, o Options) (*formats.Plan, error) {
	if o.Sim == nil {
		return nil, ErrNoSimulator
	}
	strategy := o.Strategy
	if strategy == "" {
		strategy = Strategies[0]
	}
	if strategy != "load" && strategy != "round-robin" {
		return nil, &planner.InputError{Problems: []string{fmt.Sprintf("--strategy: %q: must be one of load, round-robin", strategy)}}
	}
	w, c := in.Workload, in.Cluster
	if w == nil || len(llmspec.ClassesOf(w)) == 0 {
		return nil, &planner.InputError{Problems: []string{"workload: llm_classes: must list at least one class"}}
	}
	if c == nil {
		return nil, &planner.InputError{Problems: []string{"cluster: required for llm_classes workloads"}}
	}
	var slots []instanceSlot
	for _, g := range c.GPUs {
		for k := 0; k < g.Count; k++ {
			slots = append(slots, instanceSlot{gpu: g.Type, mem: gpuMemory(g.Type, g.MemoryBytes)})
		}
	}
	if o.Status != nil {
		o.Status("finding what one instance of each model serves within its classes' SLOs (simulated)")
	}
	load, models, chosen, tp, probs := classLoads(o.probe(), in, w, slots)
	if len(probs) > 0 {
		return nil, &planner.InputError{Problems: probs}
	}
	// With MinGPUs the instance budget starts at what the loads need and grows by one while
	// the simulation misses a target; otherwise every GPU set of the cluster gets one.
	limit := 0
	if o.MinGPUs {
		for _, m := range models {
			limit += max(1, int(math.Ceil(load[m]-1e-9)))
		}
	}
	var q *qlmsec.QLMPlan
	var assign []string
	var count map[string]int
	for {
		q = &qlmsec.QLMPlan{ReplanMs: 500}
		if tp {
			var err error
			if assign, count, err = placeTensorParallel(q, c, strategy, models, load, chosen, limit); err != nil {
				return nil, err
			}
		} else {
			n := len(slots)
			if limit > 0 {
				n = min(limit, n)
			}
			assign, count = assignInstances(strategy, models, load, n)
			for i := range n {
				q.Instances = append(q.Instances, qlmsec.QLMInstance{Name: "llm-" + strconv.Itoa(i), GPU: slots[i].gpu, GPUCount: 1, Model: assign[i]})
			}
		}
		grow := limit > 0 && len(q.Instances) >= limit && (tp || limit < len(slots))
		// The load model's estimate sizes the placement; the simulation below decides. A
		// model the estimate says is short of instances is refused here only when it has
		// none or needs twice what it has: otherwise the simulation's verdict stands, the
		// one --objective cost and plan check reach on the same placement (the estimate is
		// one instance's capacity at the classes' percentiles, which under-counts what
		// several instances absorb together), and --accept-miss may write it.
		if over := overloadedModel(models, load, count); over != "" {
			if grow {
				limit++
				continue
			}
			if count[over] == 0 || load[over] >= 2*float64(count[over]) {
				return nil, overloaded(in, w, over, load, count, chosen, len(slots))
			}
		}
		if o.Status != nil {
			o.Status(fmt.Sprintf("simulating the placement: %d instances, %g s at the classes' rates", len(q.Instances), float64(verifySeconds)))
		}
		res, err := simulate(o.Sim, in.Profiles, llmspec.ClassesOf(w), q.Instances, nil, verifySeconds, verifySeed, -1)
		if err != nil {
			return nil, fmt.Errorf("qlm: simulating the placement: %w", err)
		}
		miss := firstMiss(res)
		if miss < 0 {
			break
		}
		if grow {
			limit++
			continue
		}
		if o.AcceptMiss {
			break
		}
		return nil, missed(in, w, miss, res[miss], load, count, chosen, len(q.Instances))
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
	name := cmp.Or(w.Metadata.Name, "qlm")
	tool := planner.ToolVersion(o.ToolVersion)
	// The initial placement is QLM's greedy heuristic (§5): no solver, no bound, so its
	// status is "heuristic", never "optimal".
	return qlmsec.SetPlan(&formats.Plan{
		TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindPlan},
		Metadata: formats.Metadata{Name: name, Description: fmt.Sprintf("QLM initial placement (%s): %d instances, %d request groups", strategy, len(q.Instances), len(q.Groups))},
		Provenance: formats.Provenance{Tool: "plan", ToolVersion: tool, InputDigest: digest, Inputs: in.Refs, Strategy: strategy,
			Options: planner.RecordOptions(Flags{Strategy: strategy, MinGPUs: o.MinGPUs}), Status: "heuristic", Objective: math.Round(obj*1e6) / 1e6, Embedded: &emb},
		Cluster: c,
	}, q), nil
}

// firstMiss is the first class (in class order) below Target, or -1.
func firstMiss(res []ClassResult) int {
	for i, r := range res {
		if r.Requests > 0 && !r.Met() {
			return i
		}
	}
	return -1
}

// classLoads checks every class against the cluster's GPUs and returns each model's load in
// instances (its classes' total rate over InstanceRate: what one instance of the first GPU
// type that fits serves of their mix within every SLO the classes set), the models in class
// order and the profile each is planned with, or the problems found. A model runs on one GPU
// when a one-GPU profile fits; otherwise on the tensor-parallel profile (gpu_count k) that
// fits a server with k GPUs of its type (tensorParallel), and then tp is true.
func classLoads(sim PointSimulator, in planner.Inputs, w *formats.Workload, slots []instanceSlot) (load map[string]float64, models []string, chosen map[string]*formats.LLMProfile, tp bool, probs []string) {
	profs := in.Profiles
	load, chosen = map[string]float64{}, map[string]*formats.LLMProfile{}
	rate := map[string]float64{}
	for i, cl := range llmspec.ClassesOf(w) {
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
				// One line per GPU type and memory, not per GPU of the cluster.
				msg := fmt.Sprintf("%s.model: %s: weights of %d bytes exceed the %s's memory (%d bytes; %s.weight_bytes)",
					p, cl.Model, pr.WeightBytes, s.gpu, s.mem, llmProfilePath(in, pr))
				if !slices.Contains(weightProbs, msg) {
					weightProbs = append(weightProbs, msg)
				}
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
		// The engine's prefill of the class's mean prompt (the resolved engine's curve, as
		// the capacity rule reads it): an SLO below it misses for most requests on any plan.
		prefill := newLifeModel(best).prefillUs(math.Max(1, cl.InputTokens.Mean))
		if float64(cl.SLO.D().Microseconds()) <= prefill {
			probs = append(probs, fmt.Sprintf("%s.slo: %s: below the prefill time of %s's mean prompt (%.0f tokens) on %s (%.0f µs)", p, cl.SLO, cl.Model, math.Max(1, cl.InputTokens.Mean), best.GPU, prefill))
		}
		probs = append(probs, classChecks(in, i, cl, best)...)
		if _, ok := chosen[cl.Model]; !ok {
			models = append(models, cl.Model)
			chosen[cl.Model] = best
		}
		rate[cl.Model] += math.Max(cl.RateRPS, 0)
	}
	if len(probs) > 0 {
		return load, models, chosen, tp, probs
	}
	for _, m := range models {
		r, err := InstanceRate(sim, chosen[m], w, m)
		switch {
		case err != nil:
			probs = append(probs, fmt.Sprintf("workload: llm_classes: model %s: simulating one instance on %s: %v", m, GPUSet(qlmsec.QLMInstance{GPU: chosen[m].GPU, GPUCount: chosen[m].GPUCount}), err))
		case r <= 0:
			probs = append(probs, fmt.Sprintf("%s: %s: no rate of model %s's class mix meets every SLO at p%.0f on one %s instance, not even %.4f req/s (relax the classes' slo, ttft_slo or tpot_slo)",
				workloadPath(in), planner.ErrInfeasible, m, 100*Target, GPUSet(qlmsec.QLMInstance{GPU: chosen[m].GPU, GPUCount: chosen[m].GPUCount}), 1.0/1024))
		default:
			load[m] = rate[m] / r
		}
	}
	return load, models, chosen, tp, probs
}

// classChecks are the inputs no plan can serve on profile pr, named by file, field and value
// (LLM engine digest §4): a class whose longest prompt plus output exceeds the model's
// context (engine.max_model_len: the engine refuses it with HTTP 400) or the KV cache
// (kv_capacity_tokens: never admitted), and a ttft_slo below
// one prefill of the class's shortest prompts (its 1st percentile: at least 99% of its
// requests need longer, so no rate meets the p99 target).
func classChecks(in planner.Inputs, i int, cl llmspec.LLMClass, pr *formats.LLMProfile) []string {
	var probs []string
	wf := fmt.Sprintf("%s: llm_classes[%d] (%s)", workloadPath(in), i, cl.Name)
	eng := newLifeModel(pr)
	if ml := eng.eng.MaxModelLen; ml > 0 && cl.InputTokens.Max+cl.OutputTokens.Max > ml {
		probs = append(probs, fmt.Sprintf("%s: input_tokens.max + output_tokens.max: %d + %d = %d tokens: more than model %s's context of %d tokens (%s.engine.max_model_len)",
			wf, cl.InputTokens.Max, cl.OutputTokens.Max, cl.InputTokens.Max+cl.OutputTokens.Max, cl.Model, ml, profileField(in, pr)))
	}
	// A request is admitted only when its KV fits the cache whole (LLM engine digest §1): a
	// cache smaller than the class's longest request never serves it, whatever the rate.
	long := cl.InputTokens.Max + cl.OutputTokens.Max
	if long <= 0 {
		long = int(math.Ceil(cl.InputTokens.Mean + cl.OutputTokens.Mean))
	}
	if pr.KVCapacityTokens > 0 && int64(long) > pr.KVCapacityTokens {
		probs = append(probs, fmt.Sprintf("%s: input_tokens.max + output_tokens.max: %d tokens: more than the %d tokens of model %s's KV cache on %s (%s.kv_capacity_tokens): no such request is ever admitted",
			wf, long, pr.KVCapacityTokens, cl.Model, GPUSet(qlmsec.QLMInstance{GPU: pr.GPU, GPUCount: pr.GPUCount}), profileField(in, pr)))
	}
	if cl.TTFTSLO > 0 {
		short := math.Max(1, math.Round(cl.InputTokens.Mean-2.3263*cl.InputTokens.Std))
		if cl.InputTokens.Max > 0 {
			short = math.Min(short, float64(cl.InputTokens.Max))
		}
		if pre := eng.prefillUs(short); float64(cl.TTFTSLO.D().Microseconds()) < pre {
			probs = append(probs, fmt.Sprintf("%s: ttft_slo: %s: below one prefill of the class's shortest prompts (%.0f tokens, its 1st percentile) on %s: %s (%s.iteration.prefill)",
				wf, cl.TTFTSLO, short, GPUSet(qlmsec.QLMInstance{GPU: pr.GPU, GPUCount: pr.GPUCount}), ms(pre), profileField(in, pr)))
		}
	}
	return probs
}

// workloadPath names the workload file (for errors), "workload" when it has none.
func workloadPath(in planner.Inputs) string {
	for _, r := range in.Refs {
		if r.Kind == formats.KindWorkload && r.Path != "" {
			return r.Path
		}
	}
	return "workload"
}

// profileField names profile pr among the inputs: "FILE: llms[j]".
func profileField(in planner.Inputs, pr *formats.LLMProfile) string {
	for i, p := range in.Profiles {
		for j := range p.LLMs {
			if &p.LLMs[j] == pr {
				return fmt.Sprintf("%s: llms[%d]", profilePath(in, i), j)
			}
		}
	}
	return fmt.Sprintf("profile of %s on %s", pr.Model, pr.GPU)
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
func initialGroups(q *qlmsec.QLMPlan, profs []*formats.Profile, w *formats.Workload, assign []string) {
	qlmsec.QueueInitialGroups(q, llmspec.ClassesOf(w), func(cl llmspec.LLMClass) []int {
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
		return hosts
	})
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
func GPUSet(in qlmsec.QLMInstance) string {
	s := in.GPU
	if in.GPUCount > 1 {
		s = fmt.Sprintf("%d×%s", in.GPUCount, in.GPU)
	}
	if len(in.GPUs) > 0 {
		s += " (GPUs " + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(in.GPUs)), ","), "[]") + ")"
	}
	return s
}

// overloadedModel is the first model (in class order) whose load in instances reaches its
// instance count, or "".
func overloadedModel(models []string, load map[string]float64, count map[string]int) string {
	for _, m := range models {
		if count[m] == 0 || load[m] >= float64(count[m]) {
			return m
		}
	}
	return ""
}

// modelRate is model's classes' total rate in w.
func modelRate(w *formats.Workload, model string) float64 {
	r := 0.0
	for _, c := range llmspec.ClassesOf(w) {
		if c.Model == model {
			r += math.Max(c.RateRPS, 0)
		}
	}
	return r
}

// classOf is the first class of model in w, with its index.
func classOf(w *formats.Workload, model string) (int, llmspec.LLMClass) {
	for i, c := range llmspec.ClassesOf(w) {
		if c.Model == model {
			return i, c
		}
	}
	return -1, llmspec.LLMClass{}
}

// overloaded refuses a placement that cannot sustain the class rates (such a
// plan was written as "optimal" and only plan check noticed): a model without an instance, or
// one whose load in instances reaches its count. It names the class, its target, what one
// instance serves within it (the best achievable rate per instance) and the instances needed.
func overloaded(in planner.Inputs, w *formats.Workload, m string, load map[string]float64, count map[string]int, chosen map[string]*formats.LLMProfile, slots int) error {
	i, cl := classOf(w, m)
	pr := chosen[m]
	kind := GPUSet(qlmsec.QLMInstance{GPU: pr.GPU, GPUCount: pr.GPUCount})
	per := modelRate(w, m) / math.Max(load[m], 1e-12)
	return &planner.InputError{Problems: []string{fmt.Sprintf("%s: llm_classes[%d] (%s): rate_rps: %s: model %s's classes need %.4g req/s within every SLO at p%.0f unless stated (%s); one %s instance serves at most %.3g req/s of their mix within them (simulated), so %d instance(s) serve %.3g req/s: about %d instances would (the cluster has %d GPU set(s); add GPUs, or lower rate_rps)",
		workloadPath(in), i, cl.Name, planner.ErrInfeasible, m, modelRate(w, m), 100*Target, sloText(cl), kind, per, count[m], per*float64(count[m]), int(math.Floor(load[m]))+1, slots)}}
}

// missed refuses a placement whose simulation at the workload's rates misses a class's
// target, naming the class, the target and what the placement reaches.
func missed(in planner.Inputs, w *formats.Workload, ci int, r ClassResult, load map[string]float64, count map[string]int, chosen map[string]*formats.LLMProfile, insts int) error {
	cl := llmspec.ClassesOf(w)[ci]
	m := cl.Model
	pr := chosen[m]
	kind := GPUSet(qlmsec.QLMInstance{GPU: pr.GPU, GPUCount: pr.GPUCount})
	size := ""
	if load[m] >= float64(count[m]) {
		// The simulation confirms what the load model estimated: say how many would do.
		per := modelRate(w, m) / math.Max(load[m], 1e-12)
		size = fmt.Sprintf("; one %s instance serves at most %.3g req/s of the model's classes within every SLO at p%.0f unless stated (%s): about %d instances would", kind, per, 100*Target, sloText(cl), int(math.Floor(load[m]))+1)
	}
	return &planner.InputError{Problems: []string{fmt.Sprintf("%s: llm_classes[%d] (%s): rate_rps %g: %s: on %d %s instance(s) of %s (load %.3f per instance; %d instance(s) in all) the simulated plan at its own rates %s%s; use --min-gpus on a larger cluster, or lower rate_rps (--accept-miss writes the plan, its miss recorded)",
		workloadPath(in), ci, cl.Name, cl.RateRPS, planner.ErrInfeasible, count[m], kind, m, load[m]/math.Max(float64(count[m]), 1), insts, r, size)}}
}

// sloText lists the SLOs a class sets.
func sloText(cl llmspec.LLMClass) string {
	e2e, ttft, tpot := cl.Percentiles()
	at := func(p float64) string {
		if p == Target {
			return ""
		}
		return fmt.Sprintf(" at p%g", 100*p) // stated at another percentile than the line's
	}
	s := "slo " + cl.SLO.String() + at(e2e)
	if cl.TTFTSLO > 0 {
		s += ", ttft_slo " + cl.TTFTSLO.String() + at(ttft)
	}
	if cl.TPOTSLO > 0 {
		s += ", tpot_slo " + cl.TPOTSLO.String() + at(tpot)
	}
	return s
}

// Utilization is the load per instance (the plan's objective: the busiest model's rate over
// what its instances serve within every SLO in simulation, InstanceRate; < 1 is sustainable).
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
	for i, in := range qlmsec.PlanOf(p).Instances {
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
	for i, cl := range llmspec.ClassesOf(e.Workload) {
		classes[cl.Name] = true
		ok := false
		for _, in := range qlmsec.PlanOf(p).Instances {
			ok = ok || profileFor(profs, cl.Model, in.GPU) != nil
		}
		if !ok {
			out = append(out, fmt.Sprintf("workload.llm_classes[%d]: model %s: no instance can host it", i, cl.Model))
		}
	}
	for i, g := range qlmsec.PlanOf(p).Groups {
		if g.Class != "" && !classes[g.Class] {
			out = append(out, fmt.Sprintf("qlm.groups[%d].class: %s: not a class of the embedded workload", i, g.Class))
		}
	}
	if u := Utilization(p); u >= 1 && p.Fleet == nil { // a cost plan's objective is its cost (cost.go)
		out = append(out, fmt.Sprintf("load per instance (rate / simulated capacity) %.3f >= 1: the placement cannot sustain the class rates", u))
	}
	return out
}
