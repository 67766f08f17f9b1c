package ppipe

import (
	"fmt"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// ONNXCuts says what onnx workers run for a PPipe plan (PPipe §3: a model pre-partitioned
// into blocks, each pipeline stage a contiguous range of them): the plan's one model, and
// for each stage of dep (its deployment) the blocks [first, end) the stage runs. A plan with
// no PPipe section gives "" (its stages run whole models); one serving several models is an
// error, since --model is one file.
func ONNXCuts(p *formats.Plan, dep *dataplane.Deployment) (model string, blocks [][2]int, err error) {
	if ppipesec.PlanOf(p) == nil {
		return "", nil, nil
	}
	if len(ppipesec.PlanOf(p).Models) != 1 {
		return "", nil, fmt.Errorf("onnx workers serve plans of exactly one model (the one in --model)")
	}
	pm := ppipesec.PlanOf(p).Models[0]
	blocks = make([][2]int, len(dep.Stages))
	for si := range dep.Stages {
		st := &dep.Stages[si]
		if st.Pipeline < 0 || st.Pipeline >= len(pm.Pipelines) || st.Index >= len(pm.Pipelines[st.Pipeline].Partitions) {
			return "", nil, fmt.Errorf("stage %s has no partition in the plan", st.Name)
		}
		part := pm.Pipelines[st.Pipeline].Partitions[st.Index]
		blocks[si] = [2]int{part.FirstBlock, part.EndBlock}
	}
	return pm.Model, blocks, nil
}
