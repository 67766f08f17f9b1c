package cascade

// This file holds the cascade task as both the planner (planner/cascade) and the data plane
// read it: per-sample validation outputs and per-model profiles (CascadeServe §3, App. C.1).

import (
	"fmt"
	"math"
	"sort"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
)

// Task is the planner's view of one cascades entry: N validation samples, per model
// correctness and certainty, and the profiled latency, memory and per-sample times.
type Task struct {
	Name   string
	Models []ModelInfo
	N      int
	// Correct[m][s] and Cert[m][s] are model m's outcome on sample s. From a candidates
	// table they are a synthetic realization (candidates.go) that forwards each listed
	// cascade's measured fractions.
	Correct [][]bool
	Cert    [][]float64
	// Candidates are cascades evaluated elsewhere (the workload's candidates table): the
	// planner searches these instead of enumerating the records.
	Candidates []Candidate
	// Score: certainties are scores on any real scale (a workload's certainty: score).
	Score bool
}

// ModelInfo is a model's profile as the planner uses it.
type ModelInfo struct {
	Name string
	// LatUs[b] is the latency of a batch of b (LatUs[0] = 0), b = 1..Bprof.
	LatUs []float64
	// Parts is the memory on each GPU the model spans (len = GPUs per replica).
	Parts []int64
	// RtOpt is min_b lat(b)/b in seconds (feasibility: batch-1 times would reject loads that
	// batching carries); Rt1 = lat(1) in seconds.
	RtOpt, Rt1 float64
}

// Lat returns lat(b) in µs: the profile's curve (outliers replaced, formats.FitProfile) up to the largest measured
// batch and, beyond it (MaxBatch may exceed the largest profiled batch), extended at the
// last per-sample time, lat(n)·b/n: never below it and never negative (the
// slope of a noisy last pair took bert-mini to −9,158 µs at batch 1000).
func (m *ModelInfo) Lat(b int) float64 {
	n := len(m.LatUs) - 1
	switch {
	case b <= 0 || n <= 0:
		return 0
	case b <= n:
		return m.LatUs[b]
	}
	return m.LatUs[n] * float64(b) / float64(n)
}

// PerSample returns lat(b)/b in seconds.
func (m *ModelInfo) PerSample(b int) float64 { return m.Lat(b) / float64(max(b, 1)) / 1e6 }

// Width is the number of GPUs one replica spans.
func (m *ModelInfo) Width() int { return max(len(m.Parts), 1) }

