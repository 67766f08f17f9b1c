package worker

import (
	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// ONNXCuts is how the plan's system tells onnx workers what its stages run: one model cut
// into blocks, blocks[s] = [first, end) for stage s of dep (PPipe's partitions), or model ""
// when each stage runs a whole model of its own (Stage.Model: a cascade, a workflow). The
// registry gives the plan's system's (internal/registry/systems); serve assumes no system.
type ONNXCuts func(p *formats.Plan, dep *dataplane.Deployment) (model string, blocks [][2]int, err error)

// ONNXOptions configure the onnx workers.
type ONNXOptions struct {
	// Model is the ONNX file the plan's profile was made from (node i of the model is layer
	// i of the profile, which is how the onnx profiler numbers layers); for plans whose
	// stages each run a whole model (a cascade), a directory holding MODEL.onnx for each.
	Model string
	// Device is cpu or cuda:N.
	Device string
	// Threads is the intra-op thread count per session (0 = ONNX Runtime's default).
	Threads int
	// Cuts asks the plan's system what each stage runs (nil: every stage runs a whole model).
	Cuts ONNXCuts
}
