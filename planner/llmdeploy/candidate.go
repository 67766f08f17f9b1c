package llmdeploy

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/llmcap"
	pllm "github.com/plan-dev/plan/profiler/llm"
	"github.com/plan-dev/plan/profiler/roofline"
)

// Mode is how a candidate serves a model: one engine doing prefill and decode (aggregated),
// or prefill and decode on separate instances with the KV cache sent between them
// (disaggregated, llm-deploy-search.md §1).
type Mode string

// The modes.
const (
	Aggregated    Mode = "aggregated"
	Disaggregated Mode = "disaggregated"
)

// Role names of a candidate's instances (llmspec's roles, which a plan's instances state;
// "" for an aggregated engine).
const (
	RoleBoth    = ""
	RolePrefill = llmspec.RolePrefill
	RoleDecode  = llmspec.RoleDecode
)

// Engine is the engine settings a candidate runs with (vLLM's flag names, formats.LLMEngine).
type Engine struct {
	MaxBatchedTokens int
	MaxSeqs          int
	// PrefixCaching is enable_prefix_caching: on as the profile's engine has it (vLLM V1's
	// default, llm-engine-2 §2), and always where the model's classes share a prompt prefix
	// (prefix_tokens): the engine then skips their cached blocks.
	PrefixCaching bool
	// SpecTokens is k, the draft tokens of speculative decoding (0: off). Tried only where
	// the given profile states speculative decoding (its acceptance rate and draft cost are
	// measurements the search cannot make): k ∈ {0, 2, 4, the profile's}, the verify step
	// costing T(B·(k+1) tokens) + k draft steps (llm-deploy-search.md §5; at high load
	// it slows an engine down, so it is searched, never assumed).
	SpecTokens int
	// Quantization is the weights' online quantization ("" the checkpoint's; fp8) and
	// ExpertParallel whether a mixture-of-experts model's experts sit whole on the GPUs:
	// both change the profile (step times, KV room), so each is its own estimated base.
	Quantization   string
	ExpertParallel bool
}

// variant is the TP column's suffix for the weights and expert placement: " fp8", " ep",
// " fp8 ep" ("" for the checkpoint's weights with experts split).
func (e Engine) variant() string {
	s := ""
	if e.Quantization != "" {
		s += " " + e.Quantization
	}
	if e.ExpertParallel {
		s += " ep"
	}
	return s
}

// Role is one kind of instance of a candidate: a model's engine on TP GPUs of one type. An
// aggregated candidate has one role; a disaggregated one a prefill role and a decode role.
type Role struct {
	Role    string
	GPU     string
	TP      int
	Engine  Engine
	Profile *formats.LLMProfile
	// Estimated: the profile is the roofline estimate (profiler/llm), not one the user gave.
	Estimated bool
	// Source names where the profile came from (its file and llms index, or "roofline").
	Source string
}

// Candidate is one way to serve a model: its mode, its roles, and for a disaggregated
// candidate how many prefill instances go with how many decode instances (Ratio).
type Candidate struct {
	Model string
	Mode  Mode
	Roles []Role
	Ratio [2]int
}

// Key identifies a candidate (its capacity memo key, with the class mix).
func (c Candidate) Key() string {
	parts := []string{c.Model, string(c.Mode), fmt.Sprint(c.Ratio)}
	for _, r := range c.Roles {
		parts = append(parts, fmt.Sprintf("%s/%s/%d/%d/%d/%t/%d/%s/%s/%t", r.Role, r.GPU, r.TP, r.Engine.MaxBatchedTokens, r.Engine.MaxSeqs, r.Engine.PrefixCaching, r.Engine.SpecTokens, r.Source, r.Engine.Quantization, r.Engine.ExpertParallel))
	}
	return strings.Join(parts, "|")
}

// instances is how many instances of role k one unit of the candidate runs (a disaggregated
// unit's ratio; 1 otherwise).
func (c Candidate) instances(k int) int {
	if c.Mode == Disaggregated && k < 2 {
		return max(c.Ratio[k], 1)
	}
	return 1
}

