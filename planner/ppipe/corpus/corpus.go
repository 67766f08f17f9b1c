// Package corpus generates real-shaped PPipe planning cases, seeded: TensorRT-like per-block
// latency tables, two-type clusters of 100 GPUs, SLOs a few times a base latency, one to
// three models, and the planner options a user of the authors' set-up passes. It is test
// data for the property every written plan must have (internal/run/corpus runs it): the
// solver's plan is written or refused with a reason, never a panic or a self-contradiction,
// and what is written deploys, simulates and passes `plan check`.
//
// The shapes follow the PPipe paper's evaluation (ATC '25, §6: clusters HC1–HC3, P ≤ 3, α,
// 6–10 Gbps) and the aggregate facts of the authors' block tables (specs/ppipe.md,
// "calibration"): the per-block latency ratio to L4 has a model median and range per GPU type
// (P4 3.8, 1.8–8.6; T4 3.3, 1.1–6.0; V100 1.2, 0.31–3.2) with opposite trends along the
// model for P4 and V100, batch 8 costs 6–8× batch 1, a 1/v slice runs a block v·κ times
// slower (κ < 1 on V100 only), and P4 runs whole GPUs only. No table of the authors' is
// copied: every number is drawn.
package corpus

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Case is one generated planning case: the three input files' contents and the solve's
// command-line options.
type Case struct {
	// Name is "case-SEED-INDEX", unique per (seed, index).
	Name string
	// Profile, Cluster and Workload are the input files (JSON).
	Profile, Cluster, Workload []byte
	// Strategy is --strategy: ppipe, np or dart-r.
	Strategy string
	// Flags are the planner's own flags (name without dashes, value), in a fixed order.
	Flags []Flag
	// Describe is a one-line summary for reports.
	Describe string
}

// Flag is one planner flag.
type Flag struct{ Name, Value string }

// gpuShape is what the generator knows of a GPU type: its class, its per-block latency
// ratio to L4 (model median and the range the authors' tables span), the trend of that
// ratio from the first block to the last (log ratio change, + = later blocks relatively
// slower), the κ of its slices and whether it may be sliced at all.
type gpuShape struct {
	class          string
	median, lo, hi float64
	trend          float64
	kappa          [5]float64 // by level v (index 1..4)
	sliced         bool
}

var shapes = map[string]gpuShape{
	"L4":   {class: "high", median: 1, lo: 1, hi: 1, kappa: [5]float64{0, 1, 1, 1, 1}, sliced: true},
	"V100": {class: "high", median: 1.2, lo: 0.31, hi: 3.2, trend: -1.2, kappa: [5]float64{0, 1, 0.87, 0.82, 0.83}, sliced: true},
	"T4":   {class: "low", median: 3.3, lo: 1.1, hi: 6.0, trend: 0.8, kappa: [5]float64{0, 1, 1, 1, 1}, sliced: true},
	"P4":   {class: "low", median: 3.8, lo: 1.8, hi: 8.6, trend: 1.2, kappa: [5]float64{0, 1, 1, 1, 1}},
}

// pairs are the (high, low) clusters of the paper's evaluation and its sensitivity runs.
var pairs = [][2]string{{"L4", "T4"}, {"L4", "P4"}, {"V100", "P4"}, {"V100", "T4"}}

// batchesAt is the authors' profiling grid: batches 1–8 whole, 1–4 at halves, 1–2 at thirds
// and quarters.
var batchesAt = [5]int{0, 8, 4, 2, 2}

