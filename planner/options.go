package planner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// RecordOptions encodes a system's typed options (its planner package's Flags struct, with
// JSON tags) for a plan's provenance.options.
func RecordOptions(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		// A Flags struct holds numbers, strings, booleans and durations: it always encodes.
		panic(fmt.Sprintf("planner: options %T do not encode: %v", v, err))
	}
	return b
}

// ReadOptions decodes a plan's provenance.options into dst, a pointer to a system's Flags
// struct already holding the values that apply when an option is absent. The object is read
// strictly: an unknown option or a value of the wrong type is an error naming the option.
//
// Plans written before the options were typed record every value as a string ({"max_batch":
// "16", "time_limit": "1m0s"}) and a few descriptive keys (PARD's "rule"): such a plan is read
// by the field types of dst (a number, boolean or integer field takes the string's contents),
// its unknown keys ignored, so `plan check --resolve` re-solves old plans unchanged.
func ReadOptions(raw json.RawMessage, dst any) error {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	strict := func(b []byte) error {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		return dec.Decode(dst)
	}
	err := strict(raw)
	if err == nil {
		return nil
	}
	var legacy map[string]string
	if json.Unmarshal(raw, &legacy) != nil {
		return optionsError(err)
	}
	conv, cerr := fromStrings(legacy, reflect.TypeOf(dst).Elem())
	if cerr != nil {
		return cerr
	}
	if err := strict(conv); err != nil {
		return optionsError(err)
	}
	return nil
}

// optionsError names the option and the value a decoding error is about.
func optionsError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("provenance.options.%s: a JSON %s: must be %s", te.Field, te.Value, te.Type)
	}
	return fmt.Errorf("provenance.options: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// fromStrings turns a string map into the JSON object of struct type t: each key that names
// a field of t takes its value as a JSON string where the field decodes from one (strings,
// durations), else as the JSON literal the string spells ("3", "true", "0.5").
func fromStrings(m map[string]string, t reflect.Type) ([]byte, error) {
	out := map[string]json.RawMessage{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		v, ok := m[name]
		if !ok {
			continue
		}
		if f.Type.Kind() == reflect.String || reflect.PointerTo(f.Type).Implements(reflect.TypeFor[json.Unmarshaler]()) {
			b, _ := json.Marshal(v)
			out[name] = b
			continue
		}
		if !json.Valid([]byte(v)) {
			return nil, fmt.Errorf("provenance.options.%s: %q: not a valid %s", name, v, f.Type.Kind())
		}
		out[name] = json.RawMessage(v)
	}
	return json.Marshal(out)
}
