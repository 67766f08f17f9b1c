package pard

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/pardsec"
)

// PipelineSpec describes one multi-module application for NewPipelineDeployment.
type PipelineSpec struct {
	Name    string
	SLO     dataplane.Time
	RateRPS float64
	Modules []ModuleSpec
	// Params are policy parameters carried by the plan (App.Params).
	Params map[string]string
}

// ModuleSpec is one module: its DAG edges, planned batch, latency table and workers.
type ModuleSpec struct {
	Name  string
	After []string
	GPU   string
	Batch int
	// LatUs[b] is the profiled latency of a batch of b (LatUs[0] unused); at least up to Batch.
	LatUs []dataplane.Time
	// Workers serve from the start; MaxWorkers (≥ Workers) bounds the autoscaler.
	Workers, MaxWorkers int
	// Prob is the probability that a request visits the module (a conditional module of the
	// workload, Edge.Probability; 0 means 1).
	Prob float64
}

// DefaultHop is the fixed network hop between modules: the paper does not model the network
// between modules, so we charge a fixed 1–2 ms, as on one LAN.
const DefaultHop = 1500 * dataplane.Microsecond

// NewPipelineDeployment lays out pipeline applications: one stage per module (edges from
// After, so a module with two successors fans out and one with two predecessors merges), and
// MaxWorkers one-GPU workers per module, each on its own server. The hop between modules is a
// transfer of hop for a full batch (pro rata for partial ones) that never contends, so it
// stays fixed.
func NewPipelineDeployment(apps []PipelineSpec, hop dataplane.Time) (*dataplane.Deployment, error) {
	d := &dataplane.Deployment{Kind: Kind}
	for ai, a := range apps {
		aid := dataplane.AppID(ai)
		app := dataplane.App{Name: a.Name, SLO: a.SLO, Weight: 1, RateRPS: a.RateRPS, Params: a.Params}
		base := dataplane.StageID(len(d.Stages))
		index := map[string]dataplane.StageID{}
		for j, m := range a.Modules {
			if _, dup := index[m.Name]; dup {
				return nil, fmt.Errorf("pipeline %s: module %q listed twice", a.Name, m.Name)
			}
			index[m.Name] = base + dataplane.StageID(j)
		}
		for j, m := range a.Modules {
			if m.Batch < 1 {
				return nil, fmt.Errorf("pipeline %s: module %s: batch %d: must be >= 1", a.Name, m.Name, m.Batch)
			}
			if len(m.LatUs) <= m.Batch {
				return nil, fmt.Errorf("pipeline %s: module %s: latency table covers batches up to %d, the plan runs %d", a.Name, m.Name, len(m.LatUs)-1, m.Batch)
			}
			st := dataplane.Stage{Name: a.Name + "/" + m.Name, App: aid, Pipeline: -1, Index: j, Batch: m.Batch,
				LatUs: append([]dataplane.Time{0}, m.LatUs[1:]...), Active: m.Workers}
			if m.Prob > 0 && m.Prob < 1 {
				st.SkipProb = 1 - m.Prob
			}
			if hop > 0 {
				st.XferPerSampleUs = float64(hop) / float64(m.Batch)
			}
			nw := max(m.MaxWorkers, m.Workers, 1)
			for k := 0; k < nw; k++ {
				w := dataplane.WorkerID(len(d.Topo.Workers))
				sv := dataplane.ServerID(len(d.Topo.Servers))
				d.Topo.Servers = append(d.Topo.Servers, dataplane.Server{Name: fmt.Sprintf("%s/%s-%d", a.Name, m.Name, k), UpMbps: 1e6, DownMbps: 1e6})
				d.Topo.GPUs = append(d.Topo.GPUs, dataplane.GPU{Type: m.GPU, Server: sv})
				d.Topo.Workers = append(d.Topo.Workers, dataplane.Worker{Name: fmt.Sprintf("%s/%s#%d", a.Name, m.Name, k),
					GPU: len(d.Topo.GPUs) - 1, Server: sv, Type: m.GPU, VGPU: 1, Stage: base + dataplane.StageID(j)})
				st.Pool = append(st.Pool, w)
			}
			d.Stages = append(d.Stages, st)
		}
		var entries []dataplane.StageID
		for j, m := range a.Modules {
			if len(m.After) == 0 {
				entries = append(entries, base+dataplane.StageID(j))
			}
			for _, up := range m.After {
				u, ok := index[up]
				if !ok {
					return nil, fmt.Errorf("pipeline %s: module %s: after %q: no such module", a.Name, m.Name, up)
				}
				d.Stages[u].Next = append(d.Stages[u].Next, base+dataplane.StageID(j))
			}
		}
		for i := base; i < dataplane.StageID(len(d.Stages)); i++ {
			sort.Slice(d.Stages[i].Next, func(x, y int) bool { return d.Stages[i].Next[x] < d.Stages[i].Next[y] })
		}
		app.Entry = entries
		d.Apps = append(d.Apps, app)
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// FromPARDPlan builds the deployment a PARD plan describes. DAG edges come from the plan's
// embedded workload (pipelines by name; a plan without one is taken as a chain in module
// order), per-batch latencies from the embedded profiles (the plan's latency at the planned
// batch, scaled linearly, when the profile lacks the entry). Plan parameters become the
// application's policy parameters; `max_workers` (factor over the planned workers, default 4)
// bounds the autoscaler and `hop_ms` sets the inter-module hop (default 1.5).
func FromPARDPlan(p *formats.Plan) (*dataplane.Deployment, error) {
	if pardsec.PlanOf(p) == nil {
		return nil, formats.ErrorList{{Path: "pard", Rule: "the plan has no pard section"}}
	}
	var profiles []formats.Profile
	var wl *formats.Workload
	if p.Provenance.Embedded != nil {
		profiles = p.Provenance.Embedded.Profiles
		wl = p.Provenance.Embedded.Workload
	}
	params := map[string]string{}
	factor, hop := 4.0, DefaultHop
	for k, v := range pardsec.PlanOf(p).Params {
		switch k {
		case "max_workers":
			factor = v
		case "hop_ms":
			hop = dataplane.Time(v * float64(dataplane.Millisecond))
		default:
			params[k] = strconv.FormatFloat(v, 'g', -1, 64)
		}
	}
	if factor < 1 {
		return nil, formats.ErrorList{{Path: "pard.params.max_workers", Value: fmt.Sprint(factor), Rule: "must be >= 1"}}
	}
	var specs []PipelineSpec
	for ai, a := range pardsec.PlanOf(p).Apps {
		var edges map[string][]string
		probs := map[string]float64{}
		if wl != nil {
			for _, pl := range pardsec.PipelinesOf(wl) {
				if pl.Name == a.Name {
					edges = map[string][]string{}
					for _, m := range pl.Modules {
						for _, e := range m.After {
							edges[m.Name] = append(edges[m.Name], e.Module)
							if e.Probability > 0 && e.Probability < 1 {
								probs[m.Name] = e.Probability
							}
						}
					}
				}
			}
		}
		ps := PipelineSpec{Name: a.Name, SLO: dataplane.Time(time.Duration(a.SLO) / time.Microsecond), RateRPS: a.RateRPS, Params: params}
		for j, m := range a.Modules {
			mp := fmt.Sprintf("pard.apps[%d].modules[%d]", ai, j)
			if m.Batch < 1 || m.Workers < 1 {
				return nil, formats.ErrorList{{Path: mp, Value: fmt.Sprintf("batch %d, workers %d", m.Batch, m.Workers), Rule: "batch and workers must be >= 1"}}
			}
			ms := ModuleSpec{Name: m.Name, GPU: m.GPU, Batch: m.Batch, Workers: m.Workers,
				MaxWorkers: int(math.Ceil(factor * float64(m.Workers)))}
			ms.Prob = probs[m.Name]
			switch {
			case edges != nil:
				ms.After = edges[m.Name]
			case j > 0:
				ms.After = []string{a.Modules[j-1].Name}
			}
			ms.LatUs = make([]dataplane.Time, m.Batch+1)
			var prof *formats.ModelProfile
			for i := range profiles {
				if mm, ok := profiles[i].Model(m.Model); ok {
					prof = mm
					break
				}
			}
			for b := 1; b <= m.Batch; b++ {
				ms.LatUs[b] = dataplane.Time(math.Ceil(m.LatencyUs * float64(b) / float64(m.Batch)))
				if prof != nil {
					if e, ok := prof.Lookup(m.GPU, 1, b); ok {
						var s float64
						for _, x := range e.BlockUs {
							s += x
						}
						ms.LatUs[b] = dataplane.Time(math.Ceil(s))
					}
				}
			}
			if ms.LatUs[m.Batch] <= 0 {
				return nil, formats.ErrorList{{Path: mp + ".latency_us", Value: fmt.Sprint(m.LatencyUs), Rule: "must be > 0 (or the embedded profile must have the module's model)"}}
			}
			ps.Modules = append(ps.Modules, ms)
		}
		specs = append(specs, ps)
	}
	return NewPipelineDeployment(specs, hop)
}

// Kind is the plan section PARD deployments come from.
const Kind = "pard"