// GPUs is how many GPUs one unit of the candidate takes (an aggregated instance's TP; a
// disaggregated unit's prefill and decode instances together).
func (c Candidate) GPUs() map[string]int {
	out := map[string]int{}
	for k, r := range c.Roles {
		out[r.GPU] += c.instances(k) * r.TP
	}
	return out
}

// Label is the candidate's short name: "llama-3.1-8b@H100×2 b8192 s256".
func (c Candidate) Label() string {
	var parts []string
	for _, r := range c.Roles {
		s := fmt.Sprintf("%s×%d b%d s%d", r.GPU, r.TP, r.Engine.MaxBatchedTokens, r.Engine.MaxSeqs)
		if r.Engine.SpecTokens > 0 {
			s += fmt.Sprintf(" k%d", r.Engine.SpecTokens)
		}
		s += r.Engine.variant()
		if r.Role != "" {
			s = r.Role + ":" + s
		}
		parts = append(parts, s)
	}
	s := c.Model + "@" + strings.Join(parts, "+")
	if c.Mode == Disaggregated {
		s += fmt.Sprintf(" %d:%d", c.Ratio[0], c.Ratio[1])
	}
	return s
}

// Options bound the search space.
type Options struct {
	// TP are the tensor-parallel sizes tried for roofline-derived profiles (default 1, 2, 4, 8).
	TP []int
	// BatchedTokens and MaxSeqs are the engine settings tried (default 512, 2048 and 8192
	// tokens, 64 and 256 sequences: around vLLM V1's budgets on smaller and H100-class GPUs,
	// formats.DefaultBatchedTokens); each candidate's engine block carries them, and
	// llm.NewModel resolves them as the engine runs them.
	BatchedTokens, MaxSeqs []int
	// Modes are the serving modes searched (default every mode with an evaluator).
	Modes []Mode
	// Requests is how many requests a capacity probe simulates (default 2000), Seed the seed
	// of their arrivals and lengths (default 1).
	Requests int
	Seed     uint64
	// Workers simulate candidates in parallel (default 1); the result does not depend on it.
	Workers int
	// KVLinkGBps is the bandwidth a disaggregated candidate's KV cache moves over from its
	// prefill to its decode instances (0: no disaggregated candidates), and Ratios the
	// prefill:decode instance counts tried per pair of roles (default 1:1, 2:1, 1:2:
	// DistServe's 2P+1D example and its mirror, llm-deploy-search.md §1).
	KVLinkGBps float64
	Ratios     [][2]int
	// failFast lets a probe stop its replay once it has failed for certain (settle):
	// Capacity's, which reads nothing of a failed probe but its verdict.
	failFast bool
	// Progress, when set, is told after each candidate's capacity is found: done of total
	// (from the search's workers, one at a time).
	Progress func(done, total int)
	// Quantizations are weight dtypes tried beside each checkpoint's own on the estimated
	// profiles (fp8: vLLM's online quantization); a GPU that cannot run one, or a
	// checkpoint already quantized, is not tried at it.
	Quantizations []string
	// ctx, when set, cancels the search: a probe's replay stops at the next finished
	// request and the capacity search at its next probe (SIGTERM, a deadline).
	ctx context.Context
}

func (o Options) withDefaults() Options {
	if len(o.TP) == 0 {
		o.TP = []int{1, 2, 4, 8}
	}
	if len(o.BatchedTokens) == 0 {
		o.BatchedTokens = []int{512, 2048, 8192}
	}
	if len(o.MaxSeqs) == 0 {
		o.MaxSeqs = []int{64, 256}
	}
	if len(o.Modes) == 0 {
		for _, m := range []Mode{Aggregated, Disaggregated} {
			if Evaluators[m] != nil {
				o.Modes = append(o.Modes, m)
			}
		}
	}
	if len(o.Ratios) == 0 {
		o.Ratios = [][2]int{{1, 1}, {2, 1}, {1, 2}}
	}
	if o.Requests <= 0 {
		o.Requests = llmcap.Requests
	}
	if o.Seed == 0 {
		o.Seed = llmcap.Seed
	}
	if o.Workers <= 0 {
		o.Workers = 1
	}
	return o
}

