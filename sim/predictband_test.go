package sim

import (
	"reflect"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/profiler/llm"
)

// TestPredictionExpectedError: an LLM class's recorded band is its model's profile's, on
// the GPUs the deployment runs it on; the widest where several serve it; every profile of
// the model where the topology matches none; none where no profile of the model is embedded.
func TestPredictionExpectedError(t *testing.T) {
	// A100's step times measured by kernel tables, L4's estimated by the roofline: the
	// roofline's band is the wider, so which profile is chosen shows in the band.
	a100 := formats.LLMProfile{Model: "llama-3.1-8b", GPU: "A100", GPUCount: 1, Backend: "roofline", StepTimes: "measured: kernel tables"}
	l4 := formats.LLMProfile{Model: "llama-3.1-8b", GPU: "L4", GPUCount: 1, Backend: "roofline"}
	a100tp2 := a100
	a100tp2.GPUCount = 2
	other := formats.LLMProfile{Model: "mistral-7b", GPU: "H100", GPUCount: 1, Backend: "roofline"}
	plan := &formats.Plan{Provenance: formats.Provenance{Embedded: &formats.EmbeddedInputs{Profiles: []formats.Profile{
		{LLMs: []formats.LLMProfile{a100, other}}, {LLMs: []formats.LLMProfile{l4, a100tp2}}}}}}
	band := func(p formats.LLMProfile) formats.ExpectedError {
		return toExpectedError(llm.BandsFor(llm.RegimeOf(&p), llm.ValidationRuns()))
	}
	if band(a100) == band(l4) {
		t.Fatalf("the A100 and L4 bands are the same (%+v): the test cannot tell them apart", band(a100))
	}
	gpus := func(gs ...dataplane.GPU) *dataplane.Deployment {
		return &dataplane.Deployment{Topo: dataplane.Topology{GPUs: gs}}
	}
	wide := band(a100).Widest(band(l4)).Widest(band(a100tp2))
	for _, tc := range []struct {
		name  string
		plan  *formats.Plan
		dep   *dataplane.Deployment
		model string
		want  *formats.ExpectedError
	}{
		{"served on an A100", plan, gpus(dataplane.GPU{Type: "a100"}), "llama-3.1-8b", &[]formats.ExpectedError{band(a100)}[0]},
		{"served on an L4", plan, gpus(dataplane.GPU{Type: "L4"}, dataplane.GPU{Type: "H100"}), "llama-3.1-8b", &[]formats.ExpectedError{band(l4)}[0]},
		{"served on two A100s at TP 2", plan, gpus(dataplane.GPU{Type: "A100", Count: 2}), "llama-3.1-8b", &[]formats.ExpectedError{band(a100tp2)}[0]},
		{"served on both: the widest", plan, gpus(dataplane.GPU{Type: "A100"}, dataplane.GPU{Type: "L4"}), "llama-3.1-8b",
			&[]formats.ExpectedError{band(a100).Widest(band(l4))}[0]},
		{"no GPU of the topology matches: every profile", plan, gpus(dataplane.GPU{Type: "T4"}), "llama-3.1-8b", &wide},
		{"no profile of the model", plan, gpus(dataplane.GPU{Type: "A100"}), "vicuna-13b", nil},
		{"no embedded inputs", &formats.Plan{}, gpus(dataplane.GPU{Type: "A100"}), "llama-3.1-8b", nil},
		{"not an LLM class", plan, gpus(dataplane.GPU{Type: "A100"}), "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := expectedError(tc.plan, tc.dep, tc.model)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("expectedError = %+v, want %+v", got, tc.want)
			}
		})
	}
}
