// Package cascade exports CascadeServe gear plans to Triton, KServe and Ray Serve (in the
// manner of export/ppipe and export/pard). A gear plan is a fixed replica placement plus one
// gear per QPS range — a cascade (models in order), certainty thresholds, per-replica shares
// and minimum-queue triggers (CascadeServe paper §4–§5). The targets can express the placement and the per-model batching; none can express
// gear switching (choosing the cascade by the QPS measured every 100 ms, paper §5), so:
//
//   - Triton: one model per cascade model, one instance_group per replica pinned to the
//     replica's GPUs, dynamic batching with the gears' triggers as preferred batch sizes; plus
//     a BLS coordinator model (backend "python", named after the plan) whose parameters hold
//     the whole gear table (cascade.gears): the user's model.py measures QPS, looks the gear
//     up and forwards a request down the cascade while its certainty is below the threshold.
//     Triton balances a model's instances itself: the replica shares are recorded, not
//     enforced.
//   - KServe: one InferenceService per model (replicas, batcher, GPU type), and one
//     InferenceGraph per gear: a Sequence whose step k+1 runs only when step k's certainty is
//     below threshold k (a GJSON condition on the v2 response). Which graph receives traffic
//     at a given QPS is up to an external controller; each graph records its QPS range.
//   - Ray Serve: one deployment per model (num_replicas, num_gpus per replica) and a router
//     deployment whose user_config is the gear table; Ray Serve's router picks replicas
//     itself, so the shares are again advice to the router's code.
//
// Every file records what ReadBack needs to recover the gear plan (placement in plan order,
// every gear's cascade, thresholds, shares and triggers, the switching constants); the
// round-trip tests compare it with the plan.
package cascade

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	dpc "github.com/plan-dev/plan/dataplane/cascade"
	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/export/targets"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
)

// Parameter keys (Triton parameters, KServe annotations under plan.dev/, Ray user_config).
const (
	// ParamReplicas lists a model's replicas: "<placement index>:<gpu>,<gpu>;…".
	ParamReplicas = "cascade.replicas"
	// ParamTable is the gear table (JSON of Table) on the coordinator / router.
	ParamTable = "cascade.gears"
	// ParamGear is one gear (JSON of cascadesec.Gear) on a KServe gear graph, ParamGearIndex
	// its position in the table.
	ParamGear      = "cascade.gear"
	ParamGearIndex = "cascade.gear_index"
	// ParamSwitching holds the gear table without its gears on KServe graphs.
	ParamSwitching = "cascade.switching"
	// ParamCertainty names the output tensor carrying a stage's certainty (max softmax
	// probability; plan serve answers it as "certainty").
	ParamCertainty = "cascade.certainty_output"
)

// CertaintyOutput is the response tensor a stage's certainty is read from.
const CertaintyOutput = "certainty"

// Unsupported is what no target can express, named in every export.
const Unsupported = "gear switching (choosing the gear by the QPS measured every poll_ms, with the alpha backlog rule) " +
	"and deficit routing over the replica shares"

// Table is the gear table as exported: the plan's cascade section without its placement.
type Table struct {
	Task     string            `json:"task"`
	PollMs   float64           `json:"poll_ms,omitempty"`
	Alpha    float64           `json:"alpha,omitempty"`
	MaxBatch int               `json:"max_batch,omitempty"`
	Gears    []cascadesec.Gear `json:"gears,omitempty"`
}

// Exporters returns CascadeServe's exporters for every target.
func Exporters() []export.Exporter {
	return export.Layout[*layout]{Build: build, Own: map[string]func(*layout) (export.Files, error){
		export.Triton: tritonFiles, export.KServe: kserveFiles, export.Ray: rayFiles}}.Exporters(targets.Registry())
}

// layout is a gear plan prepared for rendering.
type layout struct {
	o      export.Options
	cp     *cascadesec.CascadePlan
	gpu    string
	sloUs  int64
	models []stage
}

// stage is one cascade model: its exported unit and replicas.
type stage struct {
	model    string
	unit     string
	replicas []int // indices into cp.Placement, in plan order
	gpus     int   // GPUs per replica (the most any replica spans)
	triggers []int // distinct triggers over the gears, ascending
	// queueUs is one batch duration at the largest trigger: how long a batch may wait to
	// fill (the paper's min-queue trigger, §4.5, holds a batch until the queue reaches it).
	queueUs int64
}

func (l *layout) placement(s stage) export.Placement {
	return export.Placement{Key: l.cp.Task + "/" + s.model, GPU: l.gpu, VGPU: 1, Count: len(s.replicas), Batch: l.maxBatch()}
}

func (l *layout) maxBatch() int {
	if l.cp.MaxBatch > 0 {
		return l.cp.MaxBatch
	}
	return dpc.DefaultMaxBatch
}

func (l *layout) table() Table {
	return Table{Task: l.cp.Task, PollMs: l.cp.PollMs, Alpha: l.cp.Alpha, MaxBatch: l.cp.MaxBatch, Gears: l.cp.Gears}
}

