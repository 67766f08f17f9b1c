package formats

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
)

// withoutKeys returns the JSON object js without the members that cut names: cut maps a
// dotted path of objects ("" is js itself, "provenance.embedded.workload" the workload a
// plan embeds) to the keys to drop there. Every other member keeps its bytes, so what the
// typed decode reads after parse took the registered sections out is the user's text —
// free-form values such as provenance.options keep their key order — rather than the tree
// re-marshalled with sorted keys.
func withoutKeys(js []byte, cut map[string][]string) ([]byte, error) {
	return cutObject(bytes.TrimSpace(js), "", cut)
}

// cutObject rebuilds the object obj at path: members named in cut[path] are dropped,
// members on the way to a deeper path of cut are rebuilt, every other one is copied.
func cutObject(obj []byte, path string, cut map[string][]string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	out := []byte{'{'}
	for dec.More() {
		start := dec.InputOffset()
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		end := dec.InputOffset()
		child := key
		if path != "" {
			child = path + "." + key
		}
		if slices.Contains(cut[path], key) {
			continue
		}
		member := bytes.TrimLeft(obj[start:end], ", \t\r\n")
		if onPath(child, cut) && bytes.HasPrefix(val, []byte{'{'}) {
			inner, err := cutObject(val, child, cut)
			if err != nil {
				return nil, err
			}
			head := bytes.TrimSuffix(member, val)
			member = append(append(make([]byte, 0, len(head)+len(inner)), head...), inner...)
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, member...)
	}
	return append(out, '}'), nil
}

// onPath reports whether some path of cut is p or lies below it.
func onPath(p string, cut map[string][]string) bool {
	for q := range cut {
		if q == p || strings.HasPrefix(q, p+".") {
			return true
		}
	}
	return false
}