// Generate returns case index of the corpus seeded seed: the same (seed, index), the same
// bytes.
func Generate(seed uint64, index int) Case {
	r := rand.New(rand.NewPCG(seed, uint64(index)*0x9e3779b97f4a7c15+1))
	pair := pairs[r.IntN(len(pairs))]
	hi, lo := pair[0], pair[1]
	highShare := []int{25, 50}[r.IntN(2)]
	perServer := func() int { return []int{1, 2, 4, 8}[r.IntN(4)] }
	nic := 6 + float64(r.IntN(5)) // 6–10 Gbps
	c := Case{Name: fmt.Sprintf("case-%d-%d", seed, index)}

	nModels := 1 + r.IntN(3)
	var models []map[string]any
	var wmodels []map[string]any
	var descr []string
	for m := 0; m < nModels; m++ {
		name := fmt.Sprintf("m%d", m)
		mp, base, _ := model(r, name, []string{hi, lo}, wide)
		models = append(models, mp)
		sloX := 3 + 5*r.Float64() // 3–8× base
		slo := time.Duration(sloX * base * float64(time.Microsecond)).Round(time.Microsecond)
		weight := []float64{1, 1, 2, 0.5}[r.IntN(4)]
		wmodels = append(wmodels, map[string]any{"name": name, "slo": slo.String(), "weight": weight})
		descr = append(descr, fmt.Sprintf("%s %d blocks slo %.1f×", name, len(mp["blocks"].([]map[string]any)), sloX))
	}
	levels := func(t string) []int {
		if shapes[t].sliced {
			return []int{1, 2, 3, 4}
		}
		return []int{1}
	}
	cluster := map[string]any{
		"apiVersion": "plan/v1", "kind": "Cluster",
		"metadata": map[string]any{"name": fmt.Sprintf("%dx%s-%dx%s", highShare, hi, 100-highShare, lo)},
		"gpus": []map[string]any{
			{"type": hi, "count": highShare, "per_server": perServer(), "vgpu": levels(hi), "class": "high"},
			{"type": lo, "count": 100 - highShare, "per_server": perServer(), "vgpu": levels(lo), "class": "low"},
		},
		"nic_gbps": nic,
	}
	workload := map[string]any{"apiVersion": "plan/v1", "kind": "Workload",
		"metadata": map[string]any{"name": c.Name}, "models": wmodels}
	profile := map[string]any{"apiVersion": "plan/v1", "kind": "Profile",
		"metadata": map[string]any{"name": c.Name, "description": "generated TensorRT-like block tables (planner/ppipe/corpus)"},
		"models":   models}

	c.Strategy = []string{"ppipe", "ppipe", "ppipe", "np", "dart-r"}[r.IntN(5)]
	c.Flags = []Flag{
		{"max-partitions", strconv.Itoa(2 + r.IntN(2))},
		{"alpha", "0.1"},
		{"rounding", []string{"stage", "pipeline"}[r.IntN(2)]},
		{"replicas", []string{"-1", "1"}[r.IntN(2)]},
		{"batch-allowance", strconv.FormatBool(r.IntN(2) == 0)},
		{"fill-surplus", strconv.FormatBool(r.IntN(2) == 0)},
	}
	c.Profile, c.Cluster, c.Workload = mustJSON(profile), mustJSON(cluster), mustJSON(workload)
	c.Describe = fmt.Sprintf("%s: %d %s + %d %s, %g Gbps; %s; strategy %s", c.Name, highShare, hi, 100-highShare, lo, nic,
		strings.Join(descr, "; "), c.Strategy)
	for _, f := range c.Flags {
		c.Describe += fmt.Sprintf(" --%s=%s", f.Name, f.Value)
	}
	return c
}

// shape bounds a drawn model: its block count and its whole-model batch-1 L4 latency (µs).
type shape struct {
	minBlocks, maxBlocks int
	minUs, maxUs         float64
}

// wide is the general corpus's: 10–60 blocks, 4–60 ms on L4.
var wide = shape{10, 60, 4000, 60000}

