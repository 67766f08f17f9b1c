package jsonx

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// kind is what the scan expects of a value: what encoding/json will decode it into.
type kind uint8

const (
	kAny    kind = iota // any shape: an interface, a json.RawMessage, a custom unmarshaler
	kNumber             // an integer or a float: null is refused unless through a pointer
	kStruct             // an object whose keys are matched against fields
	kSlice              // an array (or a Go array) of elem
	kMap                // an object of elem values under any keys
	kScalar             // a string, a bool, a []byte (base64): nothing more to check
)

// info describes a Go type for the scan. Infos are built once per type and shared (a
// recursive type refers to itself).
type info struct {
	kind   kind
	elem   ref
	fields []field
	byName map[string]int
	// longest is the length of the longest field name.
	longest int
}

// ref is a use of a type: nullable when reached through a pointer.
type ref struct {
	t        *info
	nullable bool
}

// field is one JSON property of a struct.
type field struct {
	name string
	ref  ref
}

var anyInfo = &info{kind: kAny}

var (
	infoMu    sync.Mutex
	infoCache = map[reflect.Type]*info{}
)

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// refOf returns the ref of type t, building (and caching) the infos it needs.
func refOf(t reflect.Type) ref {
	infoMu.Lock()
	defer infoMu.Unlock()
	return buildRef(t)
}

func buildRef(t reflect.Type) ref {
	nullable := false
	for t.Kind() == reflect.Pointer && !custom(t) {
		nullable = true
		t = t.Elem()
	}
	return ref{t: buildInfo(t), nullable: nullable}
}

// custom reports a type that decodes itself (encoding/json calls its UnmarshalJSON or
// UnmarshalText): the scan checks only its shape's generic rules.
func custom(t reflect.Type) bool {
	if t.Implements(jsonUnmarshaler) || t.Implements(textUnmarshaler) {
		return true
	}
	if t.Kind() != reflect.Pointer {
		pt := reflect.PointerTo(t)
		return pt.Implements(jsonUnmarshaler) || pt.Implements(textUnmarshaler)
	}
	return false
}

func buildInfo(t reflect.Type) *info {
	if in, ok := infoCache[t]; ok {
		return in
	}
	if custom(t) {
		infoCache[t] = anyInfo
		return anyInfo
	}
	in := &info{}
	infoCache[t] = in // before the fields: a recursive type finds itself
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		in.kind = kNumber
	case reflect.String, reflect.Bool:
		in.kind = kScalar
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !custom(t.Elem()) {
			in.kind = kScalar // base64 text
			break
		}
		in.kind, in.elem = kSlice, buildRef(t.Elem())
	case reflect.Array:
		in.kind, in.elem = kSlice, buildRef(t.Elem())
	case reflect.Map:
		in.kind, in.elem = kMap, buildRef(t.Elem())
	case reflect.Struct:
		in.kind = kStruct
		in.byName = map[string]int{}
		collectFields(in, t, map[reflect.Type]bool{})
	default: // interfaces and what encoding/json cannot decode (it reports those)
		in.kind = kAny
	}
	return in
}

// collectFields adds t's JSON properties to in as encoding/json sees them: exported fields
// by their tag's name or their own, "-" skipped, the fields of an untagged embedded struct
// (or pointer to one) promoted. A name already taken by a shallower field keeps it.
func collectFields(in *info, t reflect.Type, seen map[reflect.Type]bool) {
	if seen[t] {
		return
	}
	seen[t] = true
	var embedded []reflect.Type
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			et := sf.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				embedded = append(embedded, et)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if _, taken := in.byName[name]; taken {
			continue
		}
		in.byName[name] = len(in.fields)
		in.longest = max(in.longest, len(name))
		in.fields = append(in.fields, field{name: name, ref: buildRef(sf.Type)})
	}
	for _, et := range embedded {
		collectFields(in, et, seen)
	}
}
