package toysys

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/fleet"
)

// Policy is the toy's runtime policy.
const Policy = "toy-fifo"

// New returns the toy system (system.Factory): what a test adds to the in-tree registry. It
// implements Planning, Deploying, Checking and Exporting, and no other extension point.
func New(system.Handle) system.Plugin { return toySystem{} }

type toySystem struct{}

func (toySystem) Name() string { return Name }

func (toySystem) Doc() string {
	return "toy: fixed-latency jobs on c workers, first come first served (test-only)"
}

func (toySystem) Sections() system.Sections {
	return system.Sections{Plan: planSection, Workload: []formats.Section{jobsSection}}
}

func (toySystem) DefaultWorkload() bool { return false }

func (toySystem) Strategies() []string { return []string{"mdc"} }

func (toySystem) NewPlanner() planner.Planner { return &Planner{o: Options{MaxUtil: 0.7}} }

func (toySystem) Render(p *formats.Plan) []planner.Table { return Render(p) }

func (toySystem) Deploy(p *formats.Plan) (*dataplane.Deployment, string, error) {
	d, err := Deploy(p)
	return d, Policy, err
}

func (toySystem) Policies() []dataplane.PolicySpec {
	return []dataplane.PolicySpec{{Name: Policy, Doc: "toy: FIFO on idle workers", Serves: []string{PlanSection}, New: newFIFO}}
}

func (toySystem) Checker() planner.Checker { return Checker{} }

func (toySystem) Exporters() []export.Exporter {
	return []export.Exporter{{Target: export.Triton, Export: Export}}
}

// Planner sizes the worker pool: the fewest workers whose utilisation stays under --max-util.
type Planner struct{ o Options }

// Options are the toy planner's typed options, recorded in a plan's provenance.
type Options struct {
	MaxUtil float64 `json:"max_util" flag:"toy-max-util" help:"highest worker utilisation the toy plans for"`
	// Objective is cost for a least-cost fleet (--objective cost, no flag of its own),
	// absent for the first GPU type's workers.
	Objective string `json:"objective,omitempty"`
}

// Options implements planner.Planner.
func (pl *Planner) Options() any { return &pl.o }

// Solve implements planner.Planner.
func (pl *Planner) Solve(_ context.Context, in planner.Inputs, s planner.Settings) (*formats.Plan, error) {
	return solve(in, s, pl.o.MaxUtil)
}

func solve(in planner.Inputs, s planner.Settings, maxUtil float64) (*formats.Plan, error) {
	j := jobsOf(in.Workload)
	if j == nil {
		return nil, &planner.InputError{Problems: []string{"workload: has no " + WorkloadSection + " section"}}
	}
	if in.Cluster == nil || len(in.Cluster.GPUs) == 0 {
		return nil, &planner.InputError{Problems: []string{"cluster: has no GPUs"}}
	}
	if !(maxUtil > 0 && maxUtil <= 1) {
		maxUtil = 0.7
	}
	slo := j.SLO
	if s.SLO > 0 {
		slo = formats.Duration(s.SLO)
	}
	if float64(time.Duration(slo).Microseconds()) < j.LatencyUs {
		return nil, fmt.Errorf("%w: %s: a job takes %gµs", planner.ErrInfeasible, slo, j.LatencyUs)
	}
	workers := int(math.Ceil(j.RateRPS * j.LatencyUs / 1e6 / maxUtil))
	if workers < 1 {
		workers = 1
	}
	gpu, cost := in.Cluster.GPUs[0].Type, s.Objective == planner.ObjectiveCost
	if cost {
		// A job takes as long on any GPU: the least cost is the cheapest type with the
		// workers available.
		gpu = ""
		best := math.Inf(1)
		for _, g := range in.Cluster.GPUs {
			price, _, _, err := in.Cluster.PlanningPrice(g.Type)
			if err != nil {
				return nil, &planner.InputError{Problems: []string{err.Error()}}
			}
			if c := price * float64(workers); workers <= in.Cluster.AvailableOf(g.Type) && c < best {
				gpu, best = g.Type, c
			}
		}
		if gpu == "" {
			return nil, fmt.Errorf("%w: %d workers needed, no GPU type has them available", planner.ErrInfeasible, workers)
		}
	} else {
		gpus := 0
		for _, g := range in.Cluster.GPUs {
			gpus += g.Count
		}
		if workers > gpus {
			return nil, fmt.Errorf("%w: %d workers needed, the cluster has %d GPUs", planner.ErrInfeasible, workers, gpus)
		}
	}
	emb := &formats.EmbeddedInputs{Cluster: in.Cluster, Workload: in.Workload}
	digest, err := planner.InputDigest(emb)
	if err != nil {
		return nil, err
	}
	p := &formats.Plan{
		TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindPlan},
		Metadata: formats.Metadata{Name: j.Name},
		Provenance: formats.Provenance{Tool: "plan", ToolVersion: s.ToolVersion, InputDigest: digest, Inputs: in.Refs,
			Strategy: "mdc", Options: planner.RecordOptions(Options{MaxUtil: maxUtil, Objective: s.Objective}),
			Status: "heuristic", Objective: float64(workers), Bound: formats.Proven(float64(workers)), Gap: formats.Proven(0), Embedded: emb},
		Cluster: in.Cluster,
		Sections: formats.SectionValues{PlanSection: {Section: planSection, Value: &Plan{
			App: j.Name, SLO: slo, GPU: gpu, Workers: workers, LatencyUs: j.LatencyUs, RateRPS: j.RateRPS}}},
	}
	if cost {
		// The fleet is what the plan section counts (planSec.GPUsUsed), priced by the
		// shared fleet code as every system's cost plan is; the choice above is exact.
		if err := fleet.Finish(p, in.Cluster); err != nil {
			return nil, err
		}
		p.Provenance.Bound, p.Provenance.Gap = formats.Proven(p.Provenance.Objective), formats.Proven(0)
	}
	return p, nil
}

