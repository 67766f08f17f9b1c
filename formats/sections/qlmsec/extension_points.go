package qlmsec

import "github.com/plan-dev/plan/formats"

// GPUsUsed counts the GPUs of the plan's instances per type: gpu_count each, at least one
// (a tensor-parallel instance spans gpu_count GPUs; formats.GPUCounter).
func (s planSection) GPUsUsed(p *formats.Plan) map[string]int {
	return formats.CountGPUs(s.SectionOf, p, func(q *QLMPlan, used map[string]int) {
		for _, in := range q.Instances {
			used[in.GPU] += max(in.GPUCount, 1)
		}
	})
}
