package qlm

import (
	"slices"

	"github.com/plan-dev/plan/export/vllm"
)

// fleet is a QLM plan's view for the targets that render vLLM fleets (export/gateway): its
// instances with their engines (the same engines every other target runs) and the classes.
// The virtual queues are not part of it: a gateway routes by its endpoint picker's scores,
// and the classes' priorities stand for the queue order.
func fleet(l *layout) (vllm.Fleet, error) {
	f := vllm.Fleet{System: "QLM", Classes: slices.Clone(l.rec.Classes)}
	for _, in := range l.insts {
		f.Instances = append(f.Instances, vllm.Instance{Name: in.in.Name, Unit: in.unit, Model: in.in.Model, GPU: in.in.GPU,
			GPUCount: in.in.GPUCount, Role: in.in.Role, Served: slices.Clone(in.served), KVCapacityTokens: in.kvTokens, Engine: in.engine, Version: in.version})
	}
	return f, nil
}