// refPath names input kind's file among the inputs (the n-th of that kind), or fallback.
func refPath(in planner.Inputs, kind string, n int, fallback string) string {
	i := 0
	for _, r := range in.Refs {
		if r.Kind == kind && r.Path != "" {
			if i == n {
				return r.Path
			}
			i++
		}
	}
	return fallback
}

// serverGPUs is the most GPUs of type gpu one server of the cluster holds (an instance's
// tensor-parallel GPUs share a server: llm-deploy-search.md §3, "TP in node").
func serverGPUs(c *formats.Cluster, gpu string) int {
	most := 0
	for _, s := range c.Servers {
		if s.GPU == gpu {
			most = max(most, s.GPUs)
		}
	}
	if most > 0 {
		return most
	}
	if p, ok := c.Pool(gpu); ok {
		// A cost-optimal fleet rents whole servers of per_server GPUs up to the type's
		// available count (count is the GPUs a throughput plan uses, not a bound here).
		return min(max(p.PerServer, 1), c.AvailableOf(gpu))
	}
	return 0
}

// checkClasses refuses a class percentile other than the four, and token lengths a
// catalogue model's context cannot hold (a request of prompt plus output past
// max_position_embeddings, which vLLM refuses), each exit 2 naming the field: caught up front
// rather than after every candidate's capacity search.
func checkClasses(in planner.Inputs) []string {
	var probs []string
	wp := refPath(in, formats.KindWorkload, 0, "workload")
	for i, c := range llmspec.ClassesOf(in.Workload) {
		for _, f := range []struct{ name, v string }{{"slo_percentile", c.SLOPercentile}, {"ttft_percentile", c.TTFTPercentile}, {"tpot_percentile", c.TPOTPercentile}} {
			if _, ok := llmspec.SLOPercentiles[f.v]; f.v != "" && !ok {
				probs = append(probs, fmt.Sprintf("%s: llm_classes[%d].%s: %q: must be p50, p90, p95 or p99", wp, i, f.name, f.v))
			}
		}
		m, err := pllm.Lookup(c.Model)
		if err != nil || m.Context <= 0 {
			continue
		}
		switch in, out := c.InputTokens, c.OutputTokens; {
		case in.Mean+out.Mean > float64(m.Context):
			probs = append(probs, fmt.Sprintf("%s: llm_classes[%d].input_tokens.mean: %g: with output_tokens.mean %g past %s's context of %d tokens", wp, i, in.Mean, out.Mean, m.Name, m.Context))
		case in.Max > 0 && out.Max > 0 && in.Max+out.Max > m.Context:
			probs = append(probs, fmt.Sprintf("%s: llm_classes[%d].input_tokens.max: %d: with output_tokens.max %d past %s's context of %d tokens", wp, i, in.Max, out.Max, m.Name, m.Context))
		}
	}
	return probs
}

// Enumerate lists every aggregated candidate of every model of the workload's classes: each
// LLM profile given for a GPU type of the cluster (its gpu_count as TP), and for each GPU
// type of the cluster without a profile of the model, the roofline estimate at every TP of
// o.TP that divides the model's attention heads, fits one server and holds the weights
// (labelled estimated); each at every engine setting of o. A profile given whose TP exceeds
// a server's GPUs of its type or does not divide the heads, or a model no GPU type holds at
// any TP, is bad input naming file, field and value.
func Enumerate(in planner.Inputs, o Options) ([]Candidate, error) {
	o = o.withDefaults()
	probs := checkClasses(in)
	var models []string
	seen := map[string]bool{}
	for _, c := range llmspec.ClassesOf(in.Workload) {
		if !seen[c.Model] {
			seen[c.Model] = true
			models = append(models, c.Model)
		}
	}
	var out []Candidate
	for _, m := range models {
		roles, p := roles(in, m, o)
		probs = append(probs, p...)
		if len(roles) == 0 && len(p) == 0 {
			probs = append(probs, fmt.Sprintf("%s: llm_classes[%d].model: %q: fits no GPU type of the cluster (%s) at any tensor-parallel size %v, and no profile given serves it",
				refPath(in, formats.KindWorkload, 0, "workload"), classIndex(in.Workload, m), m, strings.Join(clusterTypes(in.Cluster), ", "), o.TP))
		}
		for _, r := range roles {
			out = append(out, Candidate{Model: m, Mode: Aggregated, Roles: []Role{r}})
		}
		if containsMode(o.Modes, Disaggregated) && o.KVLinkGBps > 0 {
			out = append(out, disaggregated(m, roles, in.Cluster, o)...)
		}
	}
	if len(probs) > 0 {
		return nil, &planner.InputError{Problems: probs}
	}
	return out, nil
}

