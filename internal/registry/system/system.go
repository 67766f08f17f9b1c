// Package system defines what one serving system contributes to `plan`, as small interfaces,
// one per extension point, in the style of the Kubernetes scheduler framework: every system
// is a Plugin (its name, doc line and file-format sections), and implements only the
// extension points it has — Planning (a planner for the workload sections it handles and how
// `plan solve` prints its plans), Deploying (a deployer for the plan section it reads, and
// its runtime policies), Sampling (random deployments for the conformance harness), Checking
// (`plan check`), Sizing (the autopilot's capacity model), Benching (`plan bench`), Exporting
// (`plan export`), Serving (its own APIs on `plan serve`) and ONNXCutting (what `plan serve
// --workers onnx` runs). Commands type-assert a plugin to the point they need and, where it
// is missing, say the system does not provide that part yet (exit 2).
//
// A system is built by a Factory from a Handle: the dependencies the registry hands every
// plugin at construction (as kube-scheduler's framework.Handle), never package state.
// internal/registry/systems lists the built-in factories in one explicit list; commands find a system
// there and never name one.
package system

import (
	"context"
	"math/rand/v2"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/dataplane/workload"
	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/llmspec"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/serve"
)

// Plugin is what every system is: its name, description and file-format sections. The
// extension points below each embed it, so a command holding one can name the system.
type Plugin interface {
	// Name is the system's registry name ("ppipe", "pard").
	Name() string
	// Doc is a one-line description.
	Doc() string
	// Sections are its file-format sections, and solve-error naming: the one place a
	// system names its section keys.
	Sections() Sections
}

// Factory builds a system from the registry's Handle (internal/registry/systems.InTree lists them).
type Factory func(Handle) Plugin

// Handle is what the registry hands every system at construction, as kube-scheduler hands
// its plugins a framework handle: the simulator, for the planners that size plans by
// simulation (QLM, DyOrc). Planner and simulator never import each other (DESIGN.md's
// layering), so the registry is where they meet; two registries may hand different
// simulators. A field may be nil (a test's handle): a system that needs it refuses to run
// the parts that do (its planner's ErrNoSimulator) rather than fall back to something else.
type Handle struct {
	// Point simulates dep under policy pol (of policies) at its apps' planned rates for dur
	// of seeded Poisson arrivals, those before warmup not counted (< 0: the default
	// warm-up), with LLM classes classes (nil for other systems): one `plan simulate --load
	// 1` point (sim.PoissonPoint).
	Point func(dep *dataplane.Deployment, policies *dataplane.Registry, pol string, classes []llmspec.LLMClass, dur, warmup dataplane.Time, seed uint64) (*workload.Point, error)
	// Probe is Point for a capacity probe: the run stops once an application is certain to
	// miss its targets (workload.Point.Stopped), so a probe past capacity costs less and
	// every verdict is Point's (sim.PoissonProbe). nil: the capacity probes run Point.
	Probe func(dep *dataplane.Deployment, policies *dataplane.Registry, pol string, classes []llmspec.LLMClass, dur, warmup dataplane.Time, seed uint64) (*workload.Point, error)
	// Predict is `plan solve`'s prediction of plan p, deployed as dep under policy (of
	// policies), at its embedded workload's rates: whether it meets its SLOs (sim.Predict,
	// RatesOnly).
	Predict func(ctx context.Context, p *formats.Plan, dep *dataplane.Deployment, policies *dataplane.Registry, policy string) (bool, error)
}

// Planning is a system with a planner: `plan solve` picks it by the workload sections it
// handles (its Sections' Workload and Shared, Sections.WorkloadKeys).
type Planning interface {
	Plugin
	// DefaultWorkload: its planner also plans when no workload is given.
	DefaultWorkload() bool
	// Strategies are the planner's algorithms and baselines, the default first.
	Strategies() []string
	// NewPlanner returns a planner for one solve.
	NewPlanner() planner.Planner
	// Render is how `plan solve` prints a plan of this system.
	Render(p *formats.Plan) []planner.Table
}

// Deploying is a system that runs its plans: `plan simulate`, `serve`, `load` and the
// autopilot deploy a plan carrying its plan section with it.
type Deploying interface {
	Plugin
	// Deploy builds the deployment of the plan's section and names its default policy.
	Deploy(p *formats.Plan) (*dataplane.Deployment, string, error)
	// Policies are the runtime policies (and baselines) that serve its deployments.
	Policies() []dataplane.PolicySpec
}

