package formats

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// Per-system sections (DESIGN.md "Systems as plug-ins"). A plan or a workload file has
// shared parts (TypeMeta, Metadata, Provenance, the embedded Cluster, a plan's fleet and
// prediction) and one top-level section per system, each a Section its system registers:
// SectionOf[T], with its Go type, decoding, validation, cross-file checks and schema in the
// system's own package (formats/sections/ppipesec, pardsec, cascadesec, qlmsec, dyorcsec; a
// toy sixth system's), kept in the document's Sections and read with that package's
// accessors (ppipesec.PlanOf, llmspec.ClassesOf). formats types none of them, so a new
// system adds no line here. Each declares its place in the file (Positioned), so files keep
// their bytes as sections come and go. The set of registered sections is a plain value
// (SectionSet) the caller passes in, built from the system registry, so nothing registers
// itself and tests build exactly the set they need. A plan or workload is never read
// without a set (Decode, Validate, CheckSet and WriteFile refuse nil for them:
// ErrNoSections), so every reader runs the systems' own rules; packages below the registry
// take the set from their callers (serve.Options.Sections, bench.Env.Sections), and only
// tests build the in-tree set themselves (formats/sections/intree).

// Section is one system's top-level section of a plan or a workload.
type Section interface {
	// Key is the section's JSON key in the file ("toy").
	Key() string
	// System names the system that registers it ("" for shared vocabulary).
	System() string
	// Decode decodes the section's JSON strictly: unknown fields and trailing data are errors
	// (StrictUnmarshal does both), each problem with its path under Key.
	Decode(js []byte) (any, error)
	// Validate returns every problem of the decoded value v, with field paths from the
	// document's root (starting with Key) and the offending values; files are set by the caller.
	Validate(v any) ErrorList
	// CrossCheck returns the problems of v against the other files given with it (`plan
	// validate plan.json cluster.yaml profile.json`): docs maps a file name to its document.
	// Problems name the file they concern (File set); nil when the files agree.
	CrossCheck(v any, self string, docs map[string]Document) ErrorList
	// Schema is the section's JSON Schema (draft 2020-12) fragment: an object schema.
	Schema() map[string]any
}

// SectionSet is what the registered systems contribute to the file formats: their names (for
// errors about sections no system claims) and their sections.
type SectionSet struct {
	// Systems names every registered system, the in-tree ones included.
	Systems []string
	// Plan and Workload are the registered sections of plans and workloads.
	Plan     []Section
	Workload []Section
}

// SectionValue is a decoded registered section: the value its Section decoded, and the
// Section itself so that validation, cross-checks and encoding need no registry.
type SectionValue struct {
	Section Section
	Value   any
}

// SectionValues maps a section's key to its decoded value.
type SectionValues map[string]SectionValue

func (s *SectionSet) sections(kind string) []Section {
	if s == nil {
		return nil
	}
	switch kind {
	case KindPlan:
		return s.Plan
	case KindWorkload:
		return s.Workload
	}
	return nil
}

func (s *SectionSet) find(kind, key string) Section {
	for _, sec := range s.sections(kind) {
		if sec.Key() == key {
			return sec
		}
	}
	return nil
}

