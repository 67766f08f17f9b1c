package export

import (
	"fmt"
	"path"
	"strings"

	"github.com/plan-dev/plan/formats"
)

// Export targets are plug-ins, in the style of the Kubernetes scheduler framework: a target
// is a named plugin (Target) that implements the extension points it takes part in — one
// small interface each — and the in-tree targets are one explicit list (export/targets; no
// init() side effects). A system supplies its plan as a layout (Layout: Groups for DNN
// pipelines, its own type otherwise) and every registered target that renders that layout,
// or a view of it, becomes one of the system's exporters; adding a target is its own package
// plus one line in export/targets.
//
// Extension points:
//   - Target: the name (`plan export --to NAME`) and which files of an export are the
//     target's (read-back walks them: ReadFiles);
//   - Renderer[L]: the files of a layout L;
//   - Finisher: files every export to the target gets after rendering (deploy/, README.md);
//   - SchemaProvider: the JSON Schema of a manifest kind the shared schemas do not cover;
//   - RuleChecker: run-time rules over the whole file set;
//   - ReadBacker: what `plan export --check` reads back from a directory of the target.

// Target is an export target: `plan export --to Name()`.
type Target interface {
	// Name is the target's --to value (a DNS label).
	Name() string
	// Owns reports whether the file of an export (a relative slash-separated path, deploy/
	// left out) is one the target's readers read.
	Owns(file string) bool
}

// Renderer is the extension point of a target that renders layout L (o has its defaults).
type Renderer[L any] interface {
	Target
	Render(l L, o Options) (Files, error)
}

// Finisher is the extension point of a target whose exports get more files after rendering:
// deploy/ (the coordinator, autoscaling) and a README.md.
type Finisher interface {
	Finish(f Files, p *formats.Plan, o Options) (Files, error)
}

// Schema is a JSON Schema a target supplies: Name identifies it in errors and caches, JSON
// is its text.
type Schema struct {
	Name string
	JSON []byte
}

// SchemaProvider is the extension point of a target whose files hold manifests of kinds the
// shared schemas (schema/) do not cover: ok false when doc is not one of the target's.
type SchemaProvider interface {
	SchemaFor(file string, doc map[string]any) (s Schema, ok bool)
}

// RuleChecker is the extension point of a target with run-time rules: what the target
// refuses or gets wrong when deployed although every file passes its schema. Each problem
// is "file: field: value: rule".
type RuleChecker interface {
	Rules(files Files, deploy Deployable) []string
}

// ReadBacker is the extension point of a target whose files alone say what was exported:
// `plan export --check` reads a directory of the target back and prints what it recovered
// (one line; an error names the file and field).
type ReadBacker interface {
	ReadBackSummary(files Files) (string, error)
}

// Registry is a list of targets by name, in registration order.
type Registry struct {
	list   []Target
	byName map[string]Target
}

// NewRegistry registers targets; a name given twice, or not a DNS label, is an error.
func NewRegistry(ts ...Target) (*Registry, error) {
	r := &Registry{byName: map[string]Target{}}
	for _, t := range ts {
		n := t.Name()
		if n == "" || DNSLabel(n) != n {
			return nil, fmt.Errorf("export target %q: the name must be a DNS label", n)
		}
		if _, dup := r.byName[n]; dup {
			return nil, fmt.Errorf("export target %q: registered twice", n)
		}
		r.byName[n] = t
		r.list = append(r.list, t)
	}
	return r, nil
}

// MustRegistry is NewRegistry for the in-tree list, which a test keeps valid.
func MustRegistry(ts ...Target) *Registry {
	r, err := NewRegistry(ts...)
	if err != nil {
		panic(err)
	}
	return r
}

// Names are the targets' names in registration order.
func (r *Registry) Names() []string {
	out := make([]string, len(r.list))
	for i, t := range r.list {
		out[i] = t.Name()
	}
	return out
}

// Targets are the registered targets in order.
func (r *Registry) Targets() []Target { return r.list }

// Lookup finds a target by name.
func (r *Registry) Lookup(name string) (Target, bool) {
	t, ok := r.byName[name]
	return t, ok
}

// Classic is the registry of the targets this package implements — Triton, KServe and Ray
// Serve, which every system's layout renders — for code that sees no other (Validate,
// ReadFiles). The in-tree list of every target is export/targets.
var Classic = MustRegistry(TritonTarget, KServeTarget, RayTarget)

// Targets lists the classic targets' names (Classic).
var Targets = Classic.Names()