func classIndex(w *formats.Workload, model string) int {
	for i, c := range llmspec.ClassesOf(w) {
		if c.Model == model {
			return i
		}
	}
	return 0
}

func clusterTypes(c *formats.Cluster) []string {
	var t []string
	for _, g := range c.GPUs {
		t = append(t, g.Type)
	}
	return t
}

// roles are model's instance kinds (profile × engine setting) on the cluster, and the bad
// input among the profiles given.
func roles(in planner.Inputs, model string, o Options) ([]Role, []string) {
	var bases []Role
	var probs []string
	given := map[string]bool{}
	arch, archErr := pllm.Lookup(model)
	for i, p := range in.Profiles {
		for j := range p.LLMs {
			pr := &p.LLMs[j]
			if pr.Model != model {
				continue
			}
			if _, ok := in.Cluster.Pool(pr.GPU); !ok {
				continue // a GPU type the cluster lacks
			}
			given[pr.GPU] = true
			tp := max(pr.GPUCount, 1)
			field := fmt.Sprintf("%s: llms[%d].gpu_count", refPath(in, formats.KindProfile, i, fmt.Sprintf("profile %d", i+1)), j)
			if most := serverGPUs(in.Cluster, pr.GPU); tp > most {
				probs = append(probs, fmt.Sprintf("%s: %d: tensor-parallel size %d exceeds the %d %s GPUs of the cluster's largest server (an instance's GPUs share a server)", field, tp, tp, most, pr.GPU))
				continue
			}
			if archErr == nil {
				if err := arch.CheckTP(tp); err != nil {
					probs = append(probs, fmt.Sprintf("%s: %d: %v", field, tp, err))
					continue
				}
			}
			bases = append(bases, Role{GPU: pr.GPU, TP: tp, Profile: pr, Source: strings.TrimSuffix(field, ".gpu_count")})
		}
	}
	for _, g := range in.Cluster.GPUs {
		if given[g.Type] || !pllm.Known(model, g.Type) {
			continue
		}
		for _, tp := range o.TP {
			if tp > serverGPUs(in.Cluster, g.Type) || arch.CheckTP(tp) != nil {
				continue
			}
			// Each weight dtype tried, and for a mixture-of-experts model expert parallelism
			// where the experts divide over the GPUs.
			eps := []bool{false}
			if arch.CheckEP(tp) == nil {
				eps = append(eps, true)
			}
			for _, q := range append([]string{""}, o.Quantizations...) {
				for _, ep := range eps {
					// On the cluster's GPUs: its memory_bytes, where it says, bounds weights and KV.
					v := pllm.Variant{Link: roofline.LinkAuto, MemoryBytes: g.MemoryBytes, Quantization: q, ExpertParallel: ep}
					pr, err := pllm.EstimateWith(arch, g.Type, tp, v)
					if err != nil {
						// vLLM's profiling run samples max_num_seqs rows over the vocabulary, so
						// the fewest sequences the search tries may leave room the defaults do not.
						v.Engine = &formats.LLMEngine{MaxNumSeqs: slices.Min(o.MaxSeqs)}
						pr, err = pllm.EstimateWith(arch, g.Type, tp, v)
					}
					if err != nil {
						continue // the weights and a minimal KV cache do not fit tp GPUs, or the GPU cannot run q
					}
					if q != "" && pr.Engine.Quantization == "" {
						continue // a quantized checkpoint: q is its own dtype, already tried
					}
					bases = append(bases, Role{GPU: g.Type, TP: tp, Profile: pr, Estimated: true, Source: "roofline",
						Engine: Engine{Quantization: pr.Engine.Quantization, ExpertParallel: ep}})
				}
			}
		}
	}
	sort.SliceStable(bases, func(a, b int) bool {
		if bases[a].GPU != bases[b].GPU {
			return bases[a].GPU < bases[b].GPU
		}
		return bases[a].TP < bases[b].TP
	})
	for i := range bases {
		// A given profile states its own variant in its engine block.
		if e := bases[i].Profile.Engine; e != nil && !bases[i].Estimated {
			bases[i].Engine.Quantization, bases[i].Engine.ExpertParallel = e.Quantization, e.EnableExpertParallel
		}
	}
	shared := false
	for _, c := range llmspec.ClassesOf(in.Workload) {
		shared = shared || (c.Model == model && c.PrefixTokens > 0)
	}
	var out []Role
	for _, b := range bases {
		for _, bt := range o.BatchedTokens {
			for _, s := range o.MaxSeqs {
				for _, k := range specTokens(b.Profile) {
					r := b
					r.Engine = Engine{MaxBatchedTokens: bt, MaxSeqs: s, PrefixCaching: shared || b.Profile.Engine.PrefixCaching(), SpecTokens: k,
						Quantization: b.Engine.Quantization, ExpertParallel: b.Engine.ExpertParallel}
					r.Profile = withEngine(b.Profile, r.Engine)
					out = append(out, r)
				}
			}
		}
	}
	return out, probs
}

