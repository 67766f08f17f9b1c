package dyorc

import "github.com/plan-dev/plan/dataplane"

// SpreadDeployment places w on g A800 GPUs (8 per server), each service warm on GPU
// service mod g: the cluster of the simulator's scale benchmarks and `plan bench speed` at
// any size.
func SpreadDeployment(w *Workflow, g int) (*dataplane.Deployment, error) {
	warm := make([][]int, g)
	for sv := range w.Services {
		warm[sv%g] = append(warm[sv%g], sv)
	}
	return NewDeployment(w, Cluster{GPUs: g, PerServer: 8, MemBytes: 80e9, Type: "A800"}, warm, DefaultNet)
}