// model draws one model's block table on the given GPU types and returns it with its base
// latency, the whole model at batch 1 on the first (high-class) type, and its latency on a
// whole L4 at batch 1 (the paper's SLO reference, whether or not the cluster has L4s), µs.
func model(r *rand.Rand, name string, types []string, bounds shape) (map[string]any, float64, float64) {
	n := bounds.minBlocks + r.IntN(bounds.maxBlocks-bounds.minBlocks+1)
	total := bounds.minUs + r.Float64()*(bounds.maxUs-bounds.minUs)
	// Block shares: lognormal, so a few blocks dominate as in real CNNs.
	w := make([]float64, n)
	sum := 0.0
	for i := range w {
		w[i] = math.Exp(0.6 * r.NormFloat64())
		sum += w[i]
	}
	l4 := make([]float64, n) // L4, batch 1, whole GPU
	for i := range l4 {
		l4[i] = total * w[i] / sum
	}
	// Batch scaling per block: lat(b) = lat(1)·(1 + (b−1)·s), lat(8)/lat(1) in [5.9, 8].
	scale := make([]float64, n)
	for i := range scale {
		scale[i] = 0.7 + 0.3*r.Float64()
	}
	var rows []map[string]any
	base := 0.0
	for ti, t := range types {
		sh := shapes[t]
		ratio := make([]float64, n)
		for i := range ratio {
			pos := float64(i)/float64(max(n-1, 1)) - 0.5
			x := sh.median * math.Exp(sh.trend*pos+0.25*r.NormFloat64())
			ratio[i] = min(max(x, sh.lo), sh.hi)
		}
		for v := 1; v <= 4; v++ {
			if v > 1 && !sh.sliced {
				break
			}
			prev := make([]float64, n)
			for b := 1; b <= batchesAt[v]; b++ {
				us := make([]float64, n)
				for i := range us {
					x := l4[i] * ratio[i] * (1 + float64(b-1)*scale[i]) * float64(v) * sh.kappa[v]
					x *= 1 + 0.03*r.NormFloat64() // measurement noise
					x = max(x, prev[i])           // monotone in the batch
					us[i] = math.Round(x*10) / 10
					if ti == 0 && v == 1 && b == 1 {
						base += us[i]
					}
				}
				prev = us
				rows = append(rows, map[string]any{"gpu": t, "vgpu": v, "batch": b, "block_us": us})
			}
		}
	}
	blocks := make([]map[string]any, n)
	for i := range blocks {
		blocks[i] = map[string]any{"first_layer": i, "end_layer": i + 1}
	}
	// Cut sizes: the activation after each block but the last, shrinking along the model
	// as resolution falls, with noise (0.1–16 MB).
	cuts := make([]int64, n-1)
	start := 2e6 + r.Float64()*14e6
	for i := range cuts {
		f := start * math.Exp(-1.5*float64(i)/float64(n)) * math.Exp(0.3*r.NormFloat64())
		cuts[i] = int64(max(f, 1e5))
	}
	return map[string]any{
		"name": name, "backend": "import", "source": "generated (planner/ppipe/corpus)", "memory_bytes": 0,
		"blocks": blocks, "cut_bytes": cuts, "latency": rows,
	}, base, total
}

// authorsShape is the authors' models after their pre-partitioning: 9–10 blocks (a layer
// longer than the block target leaves 9), 5.2–35 ms on L4 at batch 1 (the calibration
// facts of PPipe §7.1 restated in the spec).
var authorsShape = shape{9, 10, 5200, 35000}

// Authors returns case index of the corpus of the authors' own set-up (PPipe §7.1 and their
// artifact): a group of three models on 25 high-class + 75 low-class GPUs, each model's SLO
// 5× its whole-model L4 latency at batch 1 (L4 even on V100 clusters), weights from the
// artifact's Poisson or bursty MAF assignment, and the flags a user of the artifact passes:
// stage rounding, K^(P−D) replicas, the batch-formation allowance, no surplus filling, and
// either the main runs' P ≤ 2 with α = 0.4 or the ablation's P ≤ 3 with α = 0.1. NIC 6 Gbps
// on P4 clusters, 10 on T4 ones, as the artifact has it.
func Authors(seed uint64, index int) Case { return authors(seed, index, 3, 25, 75, "authors") }