// specTokens are the draft lengths the search tries on profile pr: {0} without speculative
// decoding, else 0 (off), 2, 4 and the profile's own k (Engine.SpecTokens).
func specTokens(pr *formats.LLMProfile) []int {
	if pr.Engine == nil || pr.Engine.Speculative == nil {
		return []int{0}
	}
	ks := []int{0, 2, 4, pr.Engine.Speculative.DraftTokens}
	slices.Sort(ks)
	return slices.Compact(ks)
}

// withEngine is a copy of pr running the engine settings e (the rest of its engine block
// kept).
func withEngine(pr *formats.LLMProfile, e Engine) *formats.LLMProfile {
	cp := *pr
	var eng formats.LLMEngine
	if pr.Engine != nil {
		eng = *pr.Engine
	}
	caching := e.PrefixCaching
	eng.MaxNumBatchedTokens, eng.MaxNumSeqs, eng.EnablePrefixCaching = e.MaxBatchedTokens, e.MaxSeqs, &caching
	if eng.Speculative != nil {
		if e.SpecTokens == 0 {
			eng.Speculative = nil
		} else {
			sp := *eng.Speculative
			sp.DraftTokens = e.SpecTokens
			eng.Speculative = &sp
		}
	}
	cp.Engine = &eng
	return &cp
}

