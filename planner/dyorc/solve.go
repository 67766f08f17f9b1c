// Package dyorc plans DyOrc deployments (`plan solve` for a workload's workflows section):
// the initial service placement and replica counts the online scheduler starts from (DyOrc
// schedules online, §5; the plan only seeds it with a warm placement, max_batch
// and the expected load). The placement is an MILP solved through package solver; its gap is
// recorded in the plan's provenance. Verify, Compare and Resolve implement `plan check`.
package dyorc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	dp "github.com/plan-dev/plan/dataplane/dyorc"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/solver"
)

// DefaultRate is the rate assumed for an app without rate_rps [ours].
const DefaultRate = 1.0

// Options tune a solve.
type Options struct {
	TimeLimit     time.Duration
	Gap           float64
	Deterministic bool
	// Policy is the runtime policy the plan names ("" = dyorc).
	Policy string
	// ToolVersion is recorded in the plan's provenance ("" = "dev").
	ToolVersion string
	// Progress, if set, receives the placement MILP's progress (from the solving goroutine):
	// `plan solve` prints incumbent and bound lines on a terminal as it does for PPipe.
	Progress func(planner.Progress)
	// Sim is the simulator SolveMinGPUs and SolveCost check a plan's rates with (nil: the
	// fitted formula alone, estimate).
	Sim Simulator
}

// Flags are DyOrc's `plan solve` options as a plan records them in provenance.options, read
// back by `plan check --resolve`. The placement MILP minimises the busiest GPU's load
// (max_g Σ_s load_s·w_sg, plus 1e-4 per replica) within each GPU's memory.
type Flags struct {
	// Gap is the MILP's relative gap (plan solve --gap, default 0.001).
	Gap float64 `json:"gap"`
	// Policy is the runtime policy the plan names as its default (default dyorc).
	Policy string `json:"policy" flag:"runtime-policy" help:"the runtime policy the plan names as its default (plan simulate/serve --policy overrides it)"`
	// Objective is cost for a least-cost fleet (cost.go), absent otherwise.
	Objective string `json:"objective,omitempty"`
	// MinGPUs: the fewest GPUs that serve the apps' rates (SolveMinGPUs), not every GPU.
	MinGPUs bool `json:"min_gpus,omitempty" flag:"min-gpus" help:"place the services on the fewest GPUs that serve the apps' rates within their SLOs (default: spread over every GPU of the cluster)"`
	// TimeLimit is the solve's time limit when the solve stopped at it (limitIfHit):
	// `plan check --resolve` re-solves under it, as the plan was (absent: none needed).
	TimeLimit formats.Duration `json:"time_limit,omitempty"`
}

// DefaultFlags are `plan solve`'s defaults for DyOrc.
func DefaultFlags() Flags { return Flags{Gap: planner.DefaultGap, Policy: "dyorc"} }

// Load is the expected GPU work of each service: busy seconds per second at its efficient
// (max) batch, from the apps' rates and expected calls.
func Load(w *dp.Workflow) []float64 {
	out := make([]float64, len(w.Services))
	for i := range w.Apps {
		a := &w.Apps[i]
		rate := a.RateRPS
		if rate <= 0 {
			rate = DefaultRate
		}
		for s, x := range a.ExpectedItems(len(w.Services)) {
			sv := &w.Services[s]
			out[s] += rate * x * sv.Lat(sv.MaxBatch) / float64(sv.MaxBatch) / 1e6
		}
	}
	return out
}

