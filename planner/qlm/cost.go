package qlm

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/fleet"
	"github.com/plan-dev/plan/solver"
)

// CostSLOFraction is f of the capacity rule: an instance serves a bucket at the batch whose
// request lifetime stays within f·SLO (the rest of the SLO is queueing headroom, as PARD's
// provisioning rule keeps 20%).
const CostSLOFraction = 0.8

// Bucket is a request size of one model: Mélange's unit of demand (Griggs et al. 2024, §5.1:
// requests bucketed by input and output length, each bucket's rate served by a mix of GPU
// types). SLO is the end-to-end deadline of its requests.
type Bucket struct {
	Model  string
	Class  string
	Input  float64
	Output float64
	Rate   float64
	SLO    time.Duration
	// CapInput and CapOutput are the sizes the capacity rule holds for (0 = Input, Output):
	// the bucket's upper edge, so its longer requests meet the SLO too.
	CapInput, CapOutput float64
}

// ClassBuckets splits every class's token-length mix into a 3×3 grid of input × output
// lengths at the 1/6, 1/2 and 5/6 quantiles of a normal with the class's mean and std,
// clamped to [1, max], each taking a ninth of the class's rate (a class without std is
// one bucket at its means). A bucket's capacity is taken at its tercile's upper edge (the
// top tercile at p95): sized at the centre, its longer half runs past the SLO on a type
// chosen at the SLO's edge (the bundled mixed plan held 88.5% attainment at load 1.0).
func ClassBuckets(w *formats.Workload) []Bucket {
	z := []float64{-0.9674, 0, 0.9674}        // standard normal quantiles at 1/6, 1/2, 5/6
	zHi := []float64{-0.4307, 0.4307, 1.6449} // the terciles' upper edges (the top one at p95)
	var out []Bucket
	for _, cl := range llmspec.ClassesOf(w) {
		ins := quantiles(cl.InputTokens, z)
		outs := quantiles(cl.OutputTokens, z)
		insHi := quantiles(cl.InputTokens, zHi)
		outsHi := quantiles(cl.OutputTokens, zHi)
		share := cl.RateRPS / float64(len(ins)*len(outs))
		for a, i := range ins {
			for b, o := range outs {
				out = append(out, Bucket{Model: cl.Model, Class: cl.Name, Input: i, Output: o, Rate: share, SLO: cl.SLO.D(),
					CapInput: insHi[a], CapOutput: outsHi[b]})
			}
		}
	}
	return out
}

func quantiles(t llmspec.TokenProfile, z []float64) []float64 {
	if t.Std <= 0 {
		return []float64{math.Max(1, t.Mean)}
	}
	out := make([]float64, len(z))
	for i, q := range z {
		x := t.Mean + q*t.Std
		if t.Max > 0 {
			x = math.Min(x, float64(t.Max))
		}
		out[i] = math.Max(1, math.Round(x))
	}
	return out
}

// Capacity is the closed-form sizing heuristic of the cost objective's bucket ILP (Mélange):
// the request rate one instance of pr sustains for requests of in prompt and out output
// tokens within f·slo, and the batch it runs at (0, 0 when none meets it). It is never a
// verdict: the simulator checks the fleet it sizes and tops it up (costsim.go), and an
// instance's capacity is the capacity judge's (planner/llmcap, InstanceRate). With B
// sequences decoding, each iteration takes dec(B) + c·B·(in + out/2) µs (the profile's decode
// curve and per-context-token term, LLM-engine spec); a sequence lives for its out decode
// iterations plus the prefills of the B sequences that turn over during its life, so the
// instance completes B requests per lifetime L(B) = out·t_iter(B) + B·prefill(in). B is
// bounded by the KV capacity (B·(in+out) tokens) and the engine's max_num_seqs (as the engine
// resolves it: llm.NewModel); the rate is B/L(B) at the best B with L(B) ≤ f·slo.
func Capacity(pr *formats.LLMProfile, in, out float64, slo time.Duration, f float64) (rate float64, batch int) {
	m := newLifeModel(pr)
	maxSeqs := m.maxBatch(in, out)
	budget := f * float64(slo.Microseconds())
	for b := 1; b <= maxSeqs; b++ {
		B := float64(b)
		life := m.lifeUs(B, in, out)
		if life > budget {
			break
		}
		if r := B / life * 1e6; r > rate {
			rate, batch = r, b
		}
	}
	return rate, batch
}

