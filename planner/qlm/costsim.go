package qlm

import (
	"fmt"
	"math"
	"strconv"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	"github.com/plan-dev/plan/planner"
)

// The cost objective's fleet, checked against the engine model. Mélange's ILP (Griggs et
// al. 2024, §5.1) sizes by closed-form bucket capacities (Capacity), which count a lifetime's
// decodes and prefills against f·SLO but not a class's ttft_slo or tpot_slo, nor the
// chunked-prefill steps that slow every decode batched with them (LLM engine digest §2): a
// Mistral-7B class with TPOT ≤ 30 ms got one H100 and missed. The ILP's fleet is therefore
// simulated at its own rates and topped up, on the GPU type its routes send the missing
// class to, until every class reaches Target. (Scaling the ILP's capacities by a simulated
// rate of each GPU type's whole class mix was tried: it mis-rates routed fleets, where a type
// serves only some sizes, and made the ILP far slower.)

// maxTopUp bounds the instances the verification adds beyond the ILP's fleet (or half of
// it, when more).
const maxTopUp = 32

// topUp simulates res's fleet at w's rates (`plan simulate --load 1`) and, while a class misses
// Target, adds one instance of the kind that serves most of the class's model (the ILP's
// choice of GPU type for it) within the cluster's available GPUs. It returns how many it
// added, or ErrInfeasible naming the class, its target and what the fleet reaches.
func topUp(sim PointSimulator, in planner.Inputs, c *formats.Cluster, w *formats.Workload, res *CostResult) (int, error) {
	added := 0
	for {
		r, err := simulate(sim, in.Profiles, llmspec.ClassesOf(w), res.Instances, res.Routes, verifySeconds, verifySeed, -1)
		if err != nil {
			return added, fmt.Errorf("qlm: simulating the fleet: %w", err)
		}
		miss := firstMiss(r)
		if miss < 0 {
			return added, nil
		}
		cl := llmspec.ClassesOf(w)[miss]
		// The GPU type the routes send most of the class to (the ILP's choice for it), and
		// of the model's instances there the first; no routes: the model's first instance.
		share := map[string]float64{}
		for _, rt := range res.Routes {
			if rt.Class == cl.Name {
				for _, g := range rt.GPUs {
					share[g.GPU] += g.Share
				}
			}
		}
		used := map[string]int{}
		for _, x := range res.Instances {
			used[x.GPU] += max(x.GPUCount, 1)
		}
		room := func(x qlmsec.QLMInstance) bool { return used[x.GPU]+max(x.GPUCount, 1) <= c.AvailableOf(x.GPU) }
		// Where the routes' type is full, the model's instances on another type with room.
		best := -1
		for i, x := range res.Instances {
			if x.Model != cl.Model {
				continue
			}
			if b := best; b < 0 || (room(x) && !room(res.Instances[b])) || (room(x) == room(res.Instances[b]) && share[x.GPU] > share[res.Instances[b].GPU]) {
				best = i
			}
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
			return added, fail(fmt.Sprintf("no further %s instance fits the cluster's %d available %s GPUs (raise available, or lower rate_rps)", GPUSet(qlmsec.QLMInstance{GPU: x.GPU, GPUCount: x.GPUCount}), a, x.GPU))
		}
		if added >= maxTopUp && added >= len(res.Instances)/2 {
			return added, fail(fmt.Sprintf("%d instances beyond the ILP's did not reach it", maxTopUp))
		}
		// A tenth more of the kind at a time (at least one), within what the cluster has.
		same := 0
		for _, y := range res.Instances {
			if y.Model == x.Model && y.GPU == x.GPU && y.GPUCount == x.GPUCount {
				same++
			}
		}
		step := max(1, same/10)
		if a := c.AvailableOf(x.GPU); a < math.MaxInt {
			step = max(1, min(step, (a-used[x.GPU])/max(x.GPUCount, 1)))
		}
		for range step {
			y := x
			y.Name = "llm-" + strconv.Itoa(len(res.Instances))
			y.Queue, y.GPUs = nil, nil
			res.Instances = append(res.Instances, y)
			added++
		}
	}
}
