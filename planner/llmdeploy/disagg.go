package llmdeploy

import (
	"fmt"

	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/planner/llmcap"
)

// DisaggregatedEvaluator replays one disaggregated unit: Ratio[0] prefill instances and
// Ratio[1] decode instances of the candidate's roles joined by KV links of
// Options.KVLinkGBps (dataplane/llm ReplayDisagg: least outstanding tokens routing
// per side, FCFS per engine, the KV pulled by the decode side when it has blocks, the first
// token streamed by the decode side so TTFT includes the transfer; llm-deploy-search.md §1).
type DisaggregatedEvaluator struct{}

// Probe implements Evaluator.
func (DisaggregatedEvaluator) Probe(c Candidate, classes []llmspec.LLMClass, rate float64, o Options) ([]ClassPrediction, error) {
	if c.Mode != Disaggregated || len(c.Roles) != 2 {
		return nil, fmt.Errorf("llmdeploy: disaggregated candidate %s has %d roles, want prefill and decode", c.Label(), len(c.Roles))
	}
	o = o.withDefaults()
	reqs, cls := llmcap.Draw(classes, rate, o.Requests, o.Seed)
	d := llm.Disagg{Prefill: llm.NewModel(c.Roles[0].Profile), Decode: llm.NewModel(c.Roles[1].Profile), P: c.instances(0), D: c.instances(1),
		LinkGBps: o.KVLinkGBps, Watch: o.watch(classes, reqs, cls)}
	res, _, err := llm.ReplayDisagg(d, reqs)
	if err != nil {
		return nil, fmt.Errorf("llmdeploy: %s: %w", c.Label(), err)
	}
	return Judge(classes, reqs, cls, res), nil
}
