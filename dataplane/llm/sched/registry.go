// Package sched is the registry of the LLM engine's waiting-queue policies: one explicit
// in-tree list (InTree), as the Kubernetes scheduler framework registers its plugins — no
// init() side effects. A policy is a package with a constructor of an llm.Queue; adding one
// means its package plus one line in InTree (a test registers a toy policy from outside to
// prove it).
package sched

import (
	"fmt"
	"slices"

	"github.com/plan-dev/plan/dataplane/llm"
	"github.com/plan-dev/plan/dataplane/llm/sched/edf"
	"github.com/plan-dev/plan/dataplane/llm/sched/fcfs"
	"github.com/plan-dev/plan/dataplane/llm/sched/priority"
)

// Spec is one registered policy: its name, a line of documentation and its constructor.
type Spec struct {
	Name, Doc string
	New       func() llm.Queue
}

// InTree lists the built-in policies.
func InTree() []Spec {
	return []Spec{
		{Name: fcfs.Name, Doc: "vLLM fcfs: arrival order, a preempted request back at the front", New: fcfs.New},
		{Name: priority.Name, Doc: "vLLM priority: priority (lower first) then arrival; preempts the lowest priority", New: priority.New},
		{Name: edf.Name, Doc: "earliest deadline first, preemptive (QLM §8 baseline)", New: edf.New},
	}
}

// Registry maps policy names to their specs.
type Registry struct {
	specs []Spec
}

// NewRegistry makes a registry of specs (a name may appear once).
func NewRegistry(specs ...Spec) (*Registry, error) {
	r := &Registry{}
	for _, s := range specs {
		if s.Name == "" || s.New == nil {
			return nil, fmt.Errorf("sched: a policy needs a name and a constructor (%q)", s.Name)
		}
		if _, ok := r.spec(s.Name); ok {
			return nil, fmt.Errorf("sched: policy %q registered twice", s.Name)
		}
		r.specs = append(r.specs, s)
	}
	return r, nil
}

// Default is the registry of the in-tree policies.
func Default() *Registry {
	r, err := NewRegistry(InTree()...)
	if err != nil {
		panic(err) // the in-tree list is fixed: a duplicate is a bug
	}
	return r
}

func (r *Registry) spec(name string) (Spec, bool) {
	for _, s := range r.specs {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// New builds an empty queue of the named policy.
func (r *Registry) New(name string) (llm.Queue, error) {
	s, ok := r.spec(name)
	if !ok {
		return nil, fmt.Errorf("sched: unknown scheduling policy %q (have %v)", name, r.Names())
	}
	return s.New(), nil
}

// Names lists the registered policies, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.specs))
	for _, s := range r.specs {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}