// AuthorsTestbed is Authors on the paper's testbed (PPipe §7.1, "S": 4 high-class + 12
// low-class GPUs, one model at a time): cases small enough that a long run proves their
// optimum, to hold the default solve to it.
func AuthorsTestbed(seed uint64, index int) Case { return authors(seed, index, 1, 4, 12, "testbed") }

func authors(seed uint64, index, nModels, high, low int, kind string) Case {
	r := rand.New(rand.NewPCG(seed^0xa11e5, uint64(index)*0x9e3779b97f4a7c15+7))
	pair := pairs[r.IntN(len(pairs))]
	hi, lo := pair[0], pair[1]
	nic := 10.0
	if lo == "P4" {
		nic = 6
	}
	perServer := map[string]int{"L4": 4, "V100": 4, "T4": 2, "P4": 1}
	if hi == "V100" && lo == "P4" {
		perServer["V100"] = 2 // HC3
	}
	if hi == "L4" && lo == "P4" {
		perServer["L4"] = 1 // HC1
	}
	c := Case{Name: fmt.Sprintf("%s-%d-%d", kind, seed, index)}
	weights := [][]float64{{0.30, 0.33, 0.37}, {0.39, 0.26, 0.35}}[r.IntN(2)]
	var models, wmodels []map[string]any
	var descr []string
	for m := 0; m < nModels; m++ {
		name := fmt.Sprintf("m%d", m)
		mp, _, l4 := model(r, name, []string{hi, lo}, authorsShape)
		models = append(models, mp)
		slo := time.Duration(5 * l4 * float64(time.Microsecond)).Round(time.Microsecond)
		wmodels = append(wmodels, map[string]any{"name": name, "slo": slo.String(), "weight": weights[m]})
		descr = append(descr, fmt.Sprintf("%s %d blocks slo %s", name, len(mp["blocks"].([]map[string]any)), slo))
	}
	levels := func(t string) []int {
		if shapes[t].sliced {
			return []int{1, 2, 3, 4}
		}
		return []int{1}
	}
	cluster := map[string]any{
		"apiVersion": "plan/v1", "kind": "Cluster",
		"metadata": map[string]any{"name": fmt.Sprintf("%dx%s-%dx%s", high, hi, low, lo)},
		"gpus": []map[string]any{
			{"type": hi, "count": high, "per_server": perServer[hi], "vgpu": levels(hi), "class": "high"},
			{"type": lo, "count": low, "per_server": perServer[lo], "vgpu": levels(lo), "class": "low"},
		},
		"nic_gbps": nic,
	}
	workload := map[string]any{"apiVersion": "plan/v1", "kind": "Workload",
		"metadata": map[string]any{"name": c.Name}, "models": wmodels}
	profile := map[string]any{"apiVersion": "plan/v1", "kind": "Profile",
		"metadata": map[string]any{"name": c.Name, "description": "generated TensorRT-like block tables (planner/ppipe/corpus)"},
		"models":   models}
	parts, alpha := "2", "0.4"
	if r.IntN(4) == 0 {
		parts, alpha = "3", "0.1"
	}
	c.Strategy = "ppipe"
	c.Flags = []Flag{
		{"max-partitions", parts},
		{"alpha", alpha},
		{"rounding", "stage"},
		{"replicas", "-1"},
		{"batch-allowance", "true"},
		{"fill-surplus", "false"},
	}
	c.Profile, c.Cluster, c.Workload = mustJSON(profile), mustJSON(cluster), mustJSON(workload)
	c.Describe = fmt.Sprintf("%s: %d %s + %d %s, %g Gbps; %s; strategy %s", c.Name, high, hi, low, lo, nic, strings.Join(descr, "; "), c.Strategy)
	for _, f := range c.Flags {
		c.Describe += fmt.Sprintf(" --%s=%s", f.Name, f.Value)
	}
	return c
}

func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		panic(err) // maps of numbers and strings always marshal
	}
	return append(b, '\n')
}
