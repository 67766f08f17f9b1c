package qlm

import (
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
)

// TestInstanceGPUsArePhysical: an instance over N GPUs (tensor parallelism) is one GPU of
// the topology that stands for N of its type, so utilization reports count GPUs, not
// instances.
func TestInstanceGPUsArePhysical(t *testing.T) {
	_, profs := bundled(t)
	prof := profs[0]
	c := llmspec.LLMClass{Name: "chat", Model: prof.Model, SLO: formats.Duration(20 * time.Second), RateRPS: 1,
		InputTokens: llmspec.TokenProfile{Mean: 500, Max: 1500}, OutputTokens: llmspec.TokenProfile{Mean: 200, Max: 400}}
	dep, err := Build([]llmspec.LLMClass{c}, Setup{Profiles: []formats.LLMProfile{prof}, Instances: []Instance{
		{Name: "i0", GPU: prof.GPU, Model: prof.Model},
		{Name: "i1", GPU: prof.GPU, Model: prof.Model, GPUCount: 4},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := dep.Topo.GPUs[0].Physical(), dep.Topo.GPUs[1].Physical(); a != 1 || b != 4 {
		t.Errorf("physical GPUs %d and %d, want 1 and 4", a, b)
	}
}
