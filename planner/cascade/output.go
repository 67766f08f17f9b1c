package cascade

import (
	"cmp"
	"context"
	"fmt"
	"math"

	dpc "github.com/plan-dev/plan/dataplane/cascade"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/planner"
)

// Online defaults a plan's gear section carries: QPS measured every 100 ms, a slower gear
// held back while QPS < α·backlog with α = 8, batches of at most MaxBatch (CascadeServe §5).
const (
	PollMs   = dpc.DefaultPollMs
	Alpha    = dpc.DefaultAlpha
	MaxBatch = dpc.DefaultMaxBatch
)

// Solve plans the workload's (single) cascades entry and returns the plan document.
func Solve(ctx context.Context, in planner.Inputs, o Options) (*formats.Plan, *Result, error) {
	if in.Workload == nil || len(cascadesec.CascadesOf(in.Workload)) == 0 {
		return nil, nil, &planner.InputError{Problems: []string{"workload: cascades: must have one entry"}}
	}
	if len(cascadesec.CascadesOf(in.Workload)) > 1 {
		return nil, nil, &planner.InputError{Problems: []string{fmt.Sprintf("workload: cascades: %d entries: a gear plan serves one task (one entry per workload)", len(cascadesec.CascadesOf(in.Workload)))}}
	}
	hw, probs := HardwareOf(in.Cluster)
	if probs != nil {
		return nil, nil, &planner.InputError{Problems: probs}
	}
	c := &cascadesec.CascadesOf(in.Workload)[0]
	t, probs := NewTask(c, "workload: cascades[0]", in.Profiles, hw.GPU, hw.Mem)
	if probs != nil {
		return nil, nil, &planner.InputError{Problems: probs}
	}
	res, err := Plan(ctx, t, c, hw, o)
	if err != nil {
		return nil, res, err
	}
	return res.Document(in, c), res, nil
}

// Document renders the result as a plan with embedded inputs.
func (r *Result) Document(in planner.Inputs, c *cascadesec.Cascade) *formats.Plan {
	t := r.Task
	cp := &cascadesec.CascadePlan{Task: c.Name, PollMs: PollMs, Alpha: Alpha, MaxBatch: MaxBatch}
	for _, rep := range r.Placement {
		cp.Placement = append(cp.Placement, cascadesec.Replica{Model: t.Models[rep.Model].Name, GPUs: append([]int(nil), rep.GPUs...)})
	}
	for _, g := range r.Gears {
		fg := cascadesec.Gear{QLo: g.QLo, QHi: g.QHi, Share: map[string][]float64{}, Trigger: map[string]int{},
			ExpAcc: round(g.C.Acc, 1e-6), ExpWork: round(g.C.Work, 1e-9), ExpPLat: round(g.Sim.PLat*1000, 1e-3)}
		if math.IsInf(fg.ExpPLat, 0) || math.IsNaN(fg.ExpPLat) {
			fg.ExpPLat = 0
		}
		for i, m := range g.C.Models {
			name := t.Models[m].Name
			fg.Models = append(fg.Models, name)
			if i > 0 {
				fg.Thr = append(fg.Thr, g.C.Thr[i-1])
			}
			sh := make([]float64, len(g.Share[i]))
			var sum float64
			for k, x := range g.Share[i] {
				sh[k] = round(x, 1e-9)
				sum += sh[k]
			}
			if len(sh) > 0 {
				sh[len(sh)-1] = round(sh[len(sh)-1]+1-sum, 1e-12)
			}
			fg.Share[name] = sh
			fg.Trigger[name] = 1
			if i == 0 {
				fg.Trigger[name] = max(g.B1, 1)
			}
		}
		cp.Gears = append(cp.Gears, fg)
	}
	// The last gear serves every QPS above qps_max (the cheapest gear; the paper does not
	// say); gears are [q_lo, q_hi).
	emb := formats.EmbeddedInputs{Cluster: in.Cluster, Workload: in.Workload}
	for _, p := range in.Profiles {
		emb.Profiles = append(emb.Profiles, *p)
	}
	digest, _ := planner.InputDigest(&emb)
	o := r.Opt
	rec := Flags{Strategy: o.Strategy, LatencySLO: formats.Duration(o.Latency), AccuracySLO: o.Accuracy, Percentile: o.Percentile,
		GPUs: r.HW.N, MinGPUs: o.MinGPUs, Ranges: o.Ranges, QPSMax: o.QPSMax, Levels: o.Search.Levels, MaxLen: o.Search.MaxLen,
		Monotone: o.Search.Monotone, Weights: "requests", Provision: o.Provision}
	if o.TimeWeights {
		rec.Weights = "time"
	}
	tool := planner.ToolVersion(o.ToolVersion)
	name := cmp.Or(in.Workload.Metadata.Name, c.Name)
	// The gear plan is CascadeServe's search (§4: cascades per QPS range, greedy replica
	// pruning, load balancing by LP): no solver proves a bound on its accuracy, so it is a
	// heuristic plan without bound or gap, never "optimal" with its own objective as bound.
	return cascadesec.SetPlan(&formats.Plan{
		TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindPlan},
		Metadata: formats.Metadata{Name: name, Description: fmt.Sprintf("CascadeServe gear plan (%s): %d gears on %d GPUs", o.Strategy, len(r.Gears), r.GPUsUsed)},
		Provenance: formats.Provenance{Tool: "plan", ToolVersion: tool, Solver: "highs", InputDigest: digest, Inputs: in.Refs,
			Strategy: o.Strategy, Options: planner.RecordOptions(rec), Status: "heuristic", Objective: round(r.Acc, 1e-6),
			SolveMs: float64(r.Elapsed.Microseconds()) / 1000, Nodes: int64(r.Iterations), Embedded: &emb},
		Cluster: in.Cluster,
	}, cp)
}

func round(x, q float64) float64 { return math.Round(x/q) * q }

// Miss says which SLO the plan misses ("" = it meets every one: no overloaded gear, the
// accuracy target, the latency bound at every gear). A plan solved for a fixed GPU count is
// the best the planner found there, met or not; plan solve refuses one that misses,
// benches keep it to chart the miss.
func (r *Result) Miss() string { return r.shortfall(r.Opt) }