// The classic targets. Each renders Groups; systems whose units do not fit Group supply
// their own renderer of their layout for them (Layout.Own).
var (
	TritonTarget Target = tritonTarget{}
	KServeTarget Target = kserveTarget{}
	RayTarget    Target = rayTarget{}
)

// Names of the classic targets.
const (
	Triton = "triton"
	KServe = "kserve"
	Ray    = "ray"
)

type tritonTarget struct{}

func (tritonTarget) Name() string                                { return Triton }
func (tritonTarget) Owns(file string) bool                       { return path.Base(file) == "config.pbtxt" }
func (tritonTarget) Render(gs []Group, o Options) (Files, error) { return TritonFiles(gs, o) }
func (tritonTarget) Finish(f Files, p *formats.Plan, o Options) (Files, error) {
	return withDeploy(tritonDeploy, f, p, o)
}

type kserveTarget struct{}

func (kserveTarget) Name() string                                { return KServe }
func (kserveTarget) Owns(file string) bool                       { return strings.HasSuffix(file, ".yaml") }
func (kserveTarget) Render(gs []Group, o Options) (Files, error) { return KServeFiles(gs, o) }
func (kserveTarget) Finish(f Files, p *formats.Plan, o Options) (Files, error) {
	return withDeploy(kserveScale, f, p, o)
}

type rayTarget struct{}

func (rayTarget) Name() string                                { return Ray }
func (rayTarget) Owns(file string) bool                       { return path.Base(file) == RayConfigFile }
func (rayTarget) Render(gs []Group, o Options) (Files, error) { return RayFiles(gs, o) }

// Finish adds deploy/ and the README.md that says what the application builder the config
// imports must provide (RayReadme).
func (rayTarget) Finish(f Files, p *formats.Plan, o Options) (Files, error) {
	f, err := withDeploy(rayWorkers, f, p, o)
	if err != nil {
		return nil, err
	}
	if f[RayConfigFile] == nil {
		return f, nil
	}
	b, err := RayReadme(f[RayConfigFile], o.ImportPath)
	if err != nil {
		return nil, err
	}
	return f, put(f, ReadmeFile, b)
}

// View offers a system's layout L to the targets that render another layout V (a QLM plan's
// instances as a vLLM fleet, say). Make one with ViewAs.
type View[L any] struct {
	accepts func(Target) bool
	render  func(Target, L, Options) (Files, error)
}

// ViewAs is the view of L as V through conv.
func ViewAs[L, V any](conv func(L) (V, error)) View[L] {
	return View[L]{
		accepts: func(t Target) bool { _, ok := t.(Renderer[V]); return ok },
		render: func(t Target, l L, o Options) (Files, error) {
			v, err := conv(l)
			if err != nil {
				return nil, err
			}
			return t.(Renderer[V]).Render(v, o)
		},
	}
}

// Layout is what a system supplies for export: Build prepares its plan once per export (the
// options with their defaults); a target renders it by the system's own renderer for that
// target (Own, by target name), else as the first view it renders (Views; a target that
// implements Renderer[L] takes L itself), else the system has no exporter for it.
type Layout[L any] struct {
	Build func(p *formats.Plan, o Options) (L, error)
	Own   map[string]func(L) (Files, error)
	Views []View[L]
}

// Exporters returns the system's exporter for each target of reg that renders its layout, in
// the registry's order.
func (l Layout[L]) Exporters(reg *Registry) []Exporter {
	views := append([]View[L]{ViewAs(func(x L) (L, error) { return x, nil })}, l.Views...)
	var out []Exporter
	for _, t := range reg.Targets() {
		var render func(L, Options) (Files, error)
		if own := l.Own[t.Name()]; own != nil {
			render = func(x L, _ Options) (Files, error) { return own(x) }
		} else {
			for _, v := range views {
				if v.accepts(t) {
					render = func(x L, o Options) (Files, error) { return v.render(t, x, o) }
					break
				}
			}
		}
		if render == nil {
			continue
		}
		out = append(out, Exporter{Target: t.Name(), Export: func(p *formats.Plan, o Options) (Files, error) {
			o = o.Defaults().withPlan(p)
			x, err := l.Build(p, o)
			if err != nil {
				return nil, err
			}
			f, err := render(x, o)
			if err != nil {
				return nil, err
			}
			if fin, ok := t.(Finisher); ok {
				return fin.Finish(f, p, o)
			}
			return f, nil
		}})
	}
	return out
}
