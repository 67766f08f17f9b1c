package planner

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/plan-dev/plan/formats"
)

// Inputs are what every planner plans from: the profiles, the cluster, the workload (nil =
// the planner's default for the profiles) and references to the files they came from (for
// the plan's provenance).
type Inputs struct {
	Profiles []*formats.Profile
	Cluster  *formats.Cluster
	Workload *formats.Workload
	Refs     []formats.InputRef
}

// Defaults of the common solve settings (`plan solve --time-limit`, `--gap`). A planner may
// keep a tighter gap of its own (PPipe's: its published plans were solved to 1e-4); `plan
// solve` without --gap passes Settings.Gap 0, the planner's own.
const (
	DefaultTimeLimit = 60 * time.Second
	DefaultGap       = 0.001
)

// Settings are the solve settings every planner takes (`plan solve`'s common flags). Zero
// values mean the planner's defaults.
type Settings struct {
	// SLO overrides every workload SLO.
	SLO time.Duration
	// Strategy picks the planner's algorithm or one of its baselines ("" = its default).
	Strategy  string
	TimeLimit time.Duration
	Gap       float64
	// Deadline, when set, is when the whole command ends (`plan solve`: its start plus
	// --time-limit): the solve, the prediction of its plan, any re-solve and the writing all
	// fit before it, so a planner that reads it ends its solve by it less what follows.
	// TimeLimit stays what the plan records. Zero: TimeLimit from the planner's own start.
	Deadline time.Time
	// Deterministic records no wall-clock times, so identical inputs give identical plans.
	Deterministic bool
	// Progress, if set, receives solver progress (from the solving goroutine).
	Progress func(Progress)
	// Status, if set, receives a short description of a long phase's progress ("search:
	// 12/48 candidates simulated"), for a status line; from any goroutine.
	Status func(string)
	// ToolVersion is recorded in the plan's provenance.
	ToolVersion string
	// Objective is "" (the planner's own: throughput, GPU count, latency) or ObjectiveCost:
	// the least-cost fleet of the cluster's GPU types, within their available counts, that
	// serves the workload's rates within its SLOs (`plan solve --objective cost`).
	Objective string
	// AcceptMiss: a plan whose own simulation misses a target is still returned (its
	// prediction records the miss; `plan solve --accept-miss`), where a planner would
	// otherwise refuse it.
	AcceptMiss bool
}

// Reporter is a planner that has tables to report about its last solve beyond the plan (the
// deployment search's candidates and comparison fleets); `plan solve` prints them on stderr.
type Reporter interface {
	Report() []Table
}

// ObjectiveCost is Settings.Objective for cost-optimal fleets.
const ObjectiveCost = "cost"

// Progress is a snapshot of a running solve, in the objective's unit.
type Progress struct {
	Phase        string
	Elapsed      time.Duration
	Nodes        int64
	Incumbent    float64
	Bound        float64
	Gap          float64
	HasIncumbent bool
}

// Planner turns a workload into a plan. One value serves one solve: Options gives its own
// settings (beyond Settings) to fill, Solve reads them.
type Planner interface {
	// Options is a pointer to the planner's own settings, one typed struct at its
	// documented defaults (the planner package's Flags, which the plan records in
	// provenance.options). Code sets its fields; `plan solve` binds every field with a
	// `flag` tag to a command-line flag (internal/base/optflag), and a config file sets those
	// flags, so the three fill it the same way.
	Options() any
	// Solve plans. Errors wrap ErrInput or ErrInfeasible for bad input (exit 2), ErrNoSolution
	// when the time limit passed without a plan, anything else for solver failures.
	Solve(ctx context.Context, in Inputs, s Settings) (*formats.Plan, error)
}

// Check is one line of `plan check`: a verdict and what was compared.
type Check struct {
	OK   bool
	Line string
	// Name, Subject, Value and Limit say what Line says, for a CI script rather than a person
	// (`plan check --output json`): what was checked (snake_case, e.g.
	// "throughput_rps"), the model, application or task it concerns ("" for the whole plan),
	// the measured value and the limit it was held to (the reference with the tolerance
	// applied: at least Limit for a quantity to maximise, at most for one to minimise). Value
	// and Limit are nil where no number applies (a model missing from the plan).
	Name         string
	Subject      string
	Value, Limit *float64
}

// AtLeast is a check that got ≥ ref·(1−tol) (a quantity to maximise: throughput, accuracy).
func AtLeast(name, subject string, got, ref, tol float64, line string) Check {
	lim := ref * (1 - tol)
	return Check{OK: got >= lim, Line: line, Name: name, Subject: subject, Value: &got, Limit: &lim}
}

// AtMost is a check that got ≤ ref·(1+tol)+slack (a quantity to minimise: GPUs, load).
func AtMost(name, subject string, got, ref, tol, slack float64, line string) Check {
	lim := ref*(1+tol) + slack
	return Check{OK: got <= lim, Line: line, Name: name, Subject: subject, Value: &got, Limit: &lim}
}

// Checker checks a system's plan section for `plan check`, independently of the planner's
// solver: Verify re-derives every constraint, Compare is the golden comparison (per model or
// application, never only the objective), Resolve re-plans from the inputs the plan embeds.
type Checker interface {
	// Verify lists every violated constraint (none = the plan is valid) and a one-line
	// summary of what was verified.
	Verify(p *formats.Plan) (violations []string, summary string)
	// Compare compares got with ref, allowing a relative loss of tol.
	Compare(got, ref *formats.Plan, tol float64) []Check
	// Resolve re-plans from the plan's embedded inputs and recorded options (timeLimit > 0
	// overrides the recorded limit).
	Resolve(ctx context.Context, p *formats.Plan, timeLimit time.Duration) (*formats.Plan, error)
}

// Table is a rendered table: what `plan solve` prints for a plan.
type Table struct {
	Header []string
	Rows   [][]string
}

// Sentinel errors planners wrap.
var (
	// ErrInput marks invalid planning input (exit 2).
	ErrInput = errors.New("invalid planning input")
	// ErrInfeasible marks an SLO (or accuracy target) no plan can meet (exit 2).
	ErrInfeasible = errors.New("SLO cannot be met")
	// ErrNoSolution marks a solve that ended (time limit) without any plan (exit 1).
	ErrNoSolution = errors.New("no plan found within the time limit")
)

// InputError lists every problem found in the inputs; it matches ErrInput. Problems start
// with the input they concern ("cluster: ", "workload: ", "profile: "), which the CLI
// replaces with the file names.
type InputError struct{ Problems []string }

func (e *InputError) Error() string { return strings.Join(e.Problems, "\n") }

// Unwrap makes errors.Is(err, ErrInput) true.
func (e *InputError) Unwrap() error { return ErrInput }
