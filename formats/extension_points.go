package formats

import (
	"maps"
	"slices"
)

// Two extension points shared code asks every system's sections through, as the
// Kubernetes scheduler framework asks its plug-ins (one small interface per point, a
// section implements those it has an answer for), so that a sixth system's sections answer
// them too and no shared package lists the systems (DESIGN.md "Systems as plug-ins"):
//
//   - RateTargeter: which applications a workload section defines and the rate each asks
//     for, and a copy of the workload at other rates — what `plan solve --trace` plans each
//     window at, what the solve's rate margin and `plan frontier --rate` scale, what a plan's
//     prediction simulates;
//   - GPUCounter: how many GPUs of each type a plan section deploys — what a cost plan's
//     fleet records and is priced by, and what `plan check` verifies the fleet against.

// RateTarget is an application of a workload section with the rate it is planned for.
type RateTarget struct {
	// Name is what a rate trace's column and a deployment's application call it.
	Name string
	// RateRPS is its rate in requests/s; 0 when the workload states none (a PPipe model
	// planned for its throughput).
	RateRPS float64
	// Range says that RateRPS bounds the range of rates the plan covers rather than one
	// rate the workload asks for (CascadeServe's qps_max: the gear plan spans [0, qps_max],
	// CascadeServe §4). A trace window, a rate margin or a frontier point still sets it, but
	// a prediction simulates such an application at the rate its plan states.
	Range bool
}

// RateTargeter is a workload Section whose applications carry a rate. A section that is
// none has no application a rate trace, a rate margin or a frontier point can set.
type RateTargeter interface {
	// Targets lists the section's applications in w, in the section's order (by name where
	// the section keeps them in a map).
	Targets(w *Workload) []RateTarget
	// WithRates sets, in w, a new value of the section in which each application's rate is
	// rate(its name, its rate). w is a copy whose Sections map is its own but whose section
	// values are shared with the original: the section must not change the value it finds.
	WithRates(w *Workload, rate func(name string, rps float64) float64)
}

// RateTargets lists the applications of w's sections that are RateTargeters, section by
// section in the sections' order (nil when w is nil).
func (w *Workload) RateTargets() []RateTarget {
	if w == nil {
		return nil
	}
	var out []RateTarget
	for _, k := range w.SectionKeys() {
		if r, ok := w.Sections[k].Section.(RateTargeter); ok {
			out = append(out, r.Targets(w)...)
		}
	}
	return out
}

// WithRates is a copy of w in which every application of a RateTargeter section has the
// rate rate(its name, its rate); w and its sections' values are unchanged, and the rest of
// w is shared. nil gives nil.
func (w *Workload) WithRates(rate func(name string, rps float64) float64) *Workload {
	if w == nil {
		return nil
	}
	c := *w
	c.Sections = maps.Clone(w.Sections) // a section set below must not reach w
	for _, k := range w.SectionKeys() {
		if r, ok := w.Sections[k].Section.(RateTargeter); ok {
			r.WithRates(&c, rate)
		}
	}
	return &c
}

// GPUCounter is a plan Section that counts the physical GPUs per type its section of p
// deploys (a GPU index of p's cluster counts once, however many replicas share it).
type GPUCounter interface {
	GPUsUsed(p *Plan) map[string]int
}

// GPUsUsed counts the physical GPUs per type p's sections deploy, summed over its
// GPUCounter sections, without the types counted 0. It is nil when no section of p is a
// GPUCounter (p carries no section that says what it deploys), and an empty map when one
// is and deploys nothing.
func (p *Plan) GPUsUsed() map[string]int {
	if p == nil {
		return nil
	}
	var used map[string]int
	for _, k := range p.SectionKeys() {
		g, ok := p.Sections[k].Section.(GPUCounter)
		if !ok {
			continue
		}
		if used == nil {
			used = map[string]int{}
		}
		for t, n := range g.GPUsUsed(p) {
			used[t] += n
		}
	}
	for t, n := range used {
		if n == 0 {
			delete(used, t)
		}
	}
	return used
}

// ServedModels names the models p's sections deploy, as DNNs and as LLMs, from its plan
// sections that are ModelUsers (a plan section answers UsedModels for the plan it is in);
// ok false when none is, so a caller cannot tell a plan that serves no model from one whose
// section does not say.
func (p *Plan) ServedModels() (dnn, llm []string, ok bool) {
	if p == nil {
		return nil, nil, false
	}
	for _, k := range p.SectionKeys() {
		u, isUser := p.Sections[k].Section.(ModelUser)
		if !isUser {
			continue
		}
		d, l := u.UsedModels(p)
		dnn, llm, ok = append(dnn, d...), append(llm, l...), true
	}
	return dnn, llm, ok
}

// GPUIndexTypes maps the cluster's GPU indices (its pools in order, GPU 0 first) to their
// type: how plan sections that place replicas on GPU indices (CascadeServe's placement,
// DyOrc's seed placement) name the GPUs they use. nil for a nil cluster.
func (c *Cluster) GPUIndexTypes() []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, g := range c.GPUs {
		for range g.Count {
			out = append(out, g.Type)
		}
	}
	return out
}

// CountGPUs is a GPUCounter of section s: count adds to used the GPUs per type of p's
// section, nil when p has none.
func CountGPUs[T any](s SectionOf[T], p *Plan, count func(v *T, used map[string]int)) map[string]int {
	v := s.OfPlan(p)
	if v == nil {
		return nil
	}
	used := map[string]int{}
	count(v, used)
	return used
}

// CountGPUIndices counts the GPUs at the cluster's indices in used (GPUIndexTypes) per type,
// for the GPUCounter of a plan section that places on GPU indices; an index outside the
// cluster counts nowhere (validation reports it).
func (c *Cluster) CountGPUIndices(used map[int]bool) map[string]int {
	types := c.GPUIndexTypes()
	out := map[string]int{}
	for g := range used {
		if g >= 0 && g < len(types) {
			out[types[g]]++
		}
	}
	return out
}

// RatedList is the list-shaped workload section's half of RateTargeter: the targets of items
// and a copy of them with new rates, where rated gives an item's name and its rate field
// (a pointer into the item). Range marks every target as RateTarget.Range.
type RatedList[T any] struct {
	Rated func(*T) (string, *float64)
	Range bool
}

// Targets lists items' names and rates.
func (l RatedList[T]) Targets(items []T) []RateTarget {
	out := make([]RateTarget, 0, len(items))
	for i := range items {
		name, r := l.Rated(&items[i])
		out = append(out, RateTarget{Name: name, RateRPS: *r, Range: l.Range})
	}
	return out
}

// WithRates is a copy of items with each rate replaced by rate(name, rate).
func (l RatedList[T]) WithRates(items []T, rate func(string, float64) float64) []T {
	out := slices.Clone(items)
	for i := range out {
		name, r := l.Rated(&out[i])
		*r = rate(name, *r)
	}
	return out
}
