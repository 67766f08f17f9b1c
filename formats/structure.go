package formats

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/plan-dev/plan/formats/jsonx"
)

// The structural check walks a generic tree against a Go type, the same way the JSON Schema
// generator walks the type, so decoding accepts exactly what the published schemas describe:
// no unknown fields (matched case-sensitively), every field without omitempty present, the
// right JSON type everywhere, integers where Go has ints, finite numbers, duration strings.
// null is accepted only for slices, maps and pointers (it means "absent").

var durationType = reflect.TypeFor[Duration]()

// rawObjectType is a JSON object whose fields its reader defines (provenance.options: each
// system's typed planner options): any object, or null.
var rawObjectType = reflect.TypeFor[json.RawMessage]()

// jsonField is one JSON property of a struct type, after flattening embedded structs.
type jsonField struct {
	Name     string
	Index    []int
	Type     reflect.Type
	Required bool // no omitempty/omitzero
	// Parent is the struct type that declares the field (TypeMeta for apiVersion/kind).
	Parent reflect.Type
}

var fieldCache sync.Map // reflect.Type -> []jsonField

// jsonFields lists the JSON properties of a struct type in declaration order.
func jsonFields(t reflect.Type) []jsonField {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]jsonField)
	}
	var out []jsonField
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(append([]int(nil), index...), i)
			if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
				walk(sf.Type, idx)
				continue
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			out = append(out, jsonField{
				Name:     name,
				Index:    idx,
				Type:     sf.Type,
				Required: !hasOpt(opts, "omitempty") && !hasOpt(opts, "omitzero"),
				Parent:   t,
			})
		}
	}
	walk(t, nil)
	fieldCache.Store(t, out)
	return out
}

func hasOpt(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

// checkStructure reports every structural problem of tree v against type t.
func checkStructure(t reflect.Type, v any, path string, errs *ErrorList) {
	bad := func(rule string) {
		*errs = append(*errs, &FieldError{Path: path, Value: renderTree(v), Rule: rule})
	}
	if t == durationType {
		s, ok := v.(string)
		if !ok {
			bad(`must be a duration string such as "200ms"`)
			return
		}
		if _, err := time.ParseDuration(s); err != nil {
			bad(`must be a duration such as "200ms" or "1.5s"`)
		}
		return
	}
	if t == prefixGroupType {
		if !prefixGroupOK(v) {
			bad(prefixGroupRule)
		}
		return
	}
	if t == rawObjectType {
		if _, ok := v.(map[string]any); !ok && v != nil {
			bad("must be an object")
		}
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v != nil {
			checkStructure(t.Elem(), v, path, errs)
		}
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			bad("must be an object")
			return
		}
		fields := jsonFields(t)
		byName := make(map[string]*jsonField, len(fields))
		for i := range fields {
			byName[fields[i].Name] = &fields[i]
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		suggested := map[string]bool{} // a typo is one problem: no "missing" for its suggestion
		for _, k := range keys {
			if byName[k] == nil {
				s := suggest(k, fields)
				rule := "unknown field"
				if s != "" {
					rule = fmt.Sprintf("unknown field (did you mean %s?)", s)
					if _, set := m[s]; !set {
						suggested[s] = true
					}
				}
				*errs = append(*errs, &FieldError{Path: keyPath(path, k), Rule: rule})
			}
		}
		for _, f := range fields {
			x, present := m[f.Name]
			if !present {
				if f.Required && !suggested[f.Name] {
					*errs = append(*errs, &FieldError{Path: keyPath(path, f.Name), Rule: "missing required field"})
				}
				continue
			}
			checkStructure(f.Type, x, keyPath(path, f.Name), errs)
		}
	case reflect.Slice:
		if v == nil {
			return
		}
		a, ok := v.([]any)
		if !ok {
			bad("must be an array")
			return
		}
		for i, x := range a {
			checkStructure(t.Elem(), x, idx(path, i), errs)
		}
	case reflect.Map:
		if v == nil {
			return
		}
		m, ok := v.(map[string]any)
		if !ok {
			bad("must be an object")
			return
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			checkStructure(t.Elem(), m[k], keyPath(path, k), errs)
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			bad("must be a string")
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			bad("must be true or false")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			if f, isF := v.(float64); isF && (math.IsNaN(f) || math.IsInf(f, 0)) {
				bad("must be a finite integer")
				return
			}
			bad("must be an integer")
			return
		}
		if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err != nil {
			if ne, isNum := err.(*strconv.NumError); isNum && ne.Err == strconv.ErrRange {
				bad(fmt.Sprintf("must be an integer that fits in %d bits", t.Bits()))
			} else {
				bad("must be an integer")
			}
		}
	case reflect.Float32, reflect.Float64:
		switch x := v.(type) {
		case json.Number:
			f, err := strconv.ParseFloat(string(x), t.Bits())
			if err != nil || math.IsInf(f, 0) {
				bad("must be a finite number")
			}
		case float64:
			bad("must be a finite number")
		default:
			bad("must be a number")
		}
	default:
		bad(fmt.Sprintf("unsupported Go type %s", t))
	}
}

// suggest returns the known field an unknown key was probably meant to be (a wrong case or
// at most two edits away), or "".
func suggest(k string, fields []jsonField) string {
	best, bestD := "", 3
	for _, f := range fields {
		if strings.EqualFold(f.Name, k) {
			return f.Name
		}
		if d := editDistance(k, f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if abs(len(a)-len(b)) > 2 || len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// keyPath appends a property name, quoting keys that are not plain identifiers (map keys such
// as GPU types are fine; "a.b" or "" are quoted so the path stays unambiguous).
func keyPath(path, key string) string {
	if isIdent(key) && len(key) <= jsonx.MaxEcho {
		return field(path, key)
	}
	return path + "[" + Echo(key) + "]"
}

// isIdent matches ^[A-Za-z_$][A-Za-z0-9_$-]*$.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '$':
		case i > 0 && (c >= '0' && c <= '9' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// renderTree renders a value of the generic tree for an error message.
func renderTree(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return render(x)
	case json.Number:
		return string(x)
	case float64:
		return render(x)
	case bool:
		return strconv.FormatBool(x)
	case map[string]any:
		return "{...}"
	case []any:
		return "[...]"
	}
	return fmt.Sprint(v)
}