// lifeModel is the capacity rule's engine model of one instance of a profile (Capacity): the
// engine as it resolves the profile (llm.NewModel: its step-time curves, max_num_seqs and KV
// capacity, each from the engine block, else the iteration fields, else vLLM V1's default
// for the GPU), so the planner sizes the engine the simulator and the exports run.
type lifeModel struct{ eng *llm.Model }

func newLifeModel(pr *formats.LLMProfile) lifeModel { return lifeModel{eng: llm.NewModel(pr)} }

// maxBatch is the most sequences of in + out tokens the engine runs at once: its
// max_num_seqs, and as many as the KV cache holds whole.
func (m lifeModel) maxBatch(in, out float64) int {
	b := m.eng.MaxSeqs
	if m.eng.KVCap > 0 {
		b = min(b, int(float64(m.eng.KVCap)/m.eng.SeqKV(in+out)))
	}
	return b
}

// dec is a decode step's time over b sequences, before their context term.
func (m lifeModel) dec(b float64) float64 { return formats.PWLEval(m.eng.Decode, b) }

// prefillUs is the prefill time of an in-token prompt as the engine runs it (chunked at
// its token budget: llm.Model.PrefillTime).
func (m lifeModel) prefillUs(in float64) float64 { return m.eng.PrefillTime(in) }

// lifeUs is the lifetime of a request of in prompt and out output tokens in a batch of b:
// its out decode iterations plus the prefills of the b sequences turning over meanwhile.
func (m lifeModel) lifeUs(b, in, out float64) float64 {
	return out*(m.dec(b)+m.eng.CtxUs*b*(in+out/2)) + b*m.prefillUs(in)
}

// kind is an instance kind: a model on a GPU type with its tensor-parallel GPUs.
type kind struct {
	model, gpu string
	gpus       int
	prof       *formats.LLMProfile
}

// CostResult is a least-cost QLM fleet: instances per kind and what they cost.
type CostResult struct {
	Instances []qlmsec.QLMInstance
	Cost      float64
	Sizing    *fleet.Solution
	// Routes is the ILP's split of each bucket over GPU types (the runtime routes by it).
	Routes []qlmsec.QLMRoute
}

// SizeBuckets is Mélange's ILP over buckets × instance kinds (fleet.Size, shared): the
// least-cost instances of each (model, GPU type) whose load fractions serve every bucket,
// with each GPU type's instances × tensor-parallel GPUs within its available count. An
// instance kind is every LLM profile of a bucket's model on a GPU type of the cluster
// whose weights fit (the profile's gpu_count GPUs per instance).
func SizeBuckets(ctx context.Context, profs []*formats.Profile, c *formats.Cluster, buckets []Bucket, f float64, timeLimit time.Duration, gap float64) (*CostResult, error) {
	return sizeBuckets(ctx, profs, c, buckets, f, timeLimit, gap, nil)
}

// calibration scales the closed-form capacities of an instance kind's buckets (nil: as they
// are); see simCalibration.
type calibration func(k kind, buckets []Bucket, caps []float64) []float64

