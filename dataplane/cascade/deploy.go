// Package cascade is CascadeServe's data plane (CascadeServe §5) and its Cocktail+
// baseline (cocktail.go, §6.2): the gear-switching policy — QPS
// measured every 100 ms through the engine's Ticker, gear lookup, the α = 8 backlog rule
// —, per-replica stage queues with minimum-queue triggers, certainty-threshold forwarding
// (a request answers at the first stage confident enough: Complete), deficit routing over
// the gear's replica shares, one batch at a time per GPU, and model loading when a gear
// needs a model not yet resident; and its deployer, which builds a Deployment from a
// plan's cascade section with an Emulate that replays per-sample certainties of the
// validation records (Attrs.Sample, else the request ID, modulo the sample count).
package cascade

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
)

// Kind is the plan section cascade deployments come from.
const Kind = "cascade"

// ParamPlan is the App.Params key carrying the gear table to the policy (JSON of
// gearTable): the deployer writes it, the policy reads it at Attach.
const ParamPlan = "cascade.gears"

// gearTable is the policy's view of the plan: replicas are workers (same index), gears
// name stages.
type gearTable struct {
	PollMs   float64       `json:"poll_ms"`
	Alpha    float64       `json:"alpha"`
	MaxBatch int           `json:"max_batch"`
	Replicas []replicaSpec `json:"replicas"`
	Gears    []gearSpec    `json:"gears"`
}

type replicaSpec struct {
	Stage int   `json:"stage"`
	GPUs  []int `json:"gpus"`
	Bytes int64 `json:"bytes"`
}

type gearSpec struct {
	QHi    float64   `json:"q_hi"`
	Stages []int     `json:"stages"`
	Thr    []float64 `json:"thr"`
	// Share[i][k]: share of stage i's k-th replica (placement order among its replicas).
	Share [][]float64 `json:"share"`
	B1    int         `json:"b1"`
}

// FromPlan builds the deployment of p's cascade section, replaying the embedded
// workload's validation records.
func FromPlan(p *formats.Plan) (*dataplane.Deployment, error) {
	if cascadesec.PlanOf(p) == nil {
		return nil, formats.ErrorList{{Path: "cascade", Rule: "the plan has no cascade section"}}
	}
	e := p.Provenance.Embedded
	if e == nil || e.Workload == nil || e.Cluster == nil {
		return nil, formats.ErrorList{{Path: "provenance.embedded", Rule: "a cascade plan needs its embedded workload, profiles and cluster (validation records and latencies)"}}
	}
	hw, probs := HardwareOf(e.Cluster)
	if probs != nil {
		return nil, formats.ErrorList{{Path: "provenance.embedded.cluster", Rule: probs[0]}}
	}
	var c *cascadesec.Cascade
	for i := range cascadesec.CascadesOf(e.Workload) {
		if cascadesec.CascadesOf(e.Workload)[i].Name == cascadesec.PlanOf(p).Task {
			c = &cascadesec.CascadesOf(e.Workload)[i]
		}
	}
	if c == nil {
		return nil, formats.ErrorList{{Path: "cascade.task", Value: strconv.Quote(cascadesec.PlanOf(p).Task), Rule: "not a cascade of the embedded workload"}}
	}
	profs := make([]*formats.Profile, len(e.Profiles))
	for i := range e.Profiles {
		profs[i] = &e.Profiles[i]
	}
	// Serving replays the held-out test records when the workload has them (CascadeServe
	// §6.1: planning and serving data kept apart), else the validation records.
	on, src := "validation records", *c
	if len(c.Test) > 0 {
		on, src.Validation, src.Candidates = "test records", c.Test, nil
	}
	t, probs := NewTask(&src, "provenance.embedded.workload.cascades", profs, hw.GPU, hw.Mem)
	if probs != nil {
		return nil, formats.ErrorList{{Path: "provenance.embedded", Rule: probs[0]}}
	}
	slo := 10 * time.Second // [ours] an accuracy-SLO plan has no latency bound: 10 s marks "late"
	if c.LatencySLO != nil {
		slo = time.Duration(c.LatencySLO.Latency)
	}
	d, err := NewDeployment(cascadesec.PlanOf(p), t, hw, slo, c.QPSMax)
	if err != nil {
		return nil, err
	}
	// The SLO is p-th percentile latency (CascadeServe §6.1: p95): reports give it. An
	// accuracy-SLO plan is reported at p95 too, the paper's latency metric for every run
	// (§6.1), against the 10 s stand-in bound above.
	d.Apps[0].SLOPercentile = 0.95
	if c.LatencySLO != nil {
		d.Apps[0].SLOPercentile = c.LatencySLO.Percentile
	}
	// The accuracy target: the workload's accuracy SLO (cascadesys overrides it with the
	// one the plan was solved for, --accuracy, which the plan records).
	d.AccuracyTarget = c.AccuracySLO
	if len(src.Validation) > 0 {
		// The emulator's label is 1 where the answering model was right on the sample.
		// [ours] A candidates table without test records is not judged: its realization
		// only reproduces the listed forwarding fractions, not which answers are right.
		d.Judge, d.JudgeOn = func(r *dataplane.Request) bool { return r.Result.Label == 1 }, on
	}
	return d, nil
}

