package formats

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"
)

// The generic tree the structural check walks costs 20-30 times a JSON file's size (a map
// per object, a boxed value per number): a 98 MB trace of 3 M requests took 2.6 GB to
// validate, a 200 MB plan 3.2-3.6 GB. A JSON document is therefore first
// checked in one streaming pass of encoding/json's Decoder.Token against the document's Go
// type, accepting exactly what checkStructure accepts, and one that passes is decoded
// straight into its type: memory is the file and the decoded document. A document the pass
// does not accept (any problem, a duplicate key, a registered section the typed fields do
// not hold) takes the tree path, which reports every problem as before.

// treeOnly turns the streaming pass off (tests compare the two paths).
var treeOnly = false

// parseStreaming is parse's first step: the gate (checkDuplicateKeys: duplicate keys, nesting)
// refuses a JSON document, or a document the streaming pass accepts is decoded, or nil and
// nil: the tree path parses the document as before.
func parseStreaming(name string, data []byte, wantKind string) (Document, error) {
	if err := checkDuplicateKeys(name, data); err != nil {
		return nil, err
	}
	if !treeOnly {
		if doc, ok := parseJSONStream(data, wantKind); ok {
			return doc, nil
		}
	}
	return nil, nil
}

// parseJSONStream decodes a JSON document that needs nothing of the tree path. ok is false
// when it cannot (not JSON, or the tree path must report or handle something): the caller
// then parses as before. Problems it finds are the tree path's to report, never its own.
func parseJSONStream(data []byte, wantKind string) (doc Document, ok bool) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, false
	}
	// The kind picks the type to check against: a skimming decode of two fields (encoding/json
	// skips the other values without building them). The streaming pass then requires the
	// exact spelling of both, as the tree path does.
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if json.Unmarshal(trimmed, &meta) != nil || meta.APIVersion != APIVersion || (wantKind != "" && meta.Kind != wantKind) {
		return nil, false
	}
	doc, err := newDocument(meta.Kind)
	if err != nil {
		return nil, false
	}
	s := &streamCheck{dec: json.NewDecoder(bytes.NewReader(trimmed)), fields: map[reflect.Type]*streamFields{}}
	s.dec.UseNumber()
	tok, ok := s.next()
	if !ok || !s.value(reflect.TypeOf(doc).Elem(), tok) {
		return nil, false
	}
	if _, err := s.dec.Token(); err != io.EOF {
		return nil, false // trailing data
	}
	s.presize(reflect.ValueOf(doc).Elem())
	if StrictUnmarshal(trimmed, doc) != nil {
		return nil, false
	}
	return doc, true
}

// minPresized is the smallest array whose slice is made at its full size before decoding.
const minPresized = 1024

// presized is a large array outside any array or map: its slice's field path from the
// document's root, and its length.
type presized struct {
	path []int
	n    int
}

// presize makes the slices of the large arrays the pass counted at their full capacity, so
// encoding/json fills them in place instead of growing them by copies (a trace's 3 M
// requests were held twice while the slice grew). Pointers on the way are allocated: the
// pass saw an object there, which encoding/json would allocate anyway.
func (s *streamCheck) presize(root reflect.Value) {
	for _, p := range s.sizes {
		v := root
		for _, i := range p.path {
			v = v.Field(i)
			if v.Kind() == reflect.Pointer {
				if v.IsNil() {
					v.Set(reflect.New(v.Type().Elem()))
				}
				v = v.Elem()
			}
		}
		v.Set(reflect.MakeSlice(v.Type(), 0, p.n))
	}
}

// streamCheck walks a token stream against a Go type.
type streamCheck struct {
	dec    *json.Decoder
	fields map[reflect.Type]*streamFields
	// path is the field path of the value being checked while nested is 0 (it is in no
	// array or map); sizes are the large arrays met there.
	path   []int
	nested int
	sizes  []presized
}

// streamFields are a struct type's JSON properties by name.
type streamFields struct {
	list   []jsonField
	byName map[string]int
}

func (s *streamCheck) next() (json.Token, bool) {
	tok, err := s.dec.Token()
	return tok, err == nil
}

// item reads the next token inside an array or object: more is false at its close (or at an
// error, when ok is false too).
func (s *streamCheck) item(close json.Delim) (tok json.Token, more, ok bool) {
	tok, ok = s.next()
	return tok, ok && tok != close, ok
}

func (s *streamCheck) structFields(t reflect.Type) *streamFields {
	if f, ok := s.fields[t]; ok {
		return f
	}
	f := &streamFields{list: jsonFields(t), byName: map[string]int{}}
	for i, jf := range f.list {
		f.byName[jf.Name] = i
	}
	s.fields[t] = f
	return f
}