// replicasParam renders ParamReplicas.
func (l *layout) replicasParam(s stage) string {
	parts := make([]string, len(s.replicas))
	for k, i := range s.replicas {
		g := make([]string, len(l.cp.Placement[i].GPUs))
		for j, x := range l.cp.Placement[i].GPUs {
			g[j] = strconv.Itoa(x)
		}
		parts[k] = strconv.Itoa(i) + ":" + strings.Join(g, ",")
	}
	return strings.Join(parts, ";")
}

// params are a stage's recorded parameters (plan.* placement keys and its replicas).
func (l *layout) params(s stage) map[string]string {
	m := l.placement(s).Params()
	m[ParamReplicas] = l.replicasParam(s)
	m[ParamCertainty] = CertaintyOutput
	return m
}

// build checks the plan and lays it out. The GPU type and the latency SLO come from the
// plan's embedded cluster and workload (a gear plan always embeds them: dataplane/cascade
// replays them).
func build(p *formats.Plan, o export.Options) (*layout, error) {
	cp := cascadesec.PlanOf(p)
	if cp == nil {
		return nil, fmt.Errorf("the plan has no cascade section")
	}
	if o.Model != nil {
		return nil, fmt.Errorf("--model: a cascade serves whole models; there is no partition to cut")
	}
	e := p.Provenance.Embedded
	if e == nil || e.Cluster == nil {
		return nil, fmt.Errorf("provenance.embedded.cluster: missing: the GPU type of a cascade plan comes from its embedded cluster")
	}
	hw, probs := dpc.HardwareOf(e.Cluster)
	if probs != nil {
		return nil, fmt.Errorf("provenance.embedded.%s", probs[0])
	}
	l := &layout{o: o, cp: cp, gpu: hw.GPU}
	if e.Workload != nil {
		for _, c := range cascadesec.CascadesOf(e.Workload) {
			if c.Name == cp.Task && c.LatencySLO != nil {
				l.sloUs = int64(time.Duration(c.LatencySLO.Latency) / time.Microsecond)
			}
		}
	}
	at := map[string]int{}
	for i, r := range cp.Placement {
		if len(r.GPUs) == 0 {
			return nil, fmt.Errorf("cascade.placement[%d].gpus: empty: a replica needs a GPU", i)
		}
		k, ok := at[r.Model]
		if !ok {
			k = len(l.models)
			at[r.Model] = k
			l.models = append(l.models, stage{model: r.Model, unit: export.DNSLabel(o.Name + "-" + r.Model)})
		}
		l.models[k].replicas = append(l.models[k].replicas, i)
		l.models[k].gpus = max(l.models[k].gpus, len(r.GPUs))
	}
	for gi, g := range cp.Gears {
		if len(g.Thr) != max(len(g.Models)-1, 0) {
			return nil, fmt.Errorf("cascade.gears[%d].thr: %d thresholds for %d models", gi, len(g.Thr), len(g.Models))
		}
		for _, m := range g.Models {
			k, ok := at[m]
			if !ok {
				return nil, fmt.Errorf("cascade.gears[%d].models: %q: model has no replica in cascade.placement", gi, m)
			}
			if t := g.Trigger[m]; t > 0 && !slices.Contains(l.models[k].triggers, t) {
				l.models[k].triggers = append(l.models[k].triggers, t)
			}
		}
	}
	for k := range l.models {
		s := &l.models[k]
		slices.Sort(s.triggers)
		if len(s.triggers) == 0 {
			s.triggers = []int{1}
		}
		s.triggers = slices.DeleteFunc(s.triggers, func(t int) bool { return t > l.maxBatch() })
		b := 1
		if n := len(s.triggers); n > 0 {
			b = s.triggers[n-1]
		}
		s.queueUs = int64(math.Ceil(latencyUs(e.Profiles, s.model, hw.GPU, b)))
	}
	return l, nil
}

// latencyUs is model's profiled latency on gpu at batch b, or at the largest profiled
// batch below it (0 when not profiled).
func latencyUs(profs []formats.Profile, model, gpu string, b int) float64 {
	best, lat := 0, 0.0
	for i := range profs {
		if m, ok := profs[i].Model(model); ok {
			for j := range m.Latency {
				e := &m.Latency[j]
				if e.GPU == gpu && e.VGPU <= 1 && e.Batch <= b && e.Batch > best {
					best, lat = e.Batch, e.WholeUs()
				}
			}
		}
	}
	return lat
}

// describe summarizes gear gi for comments.
func describe(g cascadesec.Gear) string {
	var b strings.Builder
	fmt.Fprintf(&b, "QPS [%g, %g): ", g.QLo, g.QHi)
	for j, m := range g.Models {
		if j > 0 {
			fmt.Fprintf(&b, " -(certainty < %g)-> ", g.Thr[j-1])
		}
		b.WriteString(m)
	}
	return b.String()
}