// NewTask builds the task of workload cascade c (at path p, "workload: cascades[i]") from
// the profiles on GPU type gpu. Problems are returned as InputError lines naming the field.
func NewTask(c *cascadesec.Cascade, p string, profiles []*formats.Profile, gpu string, gpuMem int64) (*Task, []string) {
	t := &Task{Name: c.Name}
	var probs []string
	index := map[string]int{}
	for j, name := range c.Models {
		var mp *formats.ModelProfile
		where := "profile"
		for pi, pr := range profiles {
			if m, ok := pr.Model(name); ok {
				mp = m
				if len(profiles) > 1 {
					where = fmt.Sprintf("profile[%d]", pi)
				}
				for k := range pr.Models {
					if pr.Models[k].Name == name {
						where += fmt.Sprintf(": models[%d]", k)
					}
				}
				break
			}
		}
		if mp == nil {
			probs = append(probs, fmt.Sprintf("%s.models[%d]: %q: model not found in any profile", p, j, name))
			continue
		}
		mi := ModelInfo{Name: name, LatUs: []float64{0}}
		// Every batch up to the largest measured one, linear between measured batches (a
		// profile may measure 1, 2, 4, …), on the fit FitProfile left in the profile.
		bs, us := mp.WholeCurve(gpu, 1)
		if len(bs) > 0 {
			for b := 1; b <= int(bs[len(bs)-1]); b++ {
				mi.LatUs = append(mi.LatUs, formats.CurveAt(bs, us, float64(b)))
			}
		}
		if len(mi.LatUs) < 2 {
			probs = append(probs, fmt.Sprintf("%s.models[%d]: %q: the profile has no measured batch on %s (vgpu 1)", p, j, name, gpu))
			continue
		}
		bad := false
		for b := 1; b < len(mi.LatUs); b++ {
			if !(mi.LatUs[b] > 0) {
				probs = append(probs, fmt.Sprintf("%s.models[%d]: %q: profiled latency at batch %d on %s is %g: must be > 0", p, j, name, b, gpu, mi.LatUs[b]))
				bad = true
				break
			}
		}
		if bad {
			continue
		}
		mi.Parts = mp.PartsMemoryBytes
		if len(mi.Parts) == 0 {
			mi.Parts = []int64{mp.MemoryBytes}
		}
		for k, part := range mi.Parts {
			if gpuMem > 0 && part > gpuMem {
				field := ".memory_bytes"
				if len(mp.PartsMemoryBytes) > 0 {
					field = fmt.Sprintf(".parts_memory_bytes[%d]", k)
				}
				probs = append(probs, fmt.Sprintf("%s%s: %d: model %s is larger than any GPU: a %s holds %d bytes (split it over GPUs with parts_memory_bytes)", where, field, part, name, gpu, gpuMem))
			}
		}
		mi.Rt1 = mi.LatUs[1] / 1e6
		mi.RtOpt = math.Inf(1)
		for b := 1; b < len(mi.LatUs); b++ {
			mi.RtOpt = min(mi.RtOpt, mi.PerSample(b))
		}
		index[name] = len(t.Models)
		t.Models = append(t.Models, mi)
	}
	if len(probs) > 0 {
		return nil, probs
	}
	t.Score = c.Certainty == "score"
	if len(c.Validation) == 0 && len(c.Candidates) > 0 {
		if probs := t.fromCandidates(c, p, index); probs != nil {
			return nil, probs
		}
		return t, nil
	}
	// Validation matrix: the workload's validation already ensures every model covers the
	// same samples; samples are renumbered densely in ascending order.
	var ids []int
	seen := map[int]bool{}
	for _, r := range c.Validation {
		if !seen[r.Sample] {
			seen[r.Sample] = true
			ids = append(ids, r.Sample)
		}
	}
	sort.Ints(ids)
	pos := map[int]int{}
	for i, s := range ids {
		pos[s] = i
	}
	t.N = len(ids)
	t.Correct = make([][]bool, len(t.Models))
	t.Cert = make([][]float64, len(t.Models))
	have := make([]int, len(t.Models))
	for m := range t.Models {
		t.Correct[m] = make([]bool, t.N)
		t.Cert[m] = make([]float64, t.N)
	}
	for j, r := range c.Validation {
		m, ok := index[r.Model]
		if !ok {
			probs = append(probs, fmt.Sprintf("%s.validation[%d].model: %q: not in %s.models", p, j, r.Model, p))
			continue
		}
		if math.IsNaN(r.Cert) || math.IsInf(r.Cert, 0) || !t.Score && (r.Cert < 0 || r.Cert > 1) {
			probs = append(probs, fmt.Sprintf("%s.validation[%d].cert: %g: must be in [0, 1] (or set certainty: score)", p, j, r.Cert))
		}
		s := pos[r.Sample]
		t.Cert[m][s] = r.Cert
		if r.Correct != nil {
			t.Correct[m][s] = *r.Correct
		} else {
			t.Correct[m][s] = r.Pred == r.Label
		}
		have[m]++
	}
	for m, n := range have {
		if n != t.N {
			probs = append(probs, fmt.Sprintf("%s.validation: model %q has %d records for %d samples: every model must cover the same samples", p, t.Models[m].Name, n, t.N))
		}
	}
	if t.N == 0 {
		probs = append(probs, fmt.Sprintf("%s.validation: no records", p))
	}
	if len(probs) > 0 {
		return nil, probs
	}
	return t, nil
}

// Accuracy returns model m's single-model validation accuracy.
func (t *Task) Accuracy(m int) float64 {
	n := 0
	for _, c := range t.Correct[m] {
		if c {
			n++
		}
	}
	return float64(n) / float64(t.N)
}

// Hardware is the cluster as the gear planner and the deployer see it: N GPUs of one type,
// PerServer to a server, Mem bytes each.
type Hardware struct {
	GPU       string
	N         int
	PerServer int
	Mem       int64
}

// Online defaults of a gear plan: the producer measures QPS every 100 ms; a server keeps its
// slower gear while the measured QPS is under Alpha times its stage-1 backlog, so a backlog
// drains before accuracy rises; a stage runs at most MaxBatch samples (CascadeServe §5).
const (
	DefaultPollMs   = 100
	DefaultAlpha    = 8
	DefaultMaxBatch = 1000
)

// HardwareOf returns the planner's view of cluster cl (one GPU type: CascadeServe plans a
// homogeneous cluster).
func HardwareOf(cl *formats.Cluster) (Hardware, []string) {
	if cl == nil || len(cl.GPUs) == 0 {
		return Hardware{}, []string{"cluster: gpus: must list one GPU pool"}
	}
	if len(cl.GPUs) > 1 {
		return Hardware{}, []string{fmt.Sprintf("cluster: gpus: %d pools: CascadeServe plans one GPU type (give one pool)", len(cl.GPUs))}
	}
	g := cl.GPUs[0]
	hw := Hardware{GPU: g.Type, N: g.Count, PerServer: g.PerServer, Mem: g.MemoryBytes}
	if hw.PerServer <= 0 {
		hw.PerServer = hw.N
	}
	if hw.Mem <= 0 {
		return hw, []string{fmt.Sprintf("cluster: gpus[0].memory_bytes: %d: CascadeServe needs the GPU memory", g.MemoryBytes)}
	}
	return hw, nil
}
