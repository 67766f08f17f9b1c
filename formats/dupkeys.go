package formats

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrDuplicateKey marks a JSON object that holds the same key twice. encoding/json keeps
// the last value (`"count": 64, "count": 1` plans for one GPU) where the YAML decoder
// rejects the file: the same document must mean the same in both syntaxes, so a JSON
// duplicate is refused too, naming the key, its path and its line (issue 36 item 11).
var ErrDuplicateKey = errors.New("duplicate key")

// checkDuplicateKeys streams a JSON document's tokens (encoding/json's Decoder.Token: no
// second parse into maps) and reports every key that appears twice in one object, at any
// depth, as a problem of file name, tagged ErrDecode. Non-JSON input (YAML) and input that
// is not valid JSON return nil: the decoder proper reports those. Memory is the keys of the
// objects open on the current path, not the document.
func checkDuplicateKeys(name string, data []byte) error {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil
	}
	offset := int64(len(data) - len(trimmed))
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber() // numbers as their text: no float conversion
	var (
		errs  ErrorList
		stack []dupFrame // frames are reused: their key lists keep their capacity
		depth int
	)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			// Bad JSON: the decoder reports it (duplicates found before it still count).
			break
		}
		var top *dupFrame
		if depth > 0 {
			top = &stack[depth-1]
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				path := top.childPath()
				top.valueDone()
				if depth == len(stack) {
					stack = append(stack, dupFrame{})
				}
				f := &stack[depth]
				*f = dupFrame{path: path, object: d == '{', index: -1, keys: f.keys[:0]}
				depth++
			case '}', ']':
				depth--
			}
			continue
		}
		if top != nil && top.object && !top.inValue {
			key := tok.(string) // the decoder accepts only strings as keys
			top.key, top.inValue = key, true
			if top.seen(key) {
				line, _ := lineCol(data, offset+dec.InputOffset())
				errs = append(errs, &FieldError{File: name, Path: field(top.path, key),
					Rule: fmt.Sprintf("duplicate key %q (line %d): a key may appear once in an object (JSON decoders would keep only the last)", key, line)})
				if len(errs) >= maxDuplicateKeys {
					break
				}
			}
			continue
		}
		if top != nil {
			top.childPath() // advances an array's index
			top.valueDone()
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs.tagged(errors.Join(ErrDecode, ErrDuplicateKey))
}

// maxDuplicateKeys stops the scan after this many duplicates: the file is refused anyway.
const maxDuplicateKeys = 100

// dupFrame is one open object or array on the path being scanned.
type dupFrame struct {
	path    string
	object  bool
	keys    []string            // the object's keys so far, while few
	keySet  map[string]struct{} // all of them, once there are many
	key     string              // the object's current key
	inValue bool                // an object's key was read, its value not yet
	index   int                 // an array's current element
}

// childPath is the path of the value that starts next in f (the document's root when f is
// nil): an object's current key, or an array's next element.
func (f *dupFrame) childPath() string {
	switch {
	case f == nil:
		return ""
	case f.object:
		return field(f.path, f.key)
	default:
		f.index++
		return idx(f.path, f.index)
	}
}

// valueDone records that a value of f ended (an object's next token is a key again).
func (f *dupFrame) valueDone() {
	if f != nil && f.object {
		f.inValue = false
	}
}

// seen records key in object f and says whether f held it already. A small object (most
// are) scans a slice; a large one switches to a map.
func (f *dupFrame) seen(key string) bool {
	if f.keySet != nil {
		_, dup := f.keySet[key]
		f.keySet[key] = struct{}{}
		return dup
	}
	for _, k := range f.keys {
		if k == key {
			return true
		}
	}
	f.keys = append(f.keys, key)
	if len(f.keys) > 32 {
		f.keySet = make(map[string]struct{}, 2*len(f.keys))
		for _, k := range f.keys {
			f.keySet[k] = struct{}{}
		}
	}
	return false
}
