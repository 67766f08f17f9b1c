// Package cascade is CascadeServe's gear planner (Kossmann et al.,
// CascadeServe): cascade search with Pareto filtering (§4.2), workload
// adaptation over QPS ranges (§4.3), hardware mapping — greedy replica pruning, then the
// load-balancing LP through solver (§4.4) —, dynamic batching sized by a discrete-event
// simulation of each gear (§4.5–4.6), all inside the error-driven co-optimization loop of
// the paper's Algorithm 1 (§4.1). It plans under a latency SLO (maximize accuracy) or an
// accuracy SLO (minimize latency, or GPUs with MinGPUs), and writes the plan's cascade
// section. The baselines (DynBa, MS+, no-switch, no-cascade) are strategies of the same
// planner; Verify re-derives every invariant of a plan.
package cascade

import (
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"

	dpc "github.com/plan-dev/plan/dataplane/cascade"
)

// Task is the planner's view of one cascades entry (dataplane/cascade.Task: validation
// outputs and profiles), with the planner's methods (search, evaluation, simulation).
type Task struct{ *dpc.Task }

// ModelInfo is a model's profile as the planner uses it.
type ModelInfo = dpc.ModelInfo

// Hardware is the cluster as the planner sees it.
type Hardware = dpc.Hardware

// NewTask builds the task of workload cascade c (at path p) from the profiles on GPU type
// gpu (dataplane/cascade.NewTask).
func NewTask(c *cascadesec.Cascade, p string, profiles []*formats.Profile, gpu string, gpuMem int64) (*Task, []string) {
	t, probs := dpc.NewTask(c, p, profiles, gpu, gpuMem)
	if probs != nil {
		return nil, probs
	}
	return &Task{t}, nil
}

// HardwareOf returns the planner's view of cluster cl (one GPU type).
func HardwareOf(cl *formats.Cluster) (Hardware, []string) { return dpc.HardwareOf(cl) }
