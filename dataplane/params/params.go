// Package params decodes a policy's string parameters (dataplane.Config.Params from --param
// flags, App.Params from a plan) into one typed options struct whose json tags name the
// keys (options travel as typed structs, not as string maps each policy
// parses by hand). PARD's pipeline policies and PPipe's dispatcher use it.
package params

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/plan-dev/plan/dataplane"
)

// Decode sets the fields of the struct *dst named by their json tags from the string
// values of m (dataplane.Config.Params, App.Params), in key order. Field kinds: float64,
// int, uint64 and bool. Numbers take dataplane.ParseNumber's spellings (a finite number,
// or true/false for 1/0); int and uint64 fields want a whole number; a bool field takes
// true/false or a number (non-zero is true): the spellings plans and --param flags used
// when the parameters were a map of floats. A key no field claims is an error naming it
// and the known ones, unless skipUnknown (a plan may carry parameters for other tools).
func Decode[T any](policy string, dst *T, m map[string]string, skipUnknown bool) error {
	v := reflect.ValueOf(dst).Elem()
	fields := paramFields(v.Type())
	keys := slices.Sorted(maps.Keys(m))
	for _, k := range keys {
		i, ok := fields[k]
		if !ok {
			if skipUnknown {
				continue
			}
			return fmt.Errorf("policy %s: unknown parameter %q (known: %v)", policy, k, Names[T]())
		}
		if err := setParam(policy, k, m[k], v.Field(i)); err != nil {
			return err
		}
	}
	return nil
}

// setParam parses s into field f (parameter k).
func setParam(policy, k, s string, f reflect.Value) error {
	if f.Kind() == reflect.Bool {
		if b, err := strconv.ParseBool(strings.TrimSpace(s)); err == nil {
			f.SetBool(b)
			return nil
		}
	}
	x, err := dataplane.ParseNumber(policy, k, s)
	if err != nil && f.Kind() == reflect.Bool {
		return fmt.Errorf("policy %s: parameter %s: %q: must be true or false (or a number: non-zero is true)", policy, k, s)
	}
	if err != nil {
		return err
	}
	switch f.Kind() {
	case reflect.Float64:
		f.SetFloat(x)
	case reflect.Bool:
		f.SetBool(x != 0)
	case reflect.Int:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return fmt.Errorf("policy %s: parameter %s: %q: must be a whole number", policy, k, s)
		}
		f.SetInt(int64(x))
	case reflect.Uint64:
		if x != math.Trunc(x) || x < 0 || x > 1<<53 {
			return fmt.Errorf("policy %s: parameter %s: %q: must be a whole number ≥ 0", policy, k, s)
		}
		f.SetUint(uint64(x))
	default:
		panic(fmt.Sprintf("params.Decode: field %s: unsupported kind %v", k, f.Kind())) // a bug in the options struct
	}
	return nil
}

// paramFields maps the json tag of every field of struct type t to its index.
func paramFields(t reflect.Type) map[string]int {
	out := make(map[string]int, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
			out[tag] = i
		}
	}
	return out
}

// Names lists the parameter names (json tags) of T, sorted.
func Names[T any]() []string {
	var zero T
	fields := paramFields(reflect.TypeOf(zero))
	out := make([]string, 0, len(fields))
	for k := range fields {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
