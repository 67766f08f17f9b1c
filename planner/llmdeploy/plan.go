package llmdeploy

import (
	"cmp"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/fleet"
	"github.com/plan-dev/plan/solver"
)

// PlanOptions are what the plan records of how it was solved.
type PlanOptions struct {
	ToolVersion string
	// Options are recorded in provenance.options (the planner's flags, read back by
	// `plan check --resolve`).
	Options json.RawMessage
	// Deterministic records no wall-clock time.
	Deterministic bool
}

// Plan is the chosen fleet as a QLM plan: one instance per unit (gpu_count = its TP, on GPUs
// of one server), one request group per class queued on its model's instances, the chosen
// candidates' profiles (their engine settings: max_num_batched_tokens, max_num_seqs)
// embedded, and the cluster sized to the fleet (fleet.Finish).
func (res *Result) Plan(in planner.Inputs, po PlanOptions) (*formats.Plan, error) {
	f := res.Chosen
	if f.Err != nil {
		return nil, f.Err
	}
	q := &qlmsec.QLMPlan{ReplanMs: 500}
	prof := formats.Profile{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindProfile},
		Metadata: formats.Metadata{Name: "llmdeploy", Description: "the deployment search's chosen candidates: profiles given, or roofline estimates (backend roofline), at the engine settings chosen"}}
	type unit struct {
		gpu   string
		tp    int
		model string
		role  string
	}
	var units []unit
	seen := map[string]bool{}
	for _, i := range f.Chosen() {
		r := res.Rows[i]
		for k, x := range r.Candidate.Roles {
			// One profile per (model, GPU, TP): the plan finds an instance's by them.
			if key := fmt.Sprintf("%s|%s|%d", r.Candidate.Model, x.GPU, x.TP); !seen[key] {
				seen[key] = true
				prof.LLMs = append(prof.LLMs, *x.Profile)
			}
			for range f.Units[i] * r.Candidate.instances(k) {
				units = append(units, unit{x.GPU, x.TP, r.Candidate.Model, x.Role})
			}
		}
	}
	// Widest instances first, each on the server of its type with the fewest free GPUs that
	// holds it (best fit keeps whole servers free for wide instances), on the cluster sized to
	// the fleet (fleet.Cluster: each pool's count the GPUs used, as the plan records it and
	// numbers its GPUs).
	sort.SliceStable(units, func(a, b int) bool { return units[a].tp > units[b].tp })
	used := map[string]int{}
	for _, u := range units {
		used[u.gpu] += u.tp
	}
	srv := fleet.Servers(fleet.Cluster(in.Cluster, used))
	for _, u := range units {
		gpus, ok := fleet.TakeBestFit(srv, u.gpu, u.tp)
		if !ok {
			return nil, &planner.InputError{Problems: []string{fmt.Sprintf("cluster: gpus: no %d free %s GPUs on one server for an instance of %s (the fleet's GPUs fit the available counts but not the servers)", u.tp, u.gpu, u.model)}}
		}
		q.Instances = append(q.Instances, qlmsec.QLMInstance{GPU: u.gpu, GPUCount: u.tp, Model: u.model, GPUs: gpus, Role: u.role})
	}
	sort.SliceStable(q.Instances, func(a, b int) bool { return q.Instances[a].GPUs[0] < q.Instances[b].GPUs[0] })
	for i := range q.Instances {
		q.Instances[i].Name = "llm-" + strconv.Itoa(i)
	}
	groups(q, in.Workload)
	emb := formats.EmbeddedInputs{Cluster: in.Cluster, Workload: in.Workload, Profiles: []formats.Profile{prof}}
	digest, _ := planner.InputDigest(&emb)
	name := cmp.Or(in.Workload.Metadata.Name, "llmdeploy")
	tool := planner.ToolVersion(po.ToolVersion)
	sz := f.Sizing
	plan := &formats.Plan{
		TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindPlan},
		Metadata: formats.Metadata{Name: name, Description: fmt.Sprintf("LLM deployment search (GPU type × tensor parallelism × engine settings, capacity by simulation): %d instances; %s", len(q.Instances), res.Flags())},
		Provenance: formats.Provenance{Tool: "plan", ToolVersion: tool, Solver: "highs", SolverVersion: solver.Version(), InputDigest: digest, Inputs: in.Refs, Strategy: "search",
			Options: po.Options, Status: sz.Status, Bound: formats.Proven(sz.Bound), Gap: formats.Proven(sz.Gap), Nodes: sz.Nodes, Embedded: &emb},
		Cluster: in.Cluster,
	}
	qlmsec.SetPlan(plan, q)
	if !po.Deterministic {
		plan.Provenance.SolveMs = float64(res.Wall.Microseconds()) / 1000
	}
	if err := fleet.Finish(plan, in.Cluster); err != nil {
		return nil, &planner.InputError{Problems: []string{err.Error()}}
	}
	return plan, nil
}

// groups queues one request group per class (tightest SLO first) on its model's instances
// in turn, as the QLM planner's initial plan does.
func groups(q *qlmsec.QLMPlan, w *formats.Workload) {
	qlmsec.QueueInitialGroups(q, llmspec.ClassesOf(w), func(cl llmspec.LLMClass) []int {
		var hosts []int
		for i, in := range q.Instances {
			// A disaggregated model's requests enter at its prefill instances.
			if in.Model == cl.Model && in.Role != llmspec.RoleDecode {
				hosts = append(hosts, i)
			}
		}
		return hosts
	})
}

// Flags are the engine flags each chosen candidate's instances need (vLLM's names):
// "llama-3.1-8b on H100: --tensor-parallel-size 1 --max-num-batched-tokens 2048 ...".
func (res *Result) Flags() string {
	var parts []string
	for _, i := range res.Chosen.Chosen() {
		r := res.Rows[i]
		for _, x := range r.Candidate.Roles {
			s := fmt.Sprintf("%s on %s", r.Candidate.Model, x.GPU)
			if x.Role != "" {
				s += " (" + x.Role + ")"
			}
			parts = append(parts, s+": "+x.flags())
		}
	}
	return strings.Join(parts, "; ")
}

// flags are the vLLM flags of the role's instances: the step budgets and prefix caching as
// the engine the search simulated resolves them from the role's profile (llm.NewModel), so
// the deployment states what was judged.
func (x Role) flags() string {
	m := llm.NewModel(x.Profile)
	caching := "--no-enable-prefix-caching"
	if m.PrefixCaching {
		caching = "--enable-prefix-caching"
	}
	f := fmt.Sprintf("--tensor-parallel-size %d --max-num-batched-tokens %d --max-num-seqs %d %s", x.TP, m.MaxBatched, m.MaxSeqs, caching)
	if q := x.Engine.Quantization; q != "" {
		f += " --quantization " + q
	}
	if x.Engine.ExpertParallel {
		f += " --enable-expert-parallel"
	}
	// Speculative decoding as vLLM's --speculative-config (export/qlm writes the same): a
	// named draft model, else n-gram prompt lookup; a prefill instance drafts nothing.
	if k := x.Engine.SpecTokens; k > 0 && x.Role != RolePrefill {
		method := `"method":"ngram"`
		if sp := x.Profile.Engine.Speculative; sp != nil && sp.DraftModel != "" {
			method = fmt.Sprintf(`"method":"draft_model","model":%q`, sp.DraftModel)
		}
		f += fmt.Sprintf(` --speculative-config '{%s,"num_speculative_tokens":%d}'`, method, k)
	}
	return f
}