// systems lists the registered systems, sorted, for messages.
func (s *SectionSet) systems() string {
	names := slices.Clone(s.Systems)
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// extractSections takes the registered sections of a plan or workload tree out of it (so the
// typed decoder never sees them) and decodes each with its Section. A top-level key that is
// neither a shared field nor a registered section, and is not a near-miss of a shared field
// (which the structural check reports with a suggestion), is an unknown section: an error
// naming it and the systems that exist. Without a set (secs nil) nothing is taken out.
func extractSections(kind string, t reflect.Type, tree map[string]any, secs *SectionSet, errs *ErrorList) SectionValues {
	if secs == nil || (kind != KindPlan && kind != KindWorkload) {
		return nil
	}
	fields := jsonFields(t)
	known := make(map[string]bool, len(fields))
	for _, f := range fields {
		known[f.Name] = true
	}
	keys := make([]string, 0, len(tree))
	for k := range tree {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out SectionValues
	for _, k := range keys {
		if known[k] {
			continue
		}
		sec := secs.find(kind, k)
		if sec == nil {
			if suggest(k, fields) != "" {
				continue // a typo of a shared field: the structural check says "did you mean"
			}
			*errs = append(*errs, &FieldError{Path: keyPath("", k), Rule: fmt.Sprintf(
				"unknown %s section: no registered system claims it (systems: %s)", strings.ToLower(kind), secs.systems())})
			delete(tree, k)
			continue
		}
		raw := tree[k]
		delete(tree, k)
		if raw == nil {
			continue // null: absent, as a typed pointer field reads it
		}
		decode := sec.Decode
		if gt, ok := sec.(goTyped); ok {
			// The structure first, on the tree: a YAML .nan or .inf is reported with its path
			// before JSON, which has no such numbers, is asked to hold it; then the strict
			// decode alone.
			n := len(*errs)
			checkStructure(gt.goType(), raw, k, errs)
			if len(*errs) > n {
				continue
			}
			decode = gt.decodeChecked
		}
		js, err := marshalNoEscape(raw)
		var v any
		if err == nil {
			v, err = decode(bytes.TrimSpace(js))
		}
		if err != nil {
			*errs = append(*errs, Problems(err).under(k)...)
			continue
		}
		if absent(v) {
			continue // an empty list: absent, as omitempty reads a typed list
		}
		if out == nil {
			out = SectionValues{}
		}
		out[k] = SectionValue{Section: sec, Value: v}
	}
	return out
}

// absent reports whether a section's value stands for no section: nil, a nil pointer, or a
// pointer to an empty list or map — so a list-valued section (a workload's models) reads,
// writes and counts as a typed list field with omitempty does.
func absent(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer {
		return false
	}
	if rv.IsNil() {
		return true
	}
	switch e := rv.Elem(); e.Kind() {
	case reflect.Slice, reflect.Map:
		return e.Len() == 0
	}
	return false
}

// under prefixes problems without a path, or whose path does not start at key, with key.
func (l ErrorList) under(key string) ErrorList {
	out := make(ErrorList, 0, len(l))
	for _, e := range l {
		c := *e
		if c.Path != key && !strings.HasPrefix(c.Path, key+".") && !strings.HasPrefix(c.Path, key+"[") {
			c.Path = keyPath(key, c.Path)
			if e.Path == "" {
				c.Path = key
			}
		}
		out = append(out, &c)
	}
	return out
}

// Validate validates doc: a plan or a workload with the registered sections secs (nil is a
// problem of its own, as in Decode: its systems' rules would not run), any other kind by its
// own rules.
func Validate(doc Document, secs *SectionSet) ErrorList {
	switch d := doc.(type) {
	case *Plan:
		return d.Validate(secs)
	case *Workload:
		return d.Validate(secs)
	case interface{ Validate() ErrorList }:
		return d.Validate()
	}
	return nil
}

// ErrNoSections marks a plan or workload read or validated without the registered
// systems' sections (a nil SectionSet): its systems' own rules could not run, so formats
// refuses instead of passing it structurally. Callers hand the system registry's set
// (internal/registry/systems Registry.Sections; formats/sections/intree in tests below the registry).
var ErrNoSections = errors.New("a plan or workload needs the registered systems' sections")

// sectioned reports whether documents of kind carry systems' sections.
func sectioned(kind string) bool { return kind == KindPlan || kind == KindWorkload }

// noSections is the error of reading a plan or workload without a SectionSet.
func noSections(name, kind string) error {
	return ErrorList{{File: name, Rule: fmt.Sprintf("a %s is read with the registered systems' sections: none were given (a caller's bug)", kind)}}.tagged(ErrNoSections)
}

// noSectionsProblem is the problem of validating a plan or workload without a SectionSet.
func noSectionsProblem(kind string) ErrorList {
	return ErrorList{{Rule: fmt.Sprintf("a %s is validated with the registered systems' sections: none were given (a caller's bug)", kind)}}
}

// ValidatorIn is a Section whose rules need the rest of the document its section is in (a
// plan's cluster for the GPU types it names): formats calls ValidateIn instead of Validate.
type ValidatorIn interface {
	ValidateIn(v any, doc Document) ErrorList
}

// validate runs every section's own validation; doc is the document they are in.
func (sv SectionValues) validate(doc Document) ErrorList {
	var out ErrorList
	for _, k := range sv.keys() {
		if vi, ok := sv[k].Section.(ValidatorIn); ok {
			out = append(out, vi.ValidateIn(sv[k].Value, doc)...)
			continue
		}
		out = append(out, sv[k].Section.Validate(sv[k].Value)...)
	}
	return out
}

// sectionKeys lists every section key a document of kind may have, in the sections' order
// (for messages).
func sectionKeys(kind string, secs *SectionSet) []string {
	var keys []string
	for _, sec := range ordered(secs.sections(kind)) {
		keys = append(keys, sec.Key())
	}
	return keys
}

// crossCheck runs every section's checks against the other files.
func (sv SectionValues) crossCheck(self string, docs map[string]Document) ErrorList {
	var out ErrorList
	for _, k := range sv.keys() {
		for _, e := range sv[k].Section.CrossCheck(sv[k].Value, self, docs) {
			if e.File == "" {
				c := *e
				c.File = self
				e = &c
			}
			out = append(out, e)
		}
	}
	return out
}

func (sv SectionValues) keys() []string {
	keys := make([]string, 0, len(sv))
	for k, v := range sv {
		if !absent(v.Value) {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		return sectionBefore(sv[keys[i]].Section, keys[i], sv[keys[j]].Section, keys[j])
	})
	return keys
}

// Positioned is a Section with a declared place among a document's sections
// (SectionOf.Position): files, schemas and checks take registered sections in ascending
// position, then by key; a Section without one (or position 0) comes after every
// positioned one. Declaring the places the typed fields had keeps a section's bytes where
// they were when it moves out of formats.
type Positioned interface {
	SectionPosition() int
}

// sectionBefore orders two registered sections: by position, then by key.
func sectionBefore(a Section, ka string, b Section, kb string) bool {
	pa, pb := position(a), position(b)
	if pa != pb {
		return pa < pb
	}
	return ka < kb
}

// ordered is secs sorted by position, then key (a new slice).
func ordered(secs []Section) []Section {
	out := slices.Clone(secs)
	slices.SortStableFunc(out, func(a, b Section) int {
		switch {
		case sectionBefore(a, a.Key(), b, b.Key()):
			return -1
		case sectionBefore(b, b.Key(), a, a.Key()):
			return 1
		}
		return 0
	})
	return out
}

// position is sec's declared place, or the largest int when it declares none.
func position(sec Section) int {
	if p, ok := sec.(Positioned); ok && p.SectionPosition() > 0 {
		return p.SectionPosition()
	}
	return math.MaxInt
}

// Keys lists the sections' keys in their order (Positioned, then by key).
func (sv SectionValues) Keys() []string { return sv.keys() }

// appendJSON splices the sections, in key order, into the JSON object obj (the typed part of
// a document, as encoding/json wrote it): what MarshalJSON of Plan and Workload return.
func (sv SectionValues) appendJSON(obj []byte) ([]byte, error) {
	if len(sv) == 0 {
		return obj, nil
	}
	obj = bytes.TrimSpace(obj)
	if len(obj) < 2 || obj[len(obj)-1] != '}' {
		return nil, fmt.Errorf("formats: cannot add sections to %q", obj)
	}
	out := append([]byte(nil), obj[:len(obj)-1]...)
	for _, k := range sv.keys() {
		v, err := marshalNoEscape(sv[k].Value)
		if err != nil {
			return nil, fmt.Errorf("section %s: %w", k, err)
		}
		if out[len(out)-1] != '{' {
			out = append(out, ',')
		}
		key, _ := marshalNoEscape(k)
		out = append(out, bytes.TrimSpace(key)...)
		out = append(out, ':')
		out = append(out, bytes.TrimSpace(v)...)
	}
	return append(out, '}'), nil
}

// SectionKeys lists the workload's sections that are present, in their order (by
// position: "models", "pipelines", "cascades", "llm_classes", "workflows" for the in-tree
// systems).
func (w *Workload) SectionKeys() []string {
	if w == nil {
		return nil
	}
	return w.Sections.keys()
}

// SectionKeys lists the plan's sections that are present, as Workload.SectionKeys does.
func (p *Plan) SectionKeys() []string {
	if p == nil {
		return nil
	}
	return p.Sections.keys()
}

// MarshalJSON writes the plan as encoding/json writes its fields, with its registered
// sections where a system's section stands in a plan: after the shared head (kind,
// metadata, provenance, cluster), before the fleet and the prediction.
func (p Plan) MarshalJSON() ([]byte, error) {
	type plain Plan
	head := plain(p)
	head.Fleet, head.Prediction = nil, nil
	js, err := marshalNoEscape(head)
	if err != nil {
		return nil, err
	}
	if js, err = p.Sections.appendJSON(js); err != nil {
		return nil, err
	}
	// The tags are Plan's own (fleet, prediction).
	tail, err := marshalNoEscape(struct {
		Fleet      *Fleet      `json:"fleet,omitempty"`
		Prediction *Prediction `json:"prediction,omitempty"`
	}{p.Fleet, p.Prediction})
	if err != nil {
		return nil, err
	}
	return joinObjects(js, tail), nil
}

// joinObjects appends the members of the JSON object b to the JSON object a (both as
// encoding/json writes them, no surrounding space).
func joinObjects(a, b []byte) []byte {
	if len(b) <= 2 {
		return a
	}
	out := append([]byte(nil), a[:len(a)-1]...)
	if len(a) > 2 {
		out = append(out, ',')
	}
	return append(out, b[1:]...)
}

// MarshalJSON writes the workload's shared fields as encoding/json does, then its
// sections.
func (w Workload) MarshalJSON() ([]byte, error) {
	type plain Workload
	js, err := marshalNoEscape(plain(w))
	if err != nil {
		return nil, err
	}
	return w.Sections.appendJSON(js)
}

// planFields and workloadFields are Plan and Workload without their JSON methods: what parse
// decodes a document's shared fields into (jsonx checks them as for any struct) once the
// registered sections are taken out.
type (
	planFields     Plan
	workloadFields Workload
)

// ErrSectionsNeeded is the error of decoding, with encoding/json, a plan or workload that
// holds a registered system's section: only the registered sections can read it (Decode,
// Parse and ReadInto with the set), and encoding/json alone would drop it without a word.
var ErrSectionsNeeded = errors.New("a plan's or workload's system sections are read with the registered systems' sections (formats.Decode, Parse or ReadInto), not encoding/json")

// UnmarshalJSON decodes a plan that holds only formats' own fields, and refuses one with a
// system's section (ErrSectionsNeeded) rather than lose it.
func (p *Plan) UnmarshalJSON(b []byte) error {
	if err := refuseSections[Plan]("formats.Plan", b); err != nil {
		return err
	}
	return json.Unmarshal(b, (*planFields)(p))
}

// UnmarshalJSON decodes a workload that holds only formats' own fields, and refuses one
// with a system's section (ErrSectionsNeeded) rather than lose it.
func (w *Workload) UnmarshalJSON(b []byte) error {
	if err := refuseSections[Workload]("formats.Workload", b); err != nil {
		return err
	}
	return json.Unmarshal(b, (*workloadFields)(w))
}

// refuseSections is ErrSectionsNeeded, naming the key, when the JSON object b has a
// top-level key that is none of T's own fields.
func refuseSections[T any](what string, b []byte) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return err
	}
	known := map[string]bool{}
	for _, f := range jsonFields(reflect.TypeFor[T]()) {
		known[f.Name] = true
	}
	for _, k := range slices.Sorted(maps.Keys(members)) {
		if !known[k] {
			return fmt.Errorf("%s: %q: %w", what, k, ErrSectionsNeeded)
		}
	}
	return nil
}

