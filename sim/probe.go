package sim

import (
	rt "github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats/llmspec"
)

// PoissonProbe is PoissonPoint for a capacity probe, whose verdict is whether every
// application holds its targets (an LLM class each SLO it sets at its percentile,
// workload.LLMChecks; any other application its attainment target): the run stops as soon
// as one application has missed on more of the requests the run will count than its
// percentile allows (settle.go), and its Point says so (Point.Stopped). Its metrics are
// then those of the requests finished so far, on which that application fails too (its
// misses over fewer requests). A point that holds is never stopped, so its metrics and
// verdict are PoissonPoint's; one that fails fails either way, the overload's dearest part
// (a queue growing to the window's end) not simulated. The capacity judge's probes
// (planner/llmcap) are handed it by the registry, as PoissonPoint.
func PoissonProbe(dep *rt.Deployment, policies *rt.Registry, pol string, classes []llmspec.LLMClass, dur, warmup rt.Time, seed uint64) (*Point, error) {
	cfg, err := poissonConfig(dep, policies, pol, classes, dur, warmup, seed)
	if err != nil {
		return nil, err
	}
	cfg.probe = &judge{targets: appTargets(dep, cfg.LLM), llm: cfg.LLM, dep: dep}
	return RunPoint(cfg, 1)
}