func sizeBuckets(ctx context.Context, profs []*formats.Profile, c *formats.Cluster, buckets []Bucket, f float64, timeLimit time.Duration, gap float64, cal calibration) (*CostResult, error) {
	prices, _, err := c.Prices()
	if err != nil {
		return nil, &planner.InputError{Problems: []string{err.Error()}}
	}
	var kinds []kind
	seen := map[string]bool{}
	for _, b := range buckets {
		for _, g := range c.GPUs {
			pr := profileFor(profs, b.Model, g.Type)
			key := b.Model + "\x00" + g.Type
			if pr == nil || seen[key] {
				continue
			}
			seen[key] = true
			kinds = append(kinds, kind{model: b.Model, gpu: g.Type, gpus: max(pr.GPUCount, 1), prof: pr})
		}
	}
	p := fleet.Problem{Shared: true, Limits: map[string]int{}}
	for _, k := range kinds {
		p.Types = append(p.Types, fleet.Type{Name: k.model + "@" + k.gpu, Price: prices[k.gpu] * float64(k.gpus), Available: -1, Group: k.gpu, Units: k.gpus})
		if a := c.AvailableOf(k.gpu); a < math.MaxInt {
			p.Limits[k.gpu] = a
		}
	}
	// caps[k][b]: what one instance of kind k serves of bucket b alone.
	caps := make([][]float64, len(kinds))
	for ki, k := range kinds {
		caps[ki] = make([]float64, len(buckets))
		for bi, b := range buckets {
			if k.model != b.Model {
				continue
			}
			ci, co := b.Input, b.Output
			if b.CapInput > 0 {
				ci, co = b.CapInput, b.CapOutput
			}
			caps[ki][bi], _ = Capacity(k.prof, ci, co, b.SLO, f)
		}
		if cal != nil {
			caps[ki] = cal(k, buckets, caps[ki])
		}
	}
	var probs []string
	for bi, b := range buckets {
		d := fleet.Demand{Name: fmt.Sprintf("%s[in=%.0f,out=%.0f]", b.Class, b.Input, b.Output), Rate: b.Rate, Cap: make([]float64, len(kinds))}
		ok := false
		for ki, k := range kinds {
			if k.model != b.Model {
				continue
			}
			d.Cap[ki] = caps[ki][bi]
			ok = ok || d.Cap[ki] > 0
		}
		if !ok && b.Rate > 0 {
			probs = append(probs, fmt.Sprintf("workload: llm_classes %s: slo %s: no GPU type of the cluster serves %s requests of %.0f input and %.0f output tokens within %.0f%% of it",
				b.Class, b.SLO, b.Model, b.Input, b.Output, 100*f))
		}
		p.Demands = append(p.Demands, d)
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("%w: %s", planner.ErrInfeasible, strings.Join(probs, "\n"))
	}
	sol, err := fleet.Size(ctx, p, timeLimit, gap)
	if err != nil {
		return nil, err
	}
	res := &CostResult{Cost: sol.Cost, Sizing: sol, Routes: routes(buckets, kinds, sol)}
	for ki, k := range kinds {
		for range sol.Count[ki] {
			res.Instances = append(res.Instances, qlmsec.QLMInstance{Name: "llm-" + strconv.Itoa(len(res.Instances)), GPU: k.gpu, GPUCount: k.gpus, Model: k.model})
		}
	}
	return res, nil
}