// NewDeployment lays out gear plan cp for task t (whose validation records the emulator
// replays: pass a held-out test task to keep planning and serving data apart, like the paper's
// held-out test set, §6.1). One Manual stage per model (the policy forwards or completes at
// each batch's end), one worker per replica on its first GPU.
func NewDeployment(cp *cascadesec.CascadePlan, t *Task, hw Hardware, slo time.Duration, qpsMax float64) (*dataplane.Deployment, error) {
	d := &dataplane.Deployment{Kind: Kind}
	idx := map[string]int{}
	for i, m := range t.Models {
		idx[m.Name] = i
	}
	maxB := cp.MaxBatch
	if maxB <= 0 {
		maxB = DefaultMaxBatch
	}
	stageOf := map[string]dataplane.StageID{}
	stageModel := []int{}
	addStage := func(name string) (dataplane.StageID, error) {
		if s, ok := stageOf[name]; ok {
			return s, nil
		}
		m, ok := idx[name]
		if !ok {
			return 0, fmt.Errorf("model %q is not a model of cascade %s", name, t.Name)
		}
		mi := &t.Models[m]
		lat := make([]dataplane.Time, maxB+1)
		for b := 1; b <= maxB; b++ {
			lat[b] = dataplane.Time(math.Ceil(mi.Lat(b)))
		}
		s := dataplane.StageID(len(d.Stages))
		d.Stages = append(d.Stages, dataplane.Stage{Name: t.Name + "/" + name, App: 0, Pipeline: -1, Index: int(s), Batch: 1,
			LatUs: lat, Manual: true, Model: name})
		stageOf[name] = s
		stageModel = append(stageModel, m)
		return s, nil
	}
	per := max(hw.PerServer, 1)
	// The topology holds the GPUs the placement uses, numbered densely in the plan's order:
	// reports divide utilization over the GPUs the plan runs on, not over the cluster's (a
	// plan on 2 of 8 GPUs busy 90% read as 22%). Worker names keep the plan's GPU numbers.
	gpuOf := map[int]int{}
	var used []int
	for _, r := range cp.Placement {
		for _, g := range r.GPUs {
			if _, ok := gpuOf[g]; !ok && g >= 0 {
				gpuOf[g] = -1
				used = append(used, g)
			}
		}
	}
	slices.Sort(used)
	last := 0
	for i, g := range used {
		gpuOf[g] = i
		last = g
	}
	for s := 0; s*per <= last; s++ {
		d.Topo.Servers = append(d.Topo.Servers, dataplane.Server{Name: fmt.Sprintf("server-%d", s), UpMbps: 1e6, DownMbps: 1e6})
	}
	for _, g := range used {
		d.Topo.GPUs = append(d.Topo.GPUs, dataplane.GPU{Type: hw.GPU, Server: dataplane.ServerID(g / per)})
	}
	tab := gearTable{PollMs: cp.PollMs, Alpha: cp.Alpha, MaxBatch: maxB}
	if tab.PollMs <= 0 {
		tab.PollMs = DefaultPollMs
	}
	repsOf := map[string][]int{}
	for i, r := range cp.Placement {
		s, err := addStage(r.Model)
		if err != nil {
			return nil, formats.ErrorList{{Path: fmt.Sprintf("cascade.placement[%d].model", i), Value: strconv.Quote(r.Model), Rule: err.Error()}}
		}
		if len(r.GPUs) == 0 {
			return nil, formats.ErrorList{{Path: fmt.Sprintf("cascade.placement[%d].gpus", i), Rule: "must list at least one GPU"}}
		}
		gpus := make([]int, len(r.GPUs))
		for k, g := range r.GPUs {
			if g < 0 {
				return nil, formats.ErrorList{{Path: fmt.Sprintf("cascade.placement[%d].gpus[%d]", i, k), Value: strconv.Itoa(g), Rule: "must be >= 0"}}
			}
			gpus[k] = gpuOf[g]
		}
		w := dataplane.WorkerID(len(d.Topo.Workers))
		d.Topo.Workers = append(d.Topo.Workers, dataplane.Worker{Name: fmt.Sprintf("%s@gpu%v", r.Model, r.GPUs), GPU: gpus[0],
			Server: dataplane.ServerID(r.GPUs[0] / per), Type: hw.GPU, VGPU: 1, Stage: s})
		d.Stages[s].Pool = append(d.Stages[s].Pool, w)
		var bytes int64
		for _, p := range t.Models[idx[r.Model]].Parts {
			bytes += p
		}
		tab.Replicas = append(tab.Replicas, replicaSpec{Stage: int(s), GPUs: gpus, Bytes: bytes})
		repsOf[r.Model] = append(repsOf[r.Model], i)
	}
	for gi, g := range cp.Gears {
		gs := gearSpec{QHi: g.QHi, Thr: g.Thr, B1: max(1, g.Trigger[firstOr(g.Models)])}
		for _, m := range g.Models {
			s, ok := stageOf[m]
			if !ok {
				return nil, formats.ErrorList{{Path: fmt.Sprintf("cascade.gears[%d].models", gi), Value: strconv.Quote(m), Rule: "model has no replica in cascade.placement"}}
			}
			gs.Stages = append(gs.Stages, int(s))
			sh := g.Share[m]
			if len(sh) != len(repsOf[m]) {
				sh = make([]float64, len(repsOf[m]))
				for k := range sh {
					sh[k] = 1 / float64(len(sh))
				}
			}
			gs.Share = append(gs.Share, sh)
		}
		tab.Gears = append(tab.Gears, gs)
	}
	js, err := json.Marshal(tab)
	if err != nil {
		return nil, err
	}
	var entry []dataplane.StageID
	for s := range d.Stages {
		entry = append(entry, dataplane.StageID(s))
	}
	// The plan's stated range: its gears cover [0, the last q_hi) (--qps-max at solve).
	rangeRPS := 0.0
	for _, g := range cp.Gears {
		rangeRPS = max(rangeRPS, g.QHi)
	}
	d.Apps = []dataplane.App{{Name: t.Name, SLO: dataplane.Time(slo / time.Microsecond), Weight: 1, RateRPS: qpsMax,
		RangeRPS: rangeRPS, Entry: entry, Params: map[string]string{ParamPlan: string(js)}}}
	d.Emulate = emulator(t, stageModel)
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// emulator is a cascade deployment's Emulate: stage s's model on the request's sample
// (SampleOf): its certainty, and Label 1 when the model answers the sample right, 0 when
// wrong (the stand-in's ground truth, so a run can measure accuracy over served requests).
// stageModel maps a stage's index to its model's index in t.Models.
//
// A sample's answer is one 8-byte record (certainty already as the float32 the result
// carries, and label), read at every batch end for a random sample: separate certainty
// (float64) and label tables took two cache lines a lookup from 72 KB for three models,
// more than the core's first-level cache.
func emulator(t *Task, stageModel []int) func(*dataplane.Stage, *dataplane.Request, float64) dataplane.Result {
	type answer struct {
		cert  float32
		label int32
	}
	answers := make([][]answer, len(t.Models))
	for m := range t.Models {
		answers[m] = make([]answer, t.N)
		for s := range answers[m] {
			answers[m][s].cert = float32(t.Cert[m][s])
			if t.Correct[m][s] {
				answers[m][s].label = 1
			}
		}
	}
	N := int64(t.N)
	return func(st *dataplane.Stage, r *dataplane.Request, _ float64) dataplane.Result {
		a := answers[stageModel[st.Index]][SampleOf(r, N)]
		return dataplane.Result{Certainty: a.cert, Label: a.label}
	}
}

// SampleOf is the validation sample request r replays: Attrs.Sample when set, else its
// trace key (the i-th request of a trace uses sample i mod N: the simulator cycles through
// the samples, App. C.1; keyed on the trace rather than the ID, serve replays the same sample
// for the same request of `plan load`'s trace whatever order requests reach it in).
func SampleOf(r *dataplane.Request, n int64) int64 {
	x := r.Attrs.Sample
	if x <= 0 {
		x = dataplane.TraceKey(r)
	}
	if x < 0 {
		x = -x
	}
	return x % n
}

func firstOr(ms []string) string {
	if len(ms) == 0 {
		return ""
	}
	return ms[0]
}
