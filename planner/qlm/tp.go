package qlm

// Tensor-parallel instances: an LLM profile measured at gpu_count k (vLLM's
// tensor_parallel_size, llm-engine digest §4) is an instance spanning k GPUs of one server
// (QLM §2.3: an instance is an engine on a fixed GPU set). Its profile already describes the
// whole instance (weights across the k GPUs, the KV capacity of their memory, Θ at that size),
// so the data plane runs it as one instance; the plan records which GPUs it holds.

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/planner/fleet"
)

// profilePath names where profile i of the inputs came from (its file, for errors).
func profilePath(in planner.Inputs, i int) string {
	n := 0
	for _, r := range in.Refs {
		if r.Kind == formats.KindProfile {
			if n == i {
				return r.Path
			}
			n++
		}
	}
	return fmt.Sprintf("profile %d", i+1)
}

// tensorParallel is the tensor-parallel profile model runs on when no one-GPU profile fits:
// the one with the fewest GPUs (then the first) whose k GPUs fit one server of its GPU type
// and hold its weights; else nil and why each candidate does not fit, naming the profile's
// file, field and value.
func tensorParallel(in planner.Inputs, model string) (*formats.LLMProfile, []string) {
	srv := fleet.Servers(in.Cluster)
	var best *formats.LLMProfile
	var probs []string
	for i, p := range in.Profiles {
		for j := range p.LLMs {
			pr := &p.LLMs[j]
			if pr.Model != model || pr.GPUCount <= 1 {
				continue
			}
			field := fmt.Sprintf("%s: llms[%d].gpu_count", profilePath(in, i), j)
			most, typed := 0, false
			var mem int64
			for _, s := range srv {
				if s.GPU == pr.GPU {
					typed, most, mem = true, max(most, len(s.GPUs)), gpuMemory(s.GPU, s.Mem)
				}
			}
			switch {
			case !typed:
				continue // a GPU type the cluster lacks
			case pr.GPUCount > most:
				probs = append(probs, fmt.Sprintf("%s: %d: tensor parallelism over %d GPUs, but no server of the cluster has more than %d %s GPUs (an instance spans GPUs of one server)",
					field, pr.GPUCount, pr.GPUCount, most, pr.GPU))
			case mem > 0 && pr.WeightBytes >= int64(pr.GPUCount)*mem:
				probs = append(probs, fmt.Sprintf("%s: %d: weights of %d bytes exceed %d %s GPUs' memory (%d bytes each)", field, pr.GPUCount, pr.WeightBytes, pr.GPUCount, pr.GPU, mem))
			case best == nil || pr.GPUCount < best.GPUCount:
				best = pr
			}
		}
	}
	return best, probs
}

// placeTensorParallel places instances when some model runs tensor-parallel: every model
// gets one instance (most GPUs first, then by load), then further instances go by largest
// remaining load per instance (D'Hondt, as assignInstances) while one fits, round-robin over
// the models with the round-robin strategy. An instance of k GPUs takes the server of its
// type with the fewest free GPUs that still holds k (best fit: whole servers stay free for
// wider instances). limit > 0 stops at that many instances (--min-gpus). Instances are numbered in GPU order and record their GPUs.
func placeTensorParallel(q *qlmsec.QLMPlan, c *formats.Cluster, strategy string, models []string, load map[string]float64,
	chosen map[string]*formats.LLMProfile, limit int) ([]string, map[string]int, error) {
	srv := fleet.Servers(c)
	type inst struct {
		model string
		gpus  []int
	}
	var insts []inst
	count := map[string]int{}
	place := func(m string) bool {
		pr := chosen[m]
		gpus, ok := fleet.TakeBestFit(srv, pr.GPU, max(pr.GPUCount, 1))
		if !ok {
			return false
		}
		insts = append(insts, inst{m, gpus})
		count[m]++
		return true
	}
	first := append([]string(nil), models...)
	sort.SliceStable(first, func(a, b int) bool {
		ka, kb := chosen[first[a]].GPUCount, chosen[first[b]].GPUCount
		if ka != kb {
			return ka > kb
		}
		return load[first[a]] > load[first[b]]
	})
	for _, m := range first {
		if !place(m) {
			pr := chosen[m]
			return nil, nil, &planner.InputError{Problems: []string{fmt.Sprintf("cluster: gpus: no %d free %s GPUs on one server for an instance of %s after one instance of each model before it (%v)",
				max(pr.GPUCount, 1), pr.GPU, m, first)}}
		}
	}
	if strategy == "round-robin" {
		// The models in turn; one that fits no more is passed over until none fits.
		for rr, misses := 0, 0; misses < len(models) && (limit <= 0 || len(insts) < limit); rr++ {
			if place(models[rr%len(models)]) {
				misses = 0
			} else {
				misses++
			}
		}
	} else {
		for limit <= 0 || len(insts) < limit {
			cand := append([]string(nil), models...)
			sort.SliceStable(cand, func(a, b int) bool {
				return load[cand[a]]/float64(count[cand[a]]+1) > load[cand[b]]/float64(count[cand[b]]+1)
			})
			placed := false
			for _, m := range cand {
				if placed = place(m); placed {
					break
				}
			}
			if !placed {
				break
			}
		}
	}
	sort.Slice(insts, func(a, b int) bool { return insts[a].gpus[0] < insts[b].gpus[0] })
	assign := make([]string, len(insts))
	for i, x := range insts {
		pr := chosen[x.model]
		assign[i] = x.model
		q.Instances = append(q.Instances, qlmsec.QLMInstance{Name: "llm-" + strconv.Itoa(i), GPU: pr.GPU, GPUCount: max(pr.GPUCount, 1), Model: x.model, GPUs: x.gpus})
	}
	return assign, count, nil
}