// routes records the ILP's share of every bucket per GPU type (summed over the kinds on a
// type, in the cluster's kind order): Mélange's plan assumes each size goes where the ILP put
// it, so the runtime must route by it (Mélange §5: unrouted, short and long requests mix on
// every type and the mixed fleet misses its SLOs).
func routes(buckets []Bucket, kinds []kind, sol *fleet.Solution) []qlmsec.QLMRoute {
	var out []qlmsec.QLMRoute
	for d, b := range buckets {
		if b.Rate <= 0 || d >= len(sol.Share) {
			continue
		}
		r := qlmsec.QLMRoute{Class: b.Class, InputTokens: b.Input, OutputTokens: b.Output}
		at := map[string]int{}
		for k, sh := range sol.Share[d] {
			if sh <= 1e-9 {
				continue
			}
			g := kinds[k].gpu
			if i, ok := at[g]; ok {
				r.GPUs[i].Share += sh
				continue
			}
			at[g] = len(r.GPUs)
			r.GPUs = append(r.GPUs, qlmsec.QLMShare{GPU: g, Share: sh})
		}
		for i := range r.GPUs {
			r.GPUs[i].Share = math.Round(r.GPUs[i].Share*1e6) / 1e6
		}
		if len(r.GPUs) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// SolveCost is `plan solve --objective cost` for llm_classes workloads: the classes' token
// mixes as buckets (ClassBuckets), Mélange's ILP for the least-cost instances per GPU type
// (SizeBuckets), one initial request group per class queued on its model's instances, and
// the cluster sized to the fleet (fleet.Finish).
func SolveCost(ctx context.Context, in planner.Inputs, o Options, timeLimit time.Duration, gap float64) (*formats.Plan, error) {
	if o.Sim == nil {
		return nil, ErrNoSimulator
	}
	w, c := in.Workload, in.Cluster
	if w == nil || len(llmspec.ClassesOf(w)) == 0 {
		return nil, &planner.InputError{Problems: []string{"workload: llm_classes: must list at least one class"}}
	}
	if c == nil {
		return nil, &planner.InputError{Problems: []string{"cluster: required for llm_classes workloads"}}
	}
	// The classes as planned: --slo replaces every class's slo (SolveCost records it).
	wp := *w
	wp.Sections = maps.Clone(wp.Sections) // a copy: its own sections
	llmspec.SetClasses(&wp, append([]llmspec.LLMClass(nil), llmspec.ClassesOf(w)...))
	if o.SLO > 0 {
		for i := range llmspec.ClassesOf(&wp) {
			llmspec.ClassesOf(&wp)[i].SLO = o.SLO
		}
	}
	var probs []string
	for i, cl := range llmspec.ClassesOf(&wp) {
		for _, g := range c.GPUs {
			if pr := profileFor(in.Profiles, cl.Model, g.Type); pr != nil {
				probs = append(probs, classChecks(in, i, cl, pr)...)
			}
		}
	}
	if len(probs) > 0 {
		return nil, &planner.InputError{Problems: probs}
	}
	buckets := ClassBuckets(&wp)
	res, err := sizeBuckets(ctx, in.Profiles, c, buckets, CostSLOFraction, timeLimit, gap, nil)
	if err != nil {
		return nil, err
	}
	added, err := topUp(o.Sim, in, c, &wp, res)
	if err != nil {
		return nil, err
	}
	q := &qlmsec.QLMPlan{ReplanMs: 500, Instances: res.Instances, Routes: res.Routes}
	assign := make([]string, len(q.Instances))
	load := map[string]float64{}
	for i, inst := range q.Instances {
		assign[i] = inst.Model
		load[inst.Model] = 0
	}
	initialGroups(q, in.Profiles, w, assign)
	emb := embedded(in.Profiles, c, w, load)
	digest, _ := planner.InputDigest(&emb)
	name := cmp.Or(w.Metadata.Name, "qlm")
	tool := planner.ToolVersion(o.ToolVersion)
	sz := res.Sizing
	plan := &formats.Plan{
		TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindPlan},
		Metadata: formats.Metadata{Name: name, Description: fmt.Sprintf("QLM least-cost fleet (Mélange-style buckets × GPU types): %d instances, %d request groups", len(q.Instances), len(q.Groups))},
		Provenance: formats.Provenance{Tool: "plan", ToolVersion: tool, Solver: "highs", SolverVersion: solver.Version(), InputDigest: digest, Inputs: in.Refs, Strategy: "cost",
			Options: planner.RecordOptions(Flags{Strategy: Strategies[0], Objective: planner.ObjectiveCost, SLO: o.SLO}), Status: sz.Status,
			Bound: formats.Proven(sz.Bound), Gap: formats.Proven(sz.Gap), SolveMs: float64(sz.Wall.Microseconds()) / 1000, Nodes: sz.Nodes, Embedded: &emb},
		Cluster: c,
	}
	qlmsec.SetPlan(plan, q)
	if err := fleet.Finish(plan, c); err != nil {
		return nil, &planner.InputError{Problems: []string{err.Error()}}
	}
	if added > 0 {
		// Instances the simulation asked for beyond the ILP's: its bound still holds, its
		// optimality does not (heuristic: the schema's status for a plan with no proof; the
		// gap below says how far it may be from the bound).
		plan.Provenance.Status = "heuristic"
		if cost := plan.Provenance.Objective; cost > 0 && sz.Bound <= cost {
			plan.Provenance.Gap = formats.Proven(math.Round((cost-sz.Bound)/cost*1e6) / 1e6)
		}
	}
	return plan, nil
}

// CheapestSingleType is the least cost of serving the buckets on one GPU type alone (the
// baseline Mélange compares with), and that type; +Inf when no single type serves them all.
func CheapestSingleType(ctx context.Context, profs []*formats.Profile, c *formats.Cluster, buckets []Bucket, f float64) (float64, string) {
	best, bestType := math.Inf(1), ""
	types := make([]string, 0, len(c.GPUs))
	for _, g := range c.GPUs {
		types = append(types, g.Type)
	}
	sort.Strings(types)
	for _, t := range types {
		one := *c
		pool, _ := c.Pool(t)
		one.GPUs = []formats.GPUPool{*pool}
		one.Servers = nil
		r, err := SizeBuckets(ctx, profs, &one, buckets, f, 0, 1e-6)
		if err == nil && r.Cost < best {
			best, bestType = r.Cost, t
		}
	}
	return best, bestType
}