// compile-time check that SectionValues' JSON is what encoding/json would give a map.
var _ json.Marshaler = Plan{}

// takenSections are the registered sections parse took out of a document's tree: the
// document's own, and (plans) those of the workload its provenance embeds.
type takenSections struct {
	own, embedded SectionValues
	// cut are the keys taken out, by the path of their object (withoutKeys).
	cut map[string][]string
}

// takeSections takes the registered sections out of a plan or workload tree (nil when there
// were none and nothing was removed, so the original JSON bytes can be decoded).
func takeSections(kind string, doc Document, tree map[string]any, secs *SectionSet, errs *ErrorList) *takenSections {
	if secs == nil {
		return nil
	}
	n := len(*errs)
	before := keysOf(tree)
	t := &takenSections{own: extractSections(kind, reflect.TypeOf(doc).Elem(), tree, secs, errs), cut: map[string][]string{}}
	t.taken("", before, tree)
	if kind == KindPlan {
		if prov, ok := tree["provenance"].(map[string]any); ok {
			if emb, ok := prov["embedded"].(map[string]any); ok {
				if w, ok := emb["workload"].(map[string]any); ok {
					wbefore := keysOf(w)
					var werrs ErrorList
					t.embedded = extractSections(KindWorkload, reflect.TypeFor[Workload](), w, secs, &werrs)
					for _, e := range werrs {
						e.Path = keyPath(embeddedWorkloadPath, e.Path)
					}
					*errs = append(*errs, werrs...)
					t.taken(embeddedWorkloadPath, wbefore, w)
				}
			}
		}
	}
	if len(t.cut) == 0 && len(*errs) == n {
		return nil
	}
	return t
}

