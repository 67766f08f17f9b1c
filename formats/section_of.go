package formats

import (
	"encoding/json"
	"reflect"
)

// SectionOf is a system's section whose value is a *T, declared once as a value and
// registered through its system (SectionSet): decoded from T's Go type exactly as formats'
// own typed fields are — the structural check (types, required fields: those without
// omitempty, finite numbers, unknown fields with a suggestion, each problem with its path
// under Name), then a strict decode — and described by the JSON Schema the same generator
// writes for formats' own types. Its system adds the rules T's type cannot say (Check) and
// the checks against the other files given beside it (Cross). In and Put are its typed
// accessors on a plan's or a workload's Sections.
//
//	var jobs = formats.SectionOf[Jobs]{Name: "toy_jobs", Sys: "toy", Check: checkJobs}
//	j := jobs.In(w.Sections) // *Jobs, nil when the workload has none
type SectionOf[T any] struct {
	// Name is the section's key in the file, Sys the system that registers it ("" for
	// the registry's shared vocabulary, internal/registry/systems.Vocabulary).
	Name, Sys string
	// Check returns the problems of a decoded value beyond its type's structure, with paths
	// from the document's root (starting with Name); nil: none.
	Check func(v *T) ErrorList
	// CheckIn is Check for the rules that need the document the section is in (a plan's
	// cluster for the GPU types the section names); nil: none. Check runs first.
	CheckIn func(v *T, doc Document) ErrorList
	// Cross returns the problems of a decoded value against the other files given with it
	// (Section.CrossCheck); nil: none.
	Cross func(v *T, self string, docs map[string]Document) ErrorList
	// Position is the section's place among a document's sections, in files and in the
	// schema (Positioned): ascending, then by key; 0 comes after every positioned one.
	Position int
}

// SectionPosition implements Positioned.
func (s SectionOf[T]) SectionPosition() int { return s.Position }

// Key implements Section.
func (s SectionOf[T]) Key() string { return s.Name }

// System implements Section.
func (s SectionOf[T]) System() string { return s.Sys }

// Decode implements Section: the structural check of the section's tree against T (every
// problem, with its path), then a strict decode into a new T.
func (s SectionOf[T]) Decode(js []byte) (any, error) {
	tree, err := jsonTree(js)
	if err != nil {
		return nil, ErrorList{{Path: s.Name, Rule: err.Error()}}
	}
	var errs ErrorList
	checkStructure(reflect.TypeFor[T](), tree, s.Name, &errs)
	if len(errs) > 0 {
		return nil, errs
	}
	v := new(T)
	if err := StrictUnmarshal(js, v); err != nil {
		return nil, ErrorList{{Path: s.Name, Rule: err.Error()}}
	}
	return v, nil
}

// Validate implements Section.
func (s SectionOf[T]) Validate(v any) ErrorList {
	t, ok := v.(*T)
	if !ok || t == nil || s.Check == nil {
		return nil
	}
	return s.Check(t)
}

// ValidateIn implements ValidatorIn: Check, then CheckIn with the document.
func (s SectionOf[T]) ValidateIn(v any, doc Document) ErrorList {
	out := s.Validate(v)
	if t, ok := v.(*T); ok && t != nil && s.CheckIn != nil {
		out = append(out, s.CheckIn(t, doc)...)
	}
	return out
}

// CrossCheck implements Section.
func (s SectionOf[T]) CrossCheck(v any, self string, docs map[string]Document) ErrorList {
	t, ok := v.(*T)
	if !ok || t == nil || s.Cross == nil {
		return nil
	}
	return s.Cross(t, self, docs)
}

// Schema implements Section: T's schema as a self-contained fragment (its named types under
// its own $defs). Inside a plan's or workload's schema (Schema with a SectionSet) T's types join the
// document's $defs instead, as formats' own types do.
func (s SectionOf[T]) Schema() map[string]any {
	g := &schemaGen{defs: map[string]*object{}}
	frag := g.schema(reflect.TypeFor[T]())
	js, err := json.Marshal(frag)
	out := map[string]any{}
	if err != nil || json.Unmarshal(js, &out) != nil {
		return map[string]any{"type": "object"}
	}
	if len(g.defs) > 0 {
		defs := map[string]any{}
		for name, d := range g.defs {
			var m map[string]any
			if b, err := json.Marshal(d); err == nil && json.Unmarshal(b, &m) == nil {
				defs[name] = m
			}
		}
		out["$defs"] = defs
	}
	return out
}

