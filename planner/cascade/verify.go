package cascade

import (
	"fmt"
	"math"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/planner"
)

// Verify re-derives the invariants of a gear plan from the plan and its
// embedded inputs, independently of the planner: every gear's models are placed; memory
// per GPU fits; multi-GPU replicas stay inside one server; shares sum to 1 over existing
// replicas; gears cover [0, qps_max] contiguously; each gear's expected accuracy and work
// match a replay of the validation records; under a latency SLO every gear's expected
// p-latency is within it; under an accuracy SLO the weighted accuracy reaches it.
func Verify(p *formats.Plan) []string {
	cp := cascadesec.PlanOf(p)
	if cp == nil {
		return []string{"cascade: missing"}
	}
	var out []string
	add := func(f string, a ...any) { out = append(out, fmt.Sprintf(f, a...)) }
	e := p.Provenance.Embedded
	if e == nil || e.Cluster == nil || e.Workload == nil {
		return []string{"provenance.embedded: the plan embeds no inputs: cannot verify"}
	}
	hw, probs := HardwareOf(e.Cluster)
	if probs != nil {
		return probs
	}
	var rec Flags
	if err := planner.ReadOptions(p.Provenance.Options, &rec); err != nil {
		return []string{err.Error()}
	}
	if g := rec.GPUs; g > 0 && g < hw.N {
		hw.N = g
	}
	var c *cascadesec.Cascade
	for i := range cascadesec.CascadesOf(e.Workload) {
		if cascadesec.CascadesOf(e.Workload)[i].Name == cp.Task {
			c = &cascadesec.CascadesOf(e.Workload)[i]
		}
	}
	if c == nil {
		return []string{fmt.Sprintf("cascade.task: %q: not a cascade of the embedded workload", cp.Task)}
	}
	profs := make([]*formats.Profile, len(e.Profiles))
	for i := range e.Profiles {
		profs[i] = &e.Profiles[i]
	}
	t, probs := NewTask(c, "workload: cascades", profs, hw.GPU, hw.Mem)
	if probs != nil {
		return probs
	}
	idx := map[string]int{}
	for i, m := range t.Models {
		idx[m.Name] = i
	}
	used := make([]int64, hw.N)
	count := map[string]int{}
	for i, r := range cp.Placement {
		m, ok := idx[r.Model]
		if !ok {
			add("cascade.placement[%d].model: %q: not a model of cascade %s", i, r.Model, c.Name)
			continue
		}
		count[r.Model]++
		if w := t.Models[m].Width(); len(r.GPUs) != w {
			add("cascade.placement[%d]: %s spans %d GPU(s), the replica lists %d", i, r.Model, w, len(r.GPUs))
		}
		for k, d := range r.GPUs {
			if d < 0 || d >= hw.N {
				add("cascade.placement[%d].gpus[%d]: %d: outside the plan's %d GPUs", i, k, d, hw.N)
				continue
			}
			if hw.PerServer > 0 && d/hw.PerServer != r.GPUs[0]/hw.PerServer {
				add("cascade.placement[%d]: GPUs %v span servers (%d GPUs per server)", i, r.GPUs, hw.PerServer)
			}
			used[d] += t.memUse(Replica{Model: m, GPUs: r.GPUs}, k)
		}
	}
	for d, u := range used {
		if u > hw.Mem {
			add("GPU %d: replicas need %d bytes, more than its %d", d, u, hw.Mem)
		}
	}
	var lat time.Duration
	perc := 0.95
	if c.LatencySLO != nil {
		lat, perc = time.Duration(c.LatencySLO.Latency), c.LatencySLO.Percentile
	}
	// A recorded latency SLO replaces the workload's SLOs: its accuracy floor is the
	// recorded one, or none.
	accSLO := c.AccuracySLO
	if rec.LatencySLO > 0 {
		lat, accSLO = rec.LatencySLO.D(), 0
	}
	if rec.AccuracySLO > 0 {
		accSLO = rec.AccuracySLO
	}
	qmax := c.QPSMax
	if rec.QPSMax > 0 {
		qmax = rec.QPSMax
	}
	if len(cp.Gears) > 0 && cp.Gears[len(cp.Gears)-1].QHi < qmax-absTol {
		add("cascade.gears: the last gear ends at %g QPS, below qps_max %g", cp.Gears[len(cp.Gears)-1].QHi, qmax)
	}
	var lo, hi []float64
	for _, g := range cp.Gears {
		lo, hi = append(lo, g.QLo), append(hi, g.QHi)
	}
	w := weights(c, lo, hi, rec.Weights == "time")
	var acc float64
	for i, g := range cp.Gears {
		gp := fmt.Sprintf("cascade.gears[%d]", i)
		var ms []int
		for j, name := range g.Models {
			m, ok := idx[name]
			if !ok {
				add("%s.models[%d]: %q: not a model of cascade %s", gp, j, name, c.Name)
				continue
			}
			if count[name] == 0 {
				add("%s.models[%d]: %q: not placed", gp, j, name)
			}
			ms = append(ms, m)
			if sh := g.Share[name]; len(sh) != count[name] {
				add("%s.share[%q]: %d entries for %d replicas", gp, name, len(sh), count[name])
			} else {
				var s float64
				for _, x := range sh {
					s += x
				}
				if math.Abs(s-1) > recordTol {
					add("%s.share[%q]: sums to %g, not 1", gp, name, s)
				}
			}
		}
		if len(ms) != len(g.Models) || len(g.Thr) != len(ms)-1 {
			continue
		}
		r := t.Evaluate(ms, g.Thr)
		if math.Abs(r.Acc-g.ExpAcc) > accTol {
			add("%s.expected_accuracy: %g: replaying the validation records gives %.6f", gp, g.ExpAcc, r.Acc)
		}
		acc += w[i] * r.Acc
		if lat > 0 && g.ExpPLat > float64(lat.Milliseconds())+recordTol && accSLO == 0 {
			add("%s.expected_platency_ms: %g: above the p%g latency SLO %v", gp, g.ExpPLat, perc*100, lat)
		}
	}
	if accSLO > 0 && acc < accSLO-recordTol {
		add("cascade.gears: weighted accuracy %.4f is below the accuracy SLO %g", acc, accSLO)
	}
	return out
}

// GPUs counts the GPUs a gear plan places replicas on.
func GPUs(cp *cascadesec.CascadePlan) int {
	seen := map[int]bool{}
	for _, r := range cp.Placement {
		for _, d := range r.GPUs {
			seen[d] = true
		}
	}
	return len(seen)
}

// WeightedAccuracy is the plan's accuracy by the recorded weights: Provenance.Objective.
func WeightedAccuracy(p *formats.Plan) float64 { return p.Provenance.Objective }
