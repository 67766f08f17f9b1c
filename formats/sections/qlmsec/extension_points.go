package qlmsec

import "github.com/plan-dev/plan/formats"

// GPUsUsed counts the GPUs of the plan's instances per type: gpu_count each, at least one
// (a tensor-parallel instance spans gpu_count GPUs; formats.GPUCounter).
func (planSection) GPUsUsed(p *formats.Plan) map[string]int {
	q := PlanOf(p)
	if q == nil {
		return nil
	}
	used := map[string]int{}
	for _, in := range q.Instances {
		used[in.GPU] += max(in.GPUCount, 1)
	}
	return used
}
