package dataplane

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Policy is the batching/dispatch extension point: the one decision maker every engine runs.
// It sees every event (arrivals, stage arrivals, timers, ticks, and the batch/transfer
// completions that double as feedback) and appends decisions.
//
// Contract: Handle is a deterministic function of (the policy's own state, the View, ev, now).
// It must not read a clock, sleep, start goroutines or keep references to borrowed slices.
// Policy-private state (reservation tables, queues) is fine: it is part of "state".
type Policy interface {
	// Name is the registry name.
	Name() string
	// Attach is called once, before the first event, with the engine's read-only view.
	Attach(v View) error
	// Handle reacts to ev at time now.
	Handle(now Time, ev *Event, out *Decisions)
}

// Forgetter is implemented by policies that keep per-request state (tables indexed or keyed
// by ReqID). Engine.Compact calls Forget for every request it retires from its table (finished
// and held by no open batch), in increasing ID order; the policy drops everything it keeps for
// id, so its memory depends on what is in flight, never on how many requests have passed.
// A policy whose state needs no forgetting need not implement it. The conformance harness
// checks that a policy's state stays bounded when the engine compacts.
type Forgetter interface {
	Forget(id ReqID)
}

// Ticker is implemented by policies with a periodic control loop (PARD's state planner,
// CascadeServe's QPS poll, QLM's re-plan). The engine arms the first tick at time 0 and
// re-arms it every TickEvery after delivering EvTick.
type Ticker interface {
	TickEvery() Time
}

// FailureMode is what a policy does when a worker fails (EvWorkerDown).
type FailureMode uint8

const (
	// FailDrop: the engine drops the requests of the lost batches (DropWorkerFailed) and any
	// request the policy later dispatches to the failed worker; the policy keeps no state
	// that waits for a lost batch's completion (PPipe's reservations).
	FailDrop FailureMode = iota + 1
	// FailReroute: the requests of the lost batches stay pending, out of flight, and the
	// policy dispatches, completes or drops each of them later (QLM re-queues an instance's
	// sequences and re-plans, QLM §7).
	FailReroute
)

// FailureAware is implemented by policies that handle worker failures. An engine refuses
// EvWorkerDown for a policy that does not (ErrNoFailover): a policy that waits for a lost
// batch's completion would never finish its requests.
type FailureAware interface {
	OnWorkerFailure() FailureMode
}

// ErrNoFailover is returned (wrapped) for a worker failure under a policy that is not
// FailureAware.
var ErrNoFailover = errors.New("policy does not handle worker failures")

// HandlesFailures reports whether pol is FailureAware.
func HandlesFailures(pol Policy) bool {
	f, ok := pol.(FailureAware)
	return ok && f.OnWorkerFailure() != 0
}

// Order is the queue-ordering extension point: a strict weak order on requests. Policies that
// keep queues take one by name (Config.Order). Ties must be broken deterministically (by ID).
type Order interface {
	Name() string
	Less(a, b *Request) bool
}

// Config picks the policies an engine runs, by registry name.
type Config struct {
	// Policy is the batching/dispatch policy (empty = the deployment's default).
	Policy string
	// Order names the queue order for policies that take one (empty = the policy's default).
	Order string
	// Params are policy-specific settings ("interval=true", "penalty=false").
	Params map[string]string
}

// Bool returns a boolean parameter, def when absent.
func (c Config) Bool(key string, def bool) (bool, error) {
	s, ok := c.Params[key]
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return def, fmt.Errorf("policy %s: parameter %s: %q: must be true or false", c.Policy, key, s)
	}
	return v, nil
}

// CheckKnown rejects parameters the policy does not read, so a typo such as
// "admision=false" is an error instead of a silently ignored setting.
func (c Config) CheckKnown(policy string, known ...string) error {
	var unknown []string
	for k := range c.Params {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	takes := "takes no parameters"
	if len(known) > 0 {
		takes = "takes " + strings.Join(known, ", ")
	}
	return fmt.Errorf("policy %s: unknown parameter %s: it %s", policy, strings.Join(unknown, ", "), takes)
}

// Float returns a numeric parameter, def when absent.
func (c Config) Float(key string, def float64) (float64, error) {
	s, ok := c.Params[key]
	if !ok {
		return def, nil
	}
	return ParseNumber(c.Policy, key, s)
}

// ParseNumber is how every policy reads a numeric parameter, from a --param flag or a plan:
// a finite number, or true/false meaning 1/0 (switches such as PARD's sibling_cancel).
func ParseNumber(policy, key, s string) (float64, error) {
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		b, berr := strconv.ParseBool(strings.TrimSpace(s))
		if berr != nil {
			return 0, fmt.Errorf("policy %s: parameter %s: %q: must be a number", policy, key, s)
		}
		x = 0
		if b {
			x = 1
		}
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("policy %s: parameter %s: %q: must be finite", policy, key, s)
	}
	return x, nil
}