// value reports whether the value that starts with tok (and the tokens after it) is one
// checkStructure accepts for type t without a problem.
func (s *streamCheck) value(t reflect.Type, tok json.Token) bool {
	if t == durationType {
		str, ok := tok.(string)
		if !ok {
			return false
		}
		_, err := time.ParseDuration(str)
		return err == nil
	}
	if t == prefixGroupType {
		return prefixGroupOK(tok)
	}
	if t == rawObjectType { // provenance.options: any object (the system's reader checks it), or null
		return tok == nil || (tok == json.Delim('{') && s.anyObject())
	}
	switch t.Kind() {
	case reflect.Pointer:
		return tok == nil || s.value(t.Elem(), tok)
	case reflect.Struct:
		return tok == json.Delim('{') && s.object(t)
	case reflect.Slice:
		if tok == nil {
			return true
		}
		if tok != json.Delim('[') || t.Elem().Kind() == reflect.Uint8 { // []byte is base64 to encoding/json
			return false
		}
		s.nested++
		defer func() { s.nested-- }()
		for n := 0; ; n++ {
			tok, more, ok := s.item(']')
			if !more {
				if ok && s.nested == 1 && n >= minPresized {
					s.sizes = append(s.sizes, presized{path: slices.Clone(s.path), n: n})
				}
				return ok
			}
			if !s.value(t.Elem(), tok) {
				return false
			}
		}
	case reflect.Map:
		if tok == nil {
			return true
		}
		if tok != json.Delim('{') || t.Key().Kind() != reflect.String {
			return false
		}
		s.nested++
		defer func() { s.nested-- }()
		return s.members(func(tok json.Token) bool { return s.value(t.Elem(), tok) })
	case reflect.String:
		_, ok := tok.(string)
		return ok
	case reflect.Bool:
		_, ok := tok.(bool)
		return ok
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := tok.(json.Number)
		if !ok {
			return false
		}
		_, err := strconv.ParseInt(string(n), 10, t.Bits())
		return err == nil
	case reflect.Float32, reflect.Float64:
		n, ok := tok.(json.Number)
		if !ok {
			return false
		}
		f, err := strconv.ParseFloat(string(n), t.Bits())
		return err == nil && !math.IsInf(f, 0)
	}
	return false // a type checkStructure does not support
}

// anyObject checks the members of an object of any shape (its '{' read): well-formed, no key
// given twice at any depth (the tree path reports duplicates).
func (s *streamCheck) anyObject() bool { return s.members(s.anyValue) }

// members checks the members of an object (its '{' read) whose values value checks: well-formed
// and no key given twice (a duplicate: the tree path reports it).
func (s *streamCheck) members(value func(tok json.Token) bool) bool {
	seen := map[string]bool{}
	for {
		tok, more, ok := s.item('}')
		if !more {
			return ok
		}
		key, _ := tok.(string)
		if seen[key] {
			return false
		}
		seen[key] = true
		if tok, ok = s.next(); !ok || !value(tok) {
			return false
		}
	}
}

// anyValue checks a value of any shape that starts with tok.
func (s *streamCheck) anyValue(tok json.Token) bool {
	switch tok {
	case json.Delim('{'):
		return s.anyObject()
	case json.Delim('['):
		for {
			tok, more, ok := s.item(']')
			if !more {
				return ok
			}
			if !s.anyValue(tok) {
				return false
			}
		}
	}
	if n, ok := tok.(json.Number); ok {
		f, err := strconv.ParseFloat(string(n), 64)
		return err == nil && !math.IsInf(f, 0)
	}
	_, isDelim := tok.(json.Delim)
	return !isDelim
}

// object checks the members of an object (its '{' read) against struct type t: every key
// one of its properties, spelt exactly and given once, and every required one present.
func (s *streamCheck) object(t reflect.Type) bool {
	f := s.structFields(t)
	present := make([]bool, len(f.list))
	for {
		tok, more, ok := s.item('}')
		if !ok {
			return false
		}
		if !more {
			break
		}
		key, _ := tok.(string)
		i, known := f.byName[key]
		if !known || present[i] {
			return false
		}
		present[i] = true
		if s.nested == 0 {
			s.path = append(s.path, f.list[i].Index...)
		}
		if tok, ok = s.next(); !ok || !s.value(f.list[i].Type, tok) {
			return false
		}
		if s.nested == 0 {
			s.path = s.path[:len(s.path)-len(f.list[i].Index)]
		}
	}
	for i, jf := range f.list {
		if jf.Required && !present[i] {
			return false
		}
	}
	return true
}
