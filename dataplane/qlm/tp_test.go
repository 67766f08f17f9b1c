package qlm

import (
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/sim"
)

// TestTensorParallelProfiles: an instance runs the profiles measured at its GPU count.
// A model profiled on one A100 and on two (tensor parallelism 2, a larger KV
// capacity) is two engines: a one-GPU instance holds the one-GPU KV capacity, not the
// two-GPU one (before, the later profile of a model and GPU type replaced the other), and a
// two-GPU instance the two-GPU capacity.
func TestTensorParallelProfiles(t *testing.T) {
	one := sampleProfile("m", "A100", 7, 1, 100_000)
	two := sampleProfile("m", "A100", 7, 0.6, 300_000)
	two.GPUCount = 2
	cls := []llmspec.LLMClass{{Name: "c", Model: "m", SLO: formats.Duration(20e9), RateRPS: 1,
		InputTokens: llmspec.TokenProfile{Mean: 100, Max: 1000}, OutputTokens: llmspec.TokenProfile{Mean: 100, Max: 1000}}}
	cases := []struct {
		name  string
		count int
		want  int
	}{
		{"one GPU", 0, 100_000},
		{"two GPUs", 2, 300_000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dep, err := Build(cls, Setup{Profiles: []formats.LLMProfile{one, two}, Instances: []Instance{{Name: "i", GPU: "A100", GPUCount: tc.count, Model: "m"}}})
			if err != nil {
				t.Fatal(err)
			}
			lim, err := Limits(dep)
			if err != nil {
				t.Fatal(err)
			}
			if lim[0].KVTokens != tc.want {
				t.Errorf("limits: KV tokens %d, want %d", lim[0].KVTokens, tc.want)
			}
			// The policy's engine: a 150,000-token prompt fits the two-GPU KV cache only.
			p, err := Registry().New(dep, dataplane.Config{Policy: PolicyQLM}, PolicyQLM)
			if err != nil {
				t.Fatal(err)
			}
			s, err := sim.New(dep, p, []sim.Source{&sim.Times{T: []dataplane.Time{0}}}, sim.Options{Duration: dataplane.Second,
				Attrs: func(dataplane.AppID, int64) dataplane.Attrs { return dataplane.Attrs{InTokens: 150_000, OutTokens: 2} }})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Run(); err != nil {
				t.Fatal(err)
			}
			if tooLarge := p.(*Policy).Stats().TooLarge; (tooLarge == 1) != (tc.want < 150_000) {
				t.Errorf("policy: %d requests too large for the instance's KV cache of %d tokens", tooLarge, tc.want)
			}
		})
	}
}