// embeddedWorkloadPath is where a plan embeds the workload it was solved for.
const embeddedWorkloadPath = "provenance.embedded.workload"

// keysOf lists the keys of an object of a tree.
func keysOf(obj map[string]any) []string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	return keys
}

// taken records which of the keys before are no longer in obj, the object at path.
func (t *takenSections) taken(path string, before []string, obj map[string]any) {
	for _, k := range before {
		if _, ok := obj[k]; !ok {
			t.cut[path] = append(t.cut[path], k)
		}
	}
}

// attach sets the taken sections on the decoded document.
func (t *takenSections) attach(doc Document) {
	if t == nil {
		return
	}
	switch d := doc.(type) {
	case *Plan:
		d.Sections = t.own
		if e := d.Provenance.Embedded; e != nil && e.Workload != nil {
			e.Workload.Sections = t.embedded
		}
	case *Workload:
		d.Sections = t.own
	}
}

// prose lists keys as prose: "a, b or c".
func prose(keys []string) string {
	if len(keys) < 2 {
		return strings.Join(keys, "")
	}
	return strings.Join(keys[:len(keys)-1], ", ") + " or " + keys[len(keys)-1]
}

// Set sets the value of sec's section among *sv, keeping sec with it so that validation,
// cross-checks and the optional interfaces (GPUUser, ModelUser, TraceTargeter) reach the
// system's own Section; a nil value (or a nil pointer) removes it. A system's package
// wraps it in a typed setter (dyorcsec.SetPlan).
func (sv *SectionValues) Set(sec Section, v any) {
	if absent(v) {
		delete(*sv, sec.Key())
		return
	}
	if *sv == nil {
		*sv = SectionValues{}
	}
	(*sv)[sec.Key()] = SectionValue{Section: sec, Value: v}
}