// goType is what Schema asks a section for to describe it from its Go type.
func (s SectionOf[T]) goType() reflect.Type { return reflect.TypeFor[T]() }

// goTyped is implemented by SectionOf: a section described by its Go type, whose structure
// parse checks on the document's tree before decoding it with decodeChecked.
type goTyped interface {
	goType() reflect.Type
	decodeChecked(js []byte) (any, error)
}

// decodeChecked is Decode for a section whose structure was checked already: the strict
// decode alone, so a large section (a cascade's validation records) is not parsed twice.
func (s SectionOf[T]) decodeChecked(js []byte) (any, error) {
	v := new(T)
	if err := StrictUnmarshal(js, v); err != nil {
		return nil, ErrorList{{Path: s.Name, Rule: err.Error()}}
	}
	return v, nil
}

// In returns the section's value among sv (a plan's or a workload's Sections), nil when
// the document has none.
func (s SectionOf[T]) In(sv SectionValues) *T {
	v, _ := sv[s.Name].Value.(*T)
	return v
}

// Put sets the section's value among *sv (nil removes it), with s as its Section
// (SectionValues.Set with a Section that wraps s keeps the wrapper's methods instead).
func (s SectionOf[T]) Put(sv *SectionValues, v *T) { sv.Set(s, v) }

// OfPlan is s's value in the plan p, nil when p or its section is absent: a system's typed
// accessor is one line (qlmsec.PlanOf).
func (s SectionOf[T]) OfPlan(p *Plan) *T {
	if p == nil {
		return nil
	}
	return s.In(p.Sections)
}

// OfWorkload is s's value in the workload w, nil when w or its section is absent.
func (s SectionOf[T]) OfWorkload(w *Workload) *T {
	if w == nil {
		return nil
	}
	return s.In(w.Sections)
}

// ListOf is the list-valued section s of w, nil when w or it is absent; its elements are
// w's own, so changing one changes w (an empty list is no section: SectionValues.Set).
func ListOf[E any](s SectionOf[[]E], w *Workload) []E {
	if v := s.OfWorkload(w); v != nil {
		return *v
	}
	return nil
}

// InPlan adapts a plan section's rules to SectionOf.CheckIn: validate checks v, the section
// at path key of the plan p (whose cluster names the GPU types), into c. Outside a plan it
// checks nothing.
func InPlan[T any](key string, validate func(c *Checker, p *Plan, v *T, key string)) func(*T, Document) ErrorList {
	return func(v *T, doc Document) ErrorList {
		p, ok := doc.(*Plan)
		if !ok {
			return nil
		}
		var c Checker
		validate(&c, p, v, key)
		return c.Errs()
	}
}

// CheckList adapts the rule for one element of a list-valued section to SectionOf.Check:
// validate checks each element, at path key[i], with the names of the elements before it
// (an element's name must be unique in the list).
func CheckList[E any](key string, validate func(c *Checker, e *E, path string, seen *Names)) func(*[]E) ErrorList {
	return func(es *[]E) ErrorList {
		var c Checker
		seen := &Names{}
		for i := range *es {
			validate(&c, &(*es)[i], Index(key, i), seen)
		}
		return c.Errs()
	}
}

// SetPlan sets the plan section s of p to v (nil removes it) and returns p: a system's typed
// setter is one line (pardsec.SetPlan). s is the Section the system registers, so a wrapper's
// methods stay with the value (SectionValues.Set).
func SetPlan[T any](p *Plan, s Section, v *T) *Plan {
	p.Sections.Set(s, v)
	return p
}

// SetWorkload sets the workload section s of w to v (nil, or an empty list, removes it) and
// returns w, as SetPlan does for a plan.
func SetWorkload[T any](w *Workload, s Section, v *T) *Workload {
	w.Sections.Set(s, v)
	return w
}

// CheckOf runs check on v, a section's value in a document, with a new Checker, and returns
// the problems it adds; a nil v (no such section) has none.
func CheckOf[T any](v *T, check func(c *Checker, v *T)) ErrorList {
	if v == nil {
		return nil
	}
	var c Checker
	check(&c, v)
	return c.Errs()
}
