package systems

import (
	"slices"

	"github.com/plan-dev/plan/dataplane"
	dq "github.com/plan-dev/plan/dataplane/qlm"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/internal/registry/system"
)

// llmEngine is one LLM engine instance run on its own (`plan simulate --llm`, `plan profile
// --calibrate`): the registry's, beside the LLM vocabulary it replays (Vocabulary), not a
// system's. QLM is one policy over the engine; the replay runs the engine's own scheduling,
// vLLM's FCFS step scheduler (LLM engine digest §2, §5: one instance with the real
// deployment's engine settings and measured profile). The instance data plane that hosts the
// engine model (dataplane/llm) with that scheduler is dataplane/qlm's, its vLLM baseline;
// EDF orders by deadline alone, so it too reads only the engine's fields of the profile.
var llmEngine = system.Engine{
	Deploy:     engineDeployment,
	Policy:     dq.PolicyFCFS,
	EngineOnly: []string{dq.PolicyFCFS, dq.PolicyEDF},
}

// engineDeployment is one instance of prof, named after its model, serving classes.
func engineDeployment(prof formats.LLMProfile, classes []llmspec.LLMClass) (*dataplane.Deployment, error) {
	in := dq.Instance{Name: prof.Model + "-0", GPU: prof.GPU, Model: prof.Model}
	if prof.GPUCount > 1 {
		in.GPUCount = prof.GPUCount // one instance on all its GPUs (tensor parallelism)
	}
	return dq.Build(classes, dq.Setup{Profiles: []formats.LLMProfile{prof}, Instances: []dq.Instance{in}})
}

// Engine is how r replays a trace through one LLM engine instance (system.Engine), nil when
// r's systems register none of the engine's policies (a registry without the LLM instance
// data plane cannot run it).
func (r *Registry) Engine() *system.Engine {
	pols := r.Policies()
	if slices.ContainsFunc(llmEngine.EngineOnly, func(p string) bool { _, ok := pols.Lookup(p); return !ok }) {
		return nil
	}
	e := llmEngine
	e.EngineOnly = slices.Clone(e.EngineOnly)
	return &e
}
