package qlm

import (
	"fmt"
	"math"
	"strconv"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/planner"
)

// The cost objective's capacities, checked against the engine model. Mélange's ILP (Griggs
// et al. 2024, §5.1) needs what one instance of a GPU type serves of each size bucket; the
// closed form (Capacity) counts the lifetime's decodes and prefills against f·SLO but not a
// class's ttft_slo or tpot_slo, nor the chunked-prefill steps that slow every decode batched
// with them (LLM engine digest §2), so a Mistral-7B class with TPOT ≤ 30 ms got one H100 and
// attained 81%. Each kind's bucket capacities are scaled so that their mix rate (MixRate)
// equals the simulated rate of the same class mix (InstanceRate); the fleet is then simulated
// at its own rates and topped up until every class reaches Target.

// simCalibration scales a kind's closed-form bucket capacities to its simulated mix rate.
func simCalibration(w *formats.Workload) calibration {
	return func(k kind, buckets []Bucket, caps []float64) []float64 {
		sim, err := InstanceRate(k.prof, w, k.model)
		if err != nil {
			return caps // the verification run reports it
		}
		out := make([]float64, len(caps))
		// The mix rate of the closed form: Σ share / Σ share/cap over the model's buckets.
		var shares, per float64
		for b, x := range caps {
			if buckets[b].Model != k.model || buckets[b].Rate <= 0 {
				continue
			}
			shares += buckets[b].Rate
			if x > 0 {
				per += buckets[b].Rate / x
			} else {
				per = math.Inf(1)
			}
		}
		for b, x := range caps {
			if buckets[b].Model != k.model {
				continue
			}
			switch {
			case sim <= 0:
				out[b] = 0
			case math.IsInf(per, 1) || per == 0:
				// The closed form refuses some bucket the engine serves: the mix rate for all.
				out[b] = sim
			default:
				out[b] = x * sim / (shares / per)
			}
		}
		return out
	}
}

// maxTopUp bounds the instances the verification adds beyond the ILP's fleet.
const maxTopUp = 32

// topUp simulates res's fleet at w's rates (`plan simulate --load 1`) and, while a class misses
// Target, adds one instance of the kind that serves most of the class's model (the ILP's
// choice of GPU type for it) within the cluster's available GPUs. It returns how many it
// added, or ErrInfeasible naming the class, its target and what the fleet reaches.
func topUp(in planner.Inputs, c *formats.Cluster, w *formats.Workload, res *CostResult) (int, error) {
	added := 0
	for {
		r, err := simulate(in.Profiles, w.LLMClasses, res.Instances, res.Routes, verifySeconds, verifySeed, -1)
		if err != nil {
			return added, fmt.Errorf("qlm: simulating the fleet: %w", err)
		}
		miss := firstMiss(r)
		if miss < 0 {
			return added, nil
		}
		cl := w.LLMClasses[miss]
		// The model's most numerous kind (first in fleet order on ties).
		best, bestN := -1, 0
		n := map[string]int{}
		for i, x := range res.Instances {
			if x.Model != cl.Model {
				continue
			}
			key := x.GPU + "\x00" + strconv.Itoa(x.GPUCount)
			n[key]++
			if n[key] > bestN {
				best, bestN = i, n[key]
			}
		}
		used := map[string]int{}
		for _, x := range res.Instances {
			used[x.GPU] += max(x.GPUCount, 1)
		}
		fail := func(why string) error {
			return &planner.InputError{Problems: []string{fmt.Sprintf("%s: llm_classes[%d] (%s): rate_rps %g: %s: the least-cost fleet of %d instance(s) with %d more simulated at its own rates %s; %s",
				workloadPath(in), miss, cl.Name, cl.RateRPS, planner.ErrInfeasible, len(res.Instances)-added, added, r[miss], why)}}
		}
		if best < 0 {
			return added, fail("no instance serves its model")
		}
		x := res.Instances[best]
		if a := c.AvailableOf(x.GPU); used[x.GPU]+max(x.GPUCount, 1) > a {
			return added, fail(fmt.Sprintf("no further %s instance fits the cluster's %d available %s GPUs (raise available, or lower rate_rps)", GPUSet(formats.QLMInstance{GPU: x.GPU, GPUCount: x.GPUCount}), a, x.GPU))
		}
		if added >= maxTopUp {
			return added, fail(fmt.Sprintf("%d instances beyond the ILP's did not reach it", maxTopUp))
		}
		x.Name = "llm-" + strconv.Itoa(len(res.Instances))
		x.Queue, x.GPUs = nil, nil
		res.Instances = append(res.Instances, x)
		added++
	}
}
