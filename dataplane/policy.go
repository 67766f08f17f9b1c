package dataplane

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
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

// Ticker is implemented by policies with a periodic control loop (PARD's state planner,
// CascadeServe's QPS poll, QLM's re-plan). The engine arms the first tick at time 0 and
// re-arms it every TickEvery after delivering EvTick.
type Ticker interface {
	TickEvery() Time
}

// Order is the queue-ordering extension point: a strict weak order on requests. Policies that
// keep queues take one by name (Config.Order). Ties must be broken deterministically (by ID).
type Order interface {
	Name() string
	Less(a, b *Request) bool
}

// DropContext is what a Dropper sees when a request is about to join a batch at a stage.
type DropContext struct {
	Req   *Request
	Stage StageID
	// ExpectedStart is when the batch being formed is expected to start (t_e in PARD).
	ExpectedStart Time
	// Batch is the batch size the stage runs at.
	Batch int
}

// Dropper is the dropping extension point: a test applied when a request is taken from a
// queue (PARD's decision point). It returns whether to drop, the reason and the estimate
// behind it. Stateful droppers (PARD's state planner) also implement Ticker through their
// policy.
type Dropper interface {
	Name() string
	ShouldDrop(v View, c DropContext, now Time) (drop bool, reason DropReason, estimate Time)
}

// Config picks the policies an engine runs, by registry name.
type Config struct {
	// Policy is the batching/dispatch policy (default "ppipe").
	Policy string
	// Order and Dropper name the queue order and drop test for policies that take them
	// (empty = the policy's default).
	Order   string
	Dropper string
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
		return def, fmt.Errorf("policy parameter %s: %q: must be true or false", key, s)
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
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return def, fmt.Errorf("policy parameter %s: %q: must be a number", key, s)
	}
	return v, nil
}

// PolicyFactory builds a policy from its configuration.
type PolicyFactory func(cfg Config) (Policy, error)

// Registration describes a registered policy, order or dropper.
type Registration struct {
	Name string
	Doc  string
}

type registry[F any] struct {
	mu      sync.RWMutex
	entries map[string]F
	docs    map[string]string
}

func (r *registry[F]) add(kind, name, doc string, f F) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.entries == nil {
		r.entries = map[string]F{}
		r.docs = map[string]string{}
	}
	if _, dup := r.entries[name]; dup {
		panic(fmt.Sprintf("dataplane: %s %q registered twice", kind, name))
	}
	r.entries[name] = f
	r.docs[name] = doc
}

func (r *registry[F]) get(kind, name string) (F, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	f, ok := r.entries[name]
	if !ok {
		var zero F
		names := make([]string, 0, len(r.entries))
		for n := range r.entries {
			names = append(names, n)
		}
		sort.Strings(names)
		return zero, fmt.Errorf("unknown %s %q: must be one of %s", kind, name, strings.Join(names, ", "))
	}
	return f, nil
}

func (r *registry[F]) list() []Registration {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Registration, 0, len(r.entries))
	for n := range r.entries {
		out = append(out, Registration{Name: n, Doc: r.docs[n]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

var (
	policies registry[PolicyFactory]
	orders   registry[func() Order]
	droppers registry[func(cfg Config) (Dropper, error)]
)

// RegisterPolicy adds a policy under name (call from an init function). It panics on a
// duplicate name: two policies with one name is a programming error.
func RegisterPolicy(name, doc string, f PolicyFactory) { policies.add("policy", name, doc, f) }

// RegisterOrder adds a queue order.
func RegisterOrder(name, doc string, f func() Order) { orders.add("order", name, doc, f) }

// RegisterDropper adds a drop test.
func RegisterDropper(name, doc string, f func(cfg Config) (Dropper, error)) {
	droppers.add("dropper", name, doc, f)
}

// NewPolicy builds the policy cfg.Policy names (default "ppipe").
func NewPolicy(cfg Config) (Policy, error) {
	name := cfg.Policy
	if name == "" {
		name = "ppipe"
	}
	f, err := policies.get("policy", name)
	if err != nil {
		return nil, err
	}
	return f(cfg)
}

// NewOrder builds the order named name, or def when name is empty.
func NewOrder(name, def string) (Order, error) {
	if name == "" {
		name = def
	}
	f, err := orders.get("order", name)
	if err != nil {
		return nil, err
	}
	return f(), nil
}

// NewDropper builds the dropper cfg.Dropper names, or def when it is empty.
func NewDropper(cfg Config, def string) (Dropper, error) {
	name := cfg.Dropper
	if name == "" {
		name = def
	}
	f, err := droppers.get("dropper", name)
	if err != nil {
		return nil, err
	}
	return f(cfg)
}

// Policies lists the registered policies by name.
func Policies() []Registration { return policies.list() }

// Orders lists the registered queue orders.
func Orders() []Registration { return orders.list() }

// Droppers lists the registered drop tests.
func Droppers() []Registration { return droppers.list() }

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

func init() {
	RegisterOrder("fifo", "first come, first served (arrival time)", func() Order { return FIFO{} })
	RegisterOrder("edf", "earliest deadline first", func() Order { return EDF{} })
}