// Render is what `plan solve` prints.
func Render(p *formats.Plan) []planner.Table {
	tp := planOf(p)
	return []planner.Table{{Header: []string{"APP", "GPU", "WORKERS", "RATE"},
		Rows: [][]string{{tp.App, tp.GPU, strconv.Itoa(tp.Workers), fmt.Sprint(tp.RateRPS)}}}}
}

// Checker checks toy plans for `plan check`.
type Checker struct{}

// Verify re-derives the plan's one constraint: utilisation below 1.
func (Checker) Verify(p *formats.Plan) ([]string, string) {
	tp := planOf(p)
	var v []string
	if u := tp.RateRPS * tp.LatencyUs / 1e6 / float64(tp.Workers); u >= 1 {
		v = append(v, fmt.Sprintf("utilisation %.3f >= 1", u))
	}
	return v, fmt.Sprintf("toy plan, %d workers: utilisation", tp.Workers)
}

// Compare compares the worker counts (fewer is better).
func (Checker) Compare(got, ref *formats.Plan, tol float64) []planner.Check {
	g, r := planOf(got), planOf(ref)
	if r == nil {
		return []planner.Check{{Line: "reference is not a toy plan"}}
	}
	return []planner.Check{planner.AtMost("workers", "", float64(g.Workers), float64(r.Workers), tol, 0, fmt.Sprintf("workers %d vs %d", g.Workers, r.Workers))}
}

// Resolve re-plans from the embedded inputs.
func (Checker) Resolve(_ context.Context, p *formats.Plan, _ time.Duration) (*formats.Plan, error) {
	e := p.Provenance.Embedded
	if e == nil || e.Cluster == nil || e.Workload == nil {
		return nil, fmt.Errorf("provenance.embedded holds no inputs: cannot re-solve")
	}
	o := Options{MaxUtil: 0.7}
	if err := planner.ReadOptions(p.Provenance.Options, &o); err != nil {
		return nil, err
	}
	return solve(planner.Inputs{Cluster: e.Cluster, Workload: e.Workload, Refs: p.Provenance.Inputs},
		planner.Settings{ToolVersion: p.Provenance.ToolVersion, Objective: o.Objective}, o.MaxUtil)
}

// Export writes the Triton model configuration of the pool: one instance per worker, each on
// its own GPU (without gpus Triton would start every instance on every GPU).
func Export(p *formats.Plan, o export.Options) (export.Files, error) {
	tp := planOf(p)
	if tp == nil {
		return nil, fmt.Errorf("the plan has no %s section", PlanSection)
	}
	o = o.Defaults()
	gpus := make([]int, tp.Workers)
	for i := range gpus {
		gpus[i] = i
	}
	cfg := fmt.Sprintf("name: %q\nmax_batch_size: 1\ninstance_group [{ count: 1 kind: KIND_GPU gpus: [%s] }]\n", o.Name, export.JoinInts(gpus))
	return export.Files{o.Name + "/config.pbtxt": []byte(cfg)}, nil
}

// Deploy builds the deployment: one app, one stage, one worker per planned GPU.
func Deploy(p *formats.Plan) (*dataplane.Deployment, error) {
	tp := planOf(p)
	if tp == nil {
		return nil, fmt.Errorf("the plan has no %s section", PlanSection)
	}
	d := &dataplane.Deployment{Kind: PlanSection,
		Apps: []dataplane.App{{Name: tp.App, SLO: dataplane.Time(time.Duration(tp.SLO).Microseconds()), Weight: 1,
			RateRPS: tp.RateRPS, Entry: []dataplane.StageID{0}}},
		Topo: dataplane.Topology{Servers: []dataplane.Server{{Name: "s0", UpMbps: 1e4, DownMbps: 1e4}}}}
	lat := dataplane.Time(math.Round(tp.LatencyUs))
	st := dataplane.Stage{Name: tp.App, Pipeline: -1, Batch: 1, LatUs: []dataplane.Time{0, lat}}
	for w := 0; w < tp.Workers; w++ {
		d.Topo.GPUs = append(d.Topo.GPUs, dataplane.GPU{Type: tp.GPU})
		d.Topo.Workers = append(d.Topo.Workers, dataplane.Worker{Name: fmt.Sprintf("%s-%d", tp.GPU, w), GPU: w, Type: tp.GPU, VGPU: 1})
		st.Pool = append(st.Pool, dataplane.WorkerID(w))
	}
	d.Stages = []dataplane.Stage{st}
	return d, nil
}
