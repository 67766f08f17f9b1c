package formats

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// ParseBeyondUnknown is Parse for a reader that wants every problem of a file in one pass
// (`plan validate`): when Parse's only problems are unknown fields, it also parses the
// document with those fields removed and returns it beside them, so the semantic rules can
// be checked now rather than after the fields are fixed. Any other structural problem (a
// wrong type, a missing field) returns Parse's error and no document, as Parse does.
func ParseBeyondUnknown(name string, data []byte, secs *SectionSet) (Document, ErrorList, error) {
	doc, err := Parse(name, data, secs)
	if err == nil {
		return doc, nil, nil
	}
	errs := Problems(err)
	if !errors.Is(err, ErrDecode) || len(errs) == 0 {
		return nil, nil, err
	}
	for _, e := range errs {
		if !strings.HasPrefix(e.Rule, "unknown field") || e.Path == "" {
			return nil, nil, err
		}
	}
	tree, _, perr := parseTree(data)
	if perr != nil {
		return nil, nil, err
	}
	for _, e := range errs {
		deletePath(tree, e.Path)
	}
	stripped, merr := json.Marshal(tree)
	if merr != nil {
		return nil, nil, err
	}
	doc, err2 := Parse(name, stripped, secs)
	if err2 != nil {
		return nil, nil, err
	}
	return doc, errs, nil
}

// deletePath removes the key a problem's path names ("a.b[2].c") from tree; a path that
// does not resolve is left alone.
func deletePath(tree map[string]any, path string) {
	var cur any = tree
	parts := splitPath(path)
	for i, p := range parts {
		last := i == len(parts)-1
		switch v := cur.(type) {
		case map[string]any:
			if last {
				delete(v, p)
				return
			}
			cur = v[p]
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n >= len(v) || last {
				return
			}
			cur = v[n]
		default:
			return
		}
	}
}

// splitPath splits "a.b[2].c" into a, b, 2, c.
func splitPath(path string) []string {
	var out []string
	for _, seg := range strings.Split(path, ".") {
		for seg != "" {
			i := strings.IndexByte(seg, '[')
			if i < 0 {
				out = append(out, seg)
				break
			}
			if i > 0 {
				out = append(out, seg[:i])
			}
			j := strings.IndexByte(seg[i:], ']')
			if j < 0 {
				out = append(out, seg[i+1:])
				break
			}
			out = append(out, seg[i+1:i+j])
			seg = seg[i+j+1:]
		}
	}
	return out
}