// compileInputs is the input check Solve and SolveCost share: the workload must have a
// workflows section and a cluster must be given; the workflows come back compiled for
// DyOrc's data plane. Every problem is an *planner.InputError (exit 2).
func compileInputs(wl *formats.Workload, cl *formats.Cluster) (*dp.Workflow, error) {
	if wl == nil || dyorcsec.WorkflowsOf(wl) == nil {
		return nil, &planner.InputError{Problems: []string{"workload: no workflows section"}}
	}
	if cl == nil {
		return nil, &planner.InputError{Problems: []string{"cluster: a dyorc plan needs a cluster (--cluster)"}}
	}
	w, err := dp.Compile(dyorcsec.WorkflowsOf(wl))
	if err != nil {
		return nil, &planner.InputError{Problems: []string{"workload: " + err.Error()}}
	}
	return w, nil
}

// Solve places services: binary y[s][g] (service s resident on GPU g), work shares
// w[s][g] ≤ y[s][g] with Σ_g w[s][g] = 1, per-GPU memory Σ_s mem_s·y[s][g] ≤ M, every service
// on at least one GPU; minimize the busiest GPU's expected load z (+10⁻⁴ per replica, so
// services are replicated only where that spreads load). Replicas = Σ_g y[s][g].
func Solve(ctx context.Context, wl *formats.Workload, cl *formats.Cluster, refs []formats.InputRef, o Options) (*formats.Plan, error) {
	w, err := compileInputs(wl, cl)
	if err != nil {
		return nil, err
	}
	c, err := dp.ClusterOf(cl)
	if err != nil {
		return nil, &planner.InputError{Problems: []string{"cluster: " + err.Error()}}
	}
	var probs []string
	for _, s := range w.Services {
		if c.MemBytes > 0 && s.Bytes > c.MemBytes {
			probs = append(probs, fmt.Sprintf("workload: workflows.services.%s.weights_gb: %g: the service needs %.1f GB, a GPU has %.1f GB", s.Name, s.WeightGB, float64(s.Bytes)/1e9, float64(c.MemBytes)/1e9))
		}
	}
	if len(probs) > 0 {
		return nil, &planner.InputError{Problems: probs}
	}
	load := Load(w)
	S, G := len(w.Services), c.GPUs
	m := solver.NewModel("dyorc-placement", solver.Minimize)
	z := m.AddContinuous("z", 0, math.Inf(1), 1)
	y := make([][]solver.Var, S)
	x := make([][]solver.Var, S)
	for s := 0; s < S; s++ {
		y[s], x[s] = make([]solver.Var, G), make([]solver.Var, G)
		var cover, share []solver.Term
		for g := 0; g < G; g++ {
			y[s][g] = m.AddBinary(fmt.Sprintf("y_%s_%d", w.Services[s].Name, g), 1e-4)
			x[s][g] = m.AddContinuous(fmt.Sprintf("w_%s_%d", w.Services[s].Name, g), 0, 1, 0)
			m.AddRow(fmt.Sprintf("share_le_y_%s_%d", w.Services[s].Name, g), math.Inf(-1), 0, solver.Term{Var: x[s][g], Coef: 1}, solver.Term{Var: y[s][g], Coef: -1})
			cover = append(cover, solver.Term{Var: y[s][g], Coef: 1})
			share = append(share, solver.Term{Var: x[s][g], Coef: 1})
		}
		m.AddRow("placed_"+w.Services[s].Name, 1, math.Inf(1), cover...)
		m.AddRow("shares_"+w.Services[s].Name, 1, 1, share...)
	}
	for g := 0; g < G; g++ {
		busy := []solver.Term{{Var: z, Coef: -1}}
		var mem []solver.Term
		for s := 0; s < S; s++ {
			busy = append(busy, solver.Term{Var: x[s][g], Coef: load[s]})
			mem = append(mem, solver.Term{Var: y[s][g], Coef: float64(w.Services[s].Bytes) / 1e9})
		}
		m.AddRow(fmt.Sprintf("busy_%d", g), math.Inf(-1), 0, busy...)
		if c.MemBytes > 0 {
			m.AddRow(fmt.Sprintf("mem_%d", g), math.Inf(-1), float64(c.MemBytes)/1e9, mem...)
		}
	}
	gap := o.Gap
	if gap <= 0 {
		gap = 0.01
	}
	so := solver.Options{TimeLimit: o.TimeLimit, RelGap: gap, Deterministic: o.Deterministic}
	if f := o.Progress; f != nil {
		began := time.Now()
		so.Progress = func(pr solver.Progress) {
			f(planner.Progress{Phase: "placement MILP", Elapsed: time.Since(began), Nodes: pr.Nodes, Incumbent: pr.Incumbent,
				Bound: pr.Bound, Gap: pr.Gap, HasIncumbent: pr.HasIncumbent})
		}
	}
	res, err := solver.Solve(ctx, m, so)
	if err != nil {
		return nil, err
	}
	if !res.HasSolution {
		if errors.Is(res.Err(), solver.ErrModelInfeasible) {
			return nil, fmt.Errorf("%w: the workflow services do not fit in the cluster's %d GPUs of %.1f GB", planner.ErrInfeasible, G, float64(c.MemBytes)/1e9)
		}
		return nil, fmt.Errorf("%w: %v", planner.ErrNoSolution, res.Err())
	}
	plan := &dyorcsec.DyOrcPlan{Policy: o.Policy, Params: map[string]float64{"expected_max_gpu_load": round3(res.Value(z))}}
	for g := 0; g < G; g++ {
		gs := dyorcsec.GPUServices{GPU: g}
		for s := 0; s < S; s++ {
			if res.Value(y[s][g]) > 0.5 {
				gs.Services = append(gs.Services, w.Services[s].Name)
			}
		}
		plan.Placement = append(plan.Placement, gs)
	}
	for s := 0; s < S; s++ {
		r := 0
		for g := 0; g < G; g++ {
			if res.Value(y[s][g]) > 0.5 {
				r++
			}
		}
		plan.Deployments = append(plan.Deployments, dyorcsec.ServiceDeployment{Service: w.Services[s].Name, GPU: c.Type, Replicas: r, MaxBatch: w.Services[s].MaxBatch})
	}
	sort.Slice(plan.Deployments, func(i, j int) bool { return plan.Deployments[i].Service < plan.Deployments[j].Service })
	emb := formats.EmbeddedInputs{Cluster: cl, Workload: wl}
	digest, err := planner.InputDigest(&emb)
	if err != nil {
		return nil, err
	}
	name := cmp.Or(wl.Metadata.Name, "dyorc")
	opts := planner.RecordOptions(Flags{Gap: gap, Policy: o.Policy, TimeLimit: limitIfHit(res.Status.String(), o.TimeLimit)})
	tool := planner.ToolVersion(o.ToolVersion)
	out := &formats.Plan{
		TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindPlan},
		Metadata: formats.Metadata{Name: name, Description: "DyOrc initial service placement (warm start of the speculative scheduler)"},
		Provenance: formats.Provenance{Tool: "plan", ToolVersion: tool, Solver: "highs", SolverVersion: solver.Version(),
			InputDigest: digest, Inputs: refs, Strategy: "dyorc", Options: opts, Status: res.Status.String(),
			Objective: round3(res.Objective), Bound: formats.Proven(round3(res.Bound)), Gap: formats.Proven(res.Gap),
			SolveMs: float64(res.Wall.Microseconds()) / 1000, Nodes: res.Nodes, Embedded: &emb},
		Cluster: cl,
	}
	dyorcsec.SetPlan(out, plan)
	if o.Deterministic {
		out.Provenance.SolveMs = 0
	}
	return out, nil
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// limitIfHit is the time limit a plan records for `plan check --resolve`: the solve's limit
// when the solve stopped at it (status time-limit), so the re-solve stops there too instead
// of running on to the gap; none when it ended within it, as such a solve re-solves to the
// same answer without one.
func limitIfHit(status string, limit time.Duration) formats.Duration {
	if status != "time-limit" {
		return 0
	}
	return formats.Duration(limit)
}