// PolicyFactory builds a policy from its configuration.
type PolicyFactory func(cfg Config) (Policy, error)

// PolicySpec describes a policy a system contributes: its registry name, a one-line doc,
// the deployment kinds it can serve (Deployment.Kind: the plan section its deployer reads)
// and its factory.
type PolicySpec struct {
	Name   string
	Doc    string
	Serves []string
	New    PolicyFactory
}

// Registration describes a registered policy or order.
type Registration struct {
	Name   string
	Doc    string
	Serves []string
}

// Registry maps policy names to factories. It is a plain value built explicitly from the
// systems' policy lists (internal/registry/systems builds the in-tree one, kube-scheduler style), so
// nothing registers itself from init and tests build registries of exactly what they need.
type Registry struct {
	specs map[string]PolicySpec
}

// NewRegistry builds a registry of specs. A duplicate name panics: two policies with one
// name is a programming error in the systems list.
func NewRegistry(specs ...PolicySpec) *Registry {
	r := &Registry{specs: map[string]PolicySpec{}}
	for _, sp := range specs {
		if _, dup := r.specs[sp.Name]; dup {
			panic(fmt.Sprintf("dataplane: policy %q registered twice", sp.Name))
		}
		if sp.New == nil || sp.Name == "" {
			panic(fmt.Sprintf("dataplane: policy %q has no factory", sp.Name))
		}
		r.specs[sp.Name] = sp
	}
	return r
}

// ErrUnknownPolicy and ErrPolicyMismatch are returned (wrapped) by Registry.New.
var (
	ErrUnknownPolicy  = errors.New("unknown policy")
	ErrPolicyMismatch = errors.New("policy does not serve this deployment")
)

// New builds the policy cfg.Policy names for dep: cfg.Policy empty means def (the
// deployment's default). A policy that does not serve dep.Kind is refused, naming the plan
// section and the policies that do serve it.
func (r *Registry) New(dep *Deployment, cfg Config, def string) (Policy, error) {
	name := cfg.Policy
	if name == "" {
		name = def
	}
	sp, ok := r.specs[name]
	if !ok {
		return nil, fmt.Errorf("%w %q: must be one of %s", ErrUnknownPolicy, name, strings.Join(r.names(""), ", "))
	}
	if dep != nil && dep.Kind != "" && !slices.Contains(sp.Serves, dep.Kind) {
		return nil, fmt.Errorf("%w: policy %s serves %s plans; the plan's %s section is served by %s",
			ErrPolicyMismatch, name, strings.Join(sp.Serves, ", "), dep.Kind, strings.Join(r.names(dep.Kind), ", "))
	}
	cfg.Policy = name
	return sp.New(cfg)
}

// Lookup returns the spec registered under name.
func (r *Registry) Lookup(name string) (PolicySpec, bool) {
	sp, ok := r.specs[name]
	return sp, ok
}

// names lists the registered names in order, those serving kind only when kind is set.
func (r *Registry) names(kind string) []string {
	var out []string
	for n, sp := range r.specs {
		if kind == "" || slices.Contains(sp.Serves, kind) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Policies lists the registered policies by name.
func (r *Registry) Policies() []Registration {
	out := make([]Registration, 0, len(r.specs))
	for _, n := range r.names("") {
		sp := r.specs[n]
		out = append(out, Registration{Name: n, Doc: sp.Doc, Serves: sp.Serves})
	}
	return out
}

// orders are the queue orders policies take by name (Config.Order). The set is fixed: a
// system with an order of its own keeps it inside its policy.
var orders = map[string]func() Order{
	"fifo": func() Order { return FIFO{} },
	"edf":  func() Order { return EDF{} },
}

// NewOrder builds the order named name, or def when name is empty.
func NewOrder(name, def string) (Order, error) {
	if name == "" {
		name = def
	}
	f, ok := orders[name]
	if !ok {
		names := slices.Sorted(maps.Keys(orders))
		return nil, fmt.Errorf("unknown order %q: must be one of %s", name, strings.Join(names, ", "))
	}
	return f(), nil
}

// FIFO orders by arrival, then ID.
type FIFO struct{}

// Name implements Order.
func (FIFO) Name() string { return "fifo" }

// Less implements Order.
func (FIFO) Less(a, b *Request) bool {
	if a.Arrival != b.Arrival {
		return a.Arrival < b.Arrival
	}
	return a.ID < b.ID
}

// EDF orders by deadline (earliest first), then arrival, then ID.
type EDF struct{}

// Name implements Order.
func (EDF) Name() string { return "edf" }

// Less implements Order.
func (EDF) Less(a, b *Request) bool {
	if a.Deadline != b.Deadline {
		return a.Deadline < b.Deadline
	}
	return FIFO{}.Less(a, b)
}
