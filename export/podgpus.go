package export

import (
	"fmt"
	"slices"
)

// PodGPUs numbers a Triton model's GPUs as its own server sees them. Every exported model
// runs in Triton servers of its own (deploy.go: a Deployment per model, each pod with the
// GPUs its instance groups list), and Kubernetes' device plugin shows a container the GPUs it
// was given as 0..n-1 whichever physical GPUs they are, so an instance group's gpus are ids
// within the pod, never the plan's fleet-wide indices (Triton model configuration,
// instance_group.gpus: the GPU ids the server sees). plan holds each instance group's GPUs
// as the plan numbers them; the result holds the same groups with each distinct GPU replaced
// by its rank among them (the plan's order kept), so two groups on one GPU still share it.
// The instance groups' names keep the plan's GPUs (g<gpu>, r<replica>) and the parameters
// the plan's placement, for readers and the coordinator.
func PodGPUs(plan [][]int) [][]int {
	var ids []int
	for _, g := range plan {
		ids = append(ids, g...)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	out := make([][]int, len(plan))
	for i, g := range plan {
		out[i] = make([]int, len(g))
		for j, x := range g {
			out[i][j], _ = slices.BinarySearch(ids, x)
		}
	}
	return out
}

// PodFits refuses a model whose pod would need more GPUs than one server of its type has
// (perServer[gpu]; unknown: any count fits): a pod runs on one node, and a model whose
// instances the plan spreads over more GPUs than a server holds needs servers of their own
// that these exports do not split it into.
func PodFits(model, gpu string, plan [][]int, perServer map[string]int) error {
	n := 0
	if len(plan) > 0 {
		local := PodGPUs(plan)
		for _, g := range local {
			for _, x := range g {
				n = max(n, x+1)
			}
		}
	}
	if ps := perServer[gpu]; ps > 0 && n > ps {
		return fmt.Errorf("triton: model %s: its instances run on %d %s GPUs, more than a server's %d (per_server): a Triton server's pod runs on one node; export a plan whose models fit a server", model, n, gpu, ps)
	}
	return nil
}