// Sampling is a system the conformance harness (internal/registry/conformance) exercises: it runs
// every policy of the system on such deployments.
type Sampling interface {
	Deploying
	// Sample builds a small random deployment of the system's kind from r.
	Sample(r *rand.Rand) *dataplane.Deployment
}

// Checking is a system whose plans `plan check` verifies, compares and re-solves (and the
// autopilot re-solves).
type Checking interface {
	Plugin
	// Checker is its plan checker.
	Checker() planner.Checker
}

// CheckerOf is p's plan checker (Checking), nil for a system without one: what the shared
// verification (internal/registry/systems.VerifyPlan) takes.
func CheckerOf(p Plugin) planner.Checker {
	if c, ok := p.(Checking); ok {
		return c.Checker()
	}
	return nil
}

// Sizing is a system whose planned rates are the workload's, not what a plan serves (QLM,
// PARD, DyOrc): the autopilot sizes its plans by Capacity. A system without it states its
// capacity in the deployment's planned rates (a PPipe plan states the most each pipeline
// serves).
type Sizing interface {
	Plugin
	// Capacity reports the most each application of a deployed plan serves within its SLOs
	// (requests per second, at the plan's request mix), keyed by application name.
	Capacity(p *formats.Plan, dep *dataplane.Deployment) (map[string]float64, error)
}

// Benching is a system with `plan bench` subcommands.
type Benching interface {
	Plugin
	// Benches are its benches, each a constructor of one fresh value per call.
	Benches() []func() benchapi.Bench
}

// Exporting is a system whose plans `plan export --to TARGET` writes.
type Exporting interface {
	Plugin
	// Exporters are its exporters, one per target (Triton, KServe, Ray Serve).
	Exporters() []export.Exporter
}

// Serving is a system with APIs of its own on `plan serve` beside KServe v2 (QLM's OpenAI
// API, DyOrc's workflow runs).
type Serving interface {
	Plugin
	// Frontends returns fresh values of its front ends, one set per server. A frontend with
	// flags of its own implements serve.FrontendOptions.
	Frontends() []serve.Frontend
}

// ONNXCutting is a system whose stages run blocks of one model cut into pieces (PPipe):
// `plan serve --workers onnx` asks it what each stage runs (worker.ONNXCuts). A system
// without it runs a whole model of its own per stage.
type ONNXCutting interface {
	Plugin
	// ONNXCuts names the model the plan cuts and each stage's blocks.
	ONNXCuts(p *formats.Plan, dep *dataplane.Deployment) (model string, blocks [][2]int, err error)
}

// Engine is how the registry runs one LLM engine instance on its own, with no plan and no
// system's planner (`plan simulate --llm`, `plan profile --calibrate`; internal/registry/systems
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
	// system owns and registers: `llm_classes`, internal/registry/systems.Vocabulary) its planner
	// handles too, after Workload's in WorkloadKeys.
	Shared []string
	// SolveErrors, when set, puts the file that holds each of a failed solve's problems in
	// front of it (`workload.yaml: pipelines[0].slo: ...`): names maps "cluster" and
	// "workload" to the files given. nil: the problems keep the names the planner gave.
	SolveErrors func(err error, names map[string]string) error
}

// WorkloadKeys are the keys of the workload sections its planner handles ("models",
// "pipelines", ...): Workload's, in order, then Shared. Lookups by workload match them.
func (s Sections) WorkloadKeys() []string {
	keys := make([]string, 0, len(s.Workload)+len(s.Shared))
	for _, w := range s.Workload {
		keys = append(keys, w.Key())
	}
	return append(keys, s.Shared...)
}

// PlanKey is the key of the plan section its deployer reads (Plan's, also the
// Deployment.Kind it builds); "" for a system with no plan section.
func (s Sections) PlanKey() string {
	if s.Plan == nil {
		return ""
	}
	return s.Plan.Key()
}

// HasPlan reports whether p carries the plan section.
func (s Sections) HasPlan(p *formats.Plan) bool {
	if p == nil || s.Plan == nil {
		return false
	}
	return p.Sections[s.Plan.Key()].Value != nil
}
