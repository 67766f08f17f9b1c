// Package system defines what one serving system contributes to `plan`: a planner for the
// workload sections it handles, a deployer for the plan section it reads, its runtime
// policies, a checker for `plan check`, its benches and its exporters. internal/systems
// lists the built-in systems; commands find a system there and never name one.
package system

import (
	"math/rand/v2"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/internal/benchapi"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/serve/worker"
)

// System is one system's parts. Every field but Name may be empty where the system does not
// provide that part yet; commands then say so (exit 2).
type System struct {
	// Name is the system's registry name ("ppipe", "pard").
	Name string
	// Doc is a one-line description.
	Doc string

	// DefaultWorkload: its planner also plans when no workload is given (the sections it
	// handles are its Sections.Workload and Sections.Shared, System.WorkloadSections).
	DefaultWorkload bool
	// Strategies are the planner's algorithms and baselines, the default first.
	Strategies []string
	// NewPlanner returns a planner for one solve.
	NewPlanner func() planner.Planner
	// Render is how `plan solve` prints a plan of this system.
	Render func(p *formats.Plan) []planner.Table

	// Deploy builds the deployment of the plan's section and names its default policy.
	Deploy func(p *formats.Plan) (*dataplane.Deployment, string, error)
	// Policies are the runtime policies (and baselines) that serve its deployments.
	Policies []dataplane.PolicySpec
	// Sample builds a small random deployment of the system's kind from r: the conformance
	// harness (internal/conformance) runs every policy of the system on such deployments.
	Sample func(r *rand.Rand) *dataplane.Deployment

	// Checker verifies, compares and re-solves its plans for `plan check`.
	Checker planner.Checker
	// Capacity reports the most each application of a deployed plan serves within its SLOs
	// (requests per second, at the plan's request mix), keyed by application name: what the
	// autopilot sizes a plan by. nil: the deployment's planned rates are its
	// capacity (a PPipe plan states the most each pipeline serves); systems whose planned
	// rates are the workload's (QLM, PARD, DyOrc) must set it for the autopilot to size
	// their plans.
	Capacity func(p *formats.Plan, dep *dataplane.Deployment) (map[string]float64, error)

	// Benches are its `plan bench` subcommands, one fresh value per call.
	Benches []func() benchapi.Bench

	// Exporters write its plans for `plan export --to TARGET`, one per target (Triton,
	// KServe, Ray Serve).
	Exporters []export.Exporter

	// Frontends are its own APIs on `plan serve` beside KServe v2 (QLM's OpenAI API,
	// DyOrc's workflow runs), one fresh value per server. A frontend with flags of its own
	// implements serve.FrontendOptions.
	Frontends []func() serve.Frontend

	// Sections are its file-format sections, and solve-error naming: the one place a system
	// names its section keys (WorkloadSections, PlanSection and HasPlan read them).
	Sections Sections
	// ONNXCuts tells `plan serve --workers onnx` what its stages run: one model cut into
	// blocks per stage (PPipe), or nil/"" when each stage runs a whole model of its own.
	ONNXCuts worker.ONNXCuts
}

// Engine is how the registry runs one LLM engine instance on its own, with no plan and no
// system's planner (`plan simulate --llm`, `plan profile --calibrate`; internal/systems
// Registry.Engine): what a fidelity replay needs (LLM engine digest §5: one instance, the real deployment's
// engine settings and measured profile, the trace's requests).
type Engine struct {
	// Deploy builds the deployment of one instance of prof (its model on its GPU count)
	// serving classes, each an application of the deployment in the order given.
	Deploy func(prof formats.LLMProfile, classes []llmspec.LLMClass) (*dataplane.Deployment, error)
	// Policy is the default policy: the one that schedules as the engine itself does (vLLM's
	// FCFS scheduler), not a planner's queueing on top of it.
	Policy string
	// EngineOnly are the policies that read only an engine's fields of the profile
	// (formats.UseReplay); any other reads the planner's fields too (formats.UsePlan).
	EngineOnly []string
}

// Sections are what a system registers in the file formats (DESIGN.md "Systems as
// plug-ins"): its plan section and workload sections, each decoded, validated,
// cross-checked and described by the section itself (formats.SectionOf values in the
// system's formats/sections package).
type Sections struct {
	// Plan is its plan section: the one its deployer reads, under the key that is also
	// Deployment.Kind.
	Plan formats.Section
	// Workload are the workload sections it registers and its planner handles, in the order
	// help lists them.
	Workload []formats.Section
	// Shared are the keys of the registry's shared workload sections (vocabulary no one
	// system owns and registers: `llm_classes`, internal/systems.Vocabulary) its planner
	// handles too, after Workload's in WorkloadSections.
	Shared []string
	// SolveErrors, when set, puts the file that holds each of a failed solve's problems in
	// front of it (`workload.yaml: pipelines[0].slo: ...`): names maps "cluster" and
	// "workload" to the files given. nil: the problems keep the names the planner gave.
	SolveErrors func(err error, names map[string]string) error
}

// WorkloadSections are the keys of the workload sections its planner handles ("models",
// "pipelines", ...): its Sections.Workload's, in order, then its Sections.Shared. Lookups by
// workload match them.
func (s System) WorkloadSections() []string {
	keys := make([]string, 0, len(s.Sections.Workload)+len(s.Sections.Shared))
	for _, w := range s.Sections.Workload {
		keys = append(keys, w.Key())
	}
	return append(keys, s.Sections.Shared...)
}

// PlanSection is the key of the plan section its deployer reads (its Sections.Plan's, also
// the Deployment.Kind it builds); "" for a system with no plan section.
func (s System) PlanSection() string {
	if s.Sections.Plan == nil {
		return ""
	}
	return s.Sections.Plan.Key()
}

// HasPlan reports whether p carries the system's plan section.
func (s System) HasPlan(p *formats.Plan) bool {
	if p == nil || s.Sections.Plan == nil {
		return false
	}
	return p.Sections[s.Sections.Plan.Key()].Value != nil
}

// PlanCapacity is a Capacity that reads the plan alone, not its deployment (of: DyOrc's,
// QLM's and PARD's planners size a plan by what its placement serves).
func PlanCapacity(of func(*formats.Plan) (map[string]float64, error)) func(*formats.Plan, *dataplane.Deployment) (map[string]float64, error) {
	return func(p *formats.Plan, _ *dataplane.Deployment) (map[string]float64, error) { return of(p) }
}
