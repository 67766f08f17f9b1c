package qlm

import (
	"fmt"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
)

// MixedDeployment is a fixed QLM set-up at n instances and load × its rate (the simulator's
// scale benchmarks and `plan bench speed` grow n at load 1): A100 instances alternately
// loaded with the small (7B) and large (13B) models of Sample's profiles, an interactive
// class on each model and a batch class on the small one, at a per-instance rate that keeps
// the instances busy without overload. Only N grows with n; the work per request stays the
// same.
func MixedDeployment(n int, load float64) (*dataplane.Deployment, error) {
	const kv = 6000
	setup := Setup{Profiles: []formats.LLMProfile{
		sampleProfile("small", "A100", 7, 1, kv),
		sampleProfile("large", "A100", 13, 1.6, kv/2),
	}}
	for i := 0; i < n; i++ {
		setup.Instances = append(setup.Instances, Instance{Name: fmt.Sprintf("i%d", i), GPU: "A100", Model: []string{"small", "large"}[i%2]})
	}
	tok := func(m float64) llmspec.TokenProfile {
		return llmspec.TokenProfile{Mean: m, Std: m / 2, Max: int(4 * m)}
	}
	per := float64(n) * load
	cls := []llmspec.LLMClass{
		{Name: "chat", Model: "small", SLO: formats.Duration(2 * time.Second), Interactive: true, RateRPS: 3 * per, InputTokens: tok(100), OutputTokens: tok(30)},
		{Name: "code", Model: "large", SLO: formats.Duration(4 * time.Second), Interactive: true, RateRPS: 1 * per, InputTokens: tok(200), OutputTokens: tok(40)},
		{Name: "batch", Model: "small", SLO: formats.Duration(30 * time.Second), RateRPS: 1 * per, InputTokens: tok(300), OutputTokens: tok(60)},
	}
	return Build(cls, setup)
}
