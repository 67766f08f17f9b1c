package dyorcsec

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/formats"
)

// DyOrc's section types: the `workflows` section of a workload (services and applications
// built from steps, DyOrc §2.1) and the `dyorc` section of a plan. They are values of this
// package's Sections (PlanSection, WorkloadSection), read from a document with PlanOf and
// WorkflowsOf: formats holds none of them.

// Workflows describes DyOrc's dynamic workflows: services and applications built from
// steps with guards, choices, fan-out and loops.
type Workflows struct {
	Services map[string]Service `json:"services"`
	Apps     map[string]App     `json:"apps"`
}

// Service is a batched model call shared by applications.
type Service struct {
	WeightsGB float64 `json:"weights_gb"`
	ActGB     float64 `json:"act_gb,omitempty"`
	MaxBatch  int     `json:"max_batch"`
	// Latency is inline for tests; normally it comes from the profile.
	Latency *ServiceLatency `json:"latency,omitempty"`
	OutKB   float64         `json:"out_kb,omitempty"`
	// OutKind is "tensor" (default: moved between GPUs by the tensor tier) or "general"
	// (text, JPEG: serialised RPC, DyOrc §6.2 tier 3).
	OutKind string `json:"out_kind,omitempty"`
	// WorkSpread s says how much a request's own work varies: each request costs a factor
	// drawn uniformly from [1−s, 1+s] of the nominal (an LLM's output length: 0.5 gives
	// U(0.5, 1.5)). Schedulers plan at the nominal; the simulator and emulated workers run
	// the drawn work. 0 (the default): every request costs the same.
	WorkSpread float64 `json:"work_spread,omitempty"`
}

// ServiceLatency is a linear batch-latency model: base + per_item·b.
type ServiceLatency struct {
	BaseUs    float64 `json:"base_us"`
	PerItemUs float64 `json:"per_item_us"`
}

// App is a workflow: a list of steps or one loop.
type App struct {
	SLO formats.Duration `json:"slo,omitempty"`
	// RateRPS is the app's expected request rate (plan solve places services for it).
	RateRPS float64 `json:"rate_rps,omitempty"`
	Steps   []Step  `json:"steps,omitempty"`
	Loop    *Loop   `json:"loop,omitempty"`
}

// Step is one service call (or a choice among services) inside a workflow.
type Step struct {
	ID      string `json:"id"`
	Service string `json:"svc,omitempty"`
	// Choice calls exactly one of several services; weights are for the simulator only.
	Choice map[string]float64 `json:"choice,omitempty"`
	After  []string           `json:"after,omitempty"`
	// When is a guard evaluated on outputs; P is its probability in the simulator.
	When   string  `json:"when,omitempty"`
	P      float64 `json:"p,omitempty"`
	Fanout int     `json:"fanout,omitempty"`
}

// Loop repeats its body; PStop[i] is the chance of stopping after round i+1.
type Loop struct {
	ID      string    `json:"id"`
	MaxIter int       `json:"max_iter"`
	Until   string    `json:"until,omitempty"`
	PStop   []float64 `json:"p_stop"`
	Body    []Step    `json:"body"`
}

// DyOrcPlan deploys workflow services onto GPUs and sets the speculative scheduler's knobs.
type DyOrcPlan struct {
	Deployments []ServiceDeployment `json:"deployments"`
	Params      map[string]float64  `json:"params,omitempty"`
	// Placement lists, per GPU of the plan's cluster (in cluster order, GPU 0 first), the
	// services resident there at start (the warm initial placement the scheduler starts from:
	// DyOrc schedules online, so a plan only seeds it). Empty = the deployer spreads the
	// replicas itself.
	Placement []GPUServices `json:"placement,omitempty"`
	// Policy is the runtime policy the plan names as its default ("" = dyorc).
	Policy string `json:"policy,omitempty"`
}

// GPUServices is the set of services one GPU holds at start.
type GPUServices struct {
	GPU      int      `json:"gpu"`
	Services []string `json:"services"`
}

// ServiceDeployment places replicas of a service.
type ServiceDeployment struct {
	Service  string `json:"service"`
	GPU      string `json:"gpu"`
	Replicas int    `json:"replicas"`
	MaxBatch int    `json:"max_batch"`
}

// StepInput is the `after` reference to the request's own input.
const StepInput = "$in"

// ParseStepRef splits an `after` reference into the step it names and its suffix:
// "x?" (if x ran), "x*" (all copies of x) or "" (x must run). "$in" is the request input;
// "loop.prev" inside a loop body is the previous round.
func ParseStepRef(ref string) (step string, suffix string) {
	if n := len(ref); n > 0 && (ref[n-1] == '?' || ref[n-1] == '*') {
		return ref[:n-1], ref[n-1:]
	}
	return ref, ""
}

// Guard is a parsed `when` guard of a workflow step (our file format for the conditional
// steps of DyOrc §2.1): a reference to the
// request input ("in") or an earlier step's output, a dotted field path, and an optional
// comparison with a number. "ask.need" tests a field for truth; "in.images>0" compares.
type Guard struct {
	// Ref is "in" or a step id.
	Ref string
	// Fields is the dotted path after Ref (may be empty).
	Fields []string
	// Op is one of > >= < <= == != ("" = a truth test).
	Op    string
	Value float64
}

// guardOps lists the comparison operators, two-character ones first so ">=" is not read as ">".
var guardOps = []string{">=", "<=", "==", "!=", ">", "<"}

// ParseGuard parses a `when` guard. It only checks the syntax; ValidateWorkflowGuard checks
// that the reference can be evaluated within its app.
func ParseGuard(s string) (Guard, error) {
	var g Guard
	expr := strings.TrimSpace(s)
	lhs := expr
	for _, op := range guardOps {
		if i := strings.Index(expr, op); i >= 0 {
			lhs = strings.TrimSpace(expr[:i])
			rhs := strings.TrimSpace(expr[i+len(op):])
			x, err := strconv.ParseFloat(rhs, 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return g, fmt.Errorf("right-hand side %q of %s is not a finite number", rhs, op)
			}
			g.Op, g.Value = op, x
			break
		}
	}
	if lhs == "" {
		return g, fmt.Errorf("no output reference before the comparison")
	}
	parts := strings.Split(lhs, ".")
	for _, p := range parts {
		if !isGuardIdent(p) {
			return g, fmt.Errorf("%q is not an identifier (a guard is ref.field[.field] [op number])", p)
		}
	}
	g.Ref, g.Fields = parts[0], parts[1:]
	if g.Ref == "in" && len(g.Fields) == 0 {
		return g, fmt.Errorf("the request input has no value of its own: name a field (in.FIELD)")
	}
	return g, nil
}

func isGuardIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'):
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// ServiceBytes is the GPU memory a service occupies: its weights plus its activation
// reserve (act_gb, or 20 % of the weights when not given: our default, as DyOrc gives none).
func ServiceBytes(s Service) int64 {
	act := s.ActGB
	if act == 0 {
		act = 0.2 * s.WeightsGB
	}
	return int64((s.WeightsGB + act) * 1e9)
}