// disaggregated are model's disaggregated candidates: a prefill role and a decode role on
// one GPU type (DistServe's Alg. 2 "stage-aligned P and D segments share a node") at every
// pair of its tensor-parallel sizes at most a factor of two apart, or on two GPU types at
// one tensor-parallel size (the KV crosses servers over the cluster's kv_link_gbps), each
// at every ratio of o whose instances fit each type's available GPUs. The prefill side runs the
// largest token budget tried (a prefill engine batches prompts, Splitwise §4.1), the decode
// side the largest sequence cap; both at the given or estimated profile of their TP.
func disaggregated(model string, roles []Role, c *formats.Cluster, o Options) []Candidate {
	type key struct {
		gpu string
		tp  int
	}
	pre, dec := map[key]Role{}, map[key]Role{}
	var keys []key
	for _, r := range roles {
		k := key{r.GPU, r.TP}
		p, ok := pre[k]
		if !ok {
			keys = append(keys, k)
		}
		if !ok || r.Engine.MaxBatchedTokens > p.Engine.MaxBatchedTokens || (r.Engine.MaxBatchedTokens == p.Engine.MaxBatchedTokens && r.Engine.MaxSeqs > p.Engine.MaxSeqs) {
			pre[k] = r
		}
		if d, ok := dec[k]; !ok || r.Engine.MaxSeqs > d.Engine.MaxSeqs || (r.Engine.MaxSeqs == d.Engine.MaxSeqs && r.Engine.MaxBatchedTokens > d.Engine.MaxBatchedTokens) {
			dec[k] = r
		}
	}
	var out []Candidate
	for _, kp := range keys {
		for _, kd := range keys {
			// On one GPU type, TPs at most a factor of two apart (DistServe's and
			// AIConfigurator's best pairs are: simdistserve's tp_P 2, tp_D 1; AIC's P TP2 with
			// D TP4, §7); across two types (prefill on the compute-rich one, decode on the
			// one with bandwidth per dollar: Splitwise's mixed pools, §1) at one TP, which
			// keeps the pairs few.
			if kp.tp > 2*kd.tp || kd.tp > 2*kp.tp || (kp.gpu != kd.gpu && kp.tp != kd.tp) {
				continue
			}
			p, d := pre[kp], dec[kd]
			if kp == kd {
				// A plan finds an instance's profile by model, GPU and gpu_count: both sides
				// on one (GPU, TP) run one engine setting.
				d = p
			}
			p.Role, d.Role = RolePrefill, RoleDecode
			for _, ratio := range o.Ratios {
				need := map[string]int{kp.gpu: ratio[0] * kp.tp}
				need[kd.gpu] += ratio[1] * kd.tp
				if need[kp.gpu] > c.AvailableOf(kp.gpu) || need[kd.gpu] > c.AvailableOf(kd.gpu) {
					continue
				}
				out = append(out, Candidate{Model: model, Mode: Disaggregated, Roles: []Role{p, d}, Ratio: ratio})
			}
		}
	}
	return out
}

// profileTPNotes names, per model and GPU type with profiles given, the tensor-parallel sizes
// of o.TP the search does not try there: a profile given for a GPU type replaces the
// estimates for that type, so its degrees are the only ones searched on it. Sizes that
// exceed the type's servers or do not divide the model's heads are not named (the search
// would not try them anyway).
func profileTPNotes(in planner.Inputs, o Options) []string {
	o = o.withDefaults()
	var notes []string
	seen := map[string]bool{}
	for _, c := range llmspec.ClassesOf(in.Workload) {
		m := c.Model
		if seen[m] {
			continue
		}
		seen[m] = true
		arch, archErr := pllm.Lookup(m)
		given := map[string]map[int]bool{}
		var types []string
		for _, p := range in.Profiles {
			for _, pr := range p.LLMs {
				if pr.Model != m {
					continue
				}
				if _, ok := in.Cluster.Pool(pr.GPU); !ok {
					continue
				}
				if given[pr.GPU] == nil {
					given[pr.GPU] = map[int]bool{}
					types = append(types, pr.GPU)
				}
				given[pr.GPU][max(pr.GPUCount, 1)] = true
			}
		}
		sort.Strings(types)
		for _, g := range types {
			var missing []string
			for _, tp := range o.TP {
				if given[g][tp] || tp > serverGPUs(in.Cluster, g) || (archErr == nil && arch.CheckTP(tp) != nil) {
					continue
				}
				missing = append(missing, fmt.Sprint(tp))
			}
			if len(missing) > 0 {
				notes = append(notes, fmt.Sprintf("%s on %s: searched only at the tensor-parallel sizes of the profiles given; not at %s (profile them: plan profile --llm %s --gpu %s --tp %s)",
					m, g, strings.Join(missing, ", "), m, g, strings.Join(missing, ",")))
			}
		}
	}
	return notes
}
