package formats

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/plan-dev/plan/formats/jsonx"
	yaml "go.yaml.in/yaml/v3"
)

// A document is first parsed into a generic tree — map[string]any, []any, string, bool, nil,
// json.Number for finite numbers and float64 only for NaN/±Inf (which YAML can write as .nan
// and .inf) — so that the structural check can report every unknown field, wrong type and
// non-finite number with its path before anything is decoded into Go types.

// maxAliasNodes bounds how many nodes YAML aliases may expand to ("billion laughs").
const maxAliasNodes = 1 << 20

// parseTree parses YAML or JSON bytes into a generic tree whose top level is a mapping. For
// JSON input it also returns the JSON text, which encoding/json can then decode directly.
func parseTree(data []byte) (tree map[string]any, js []byte, err error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, nil, errors.New("empty file")
	}
	var v any
	if trimmed[0] == '{' {
		v, err = jsonTree(trimmed)
		js = trimmed
	} else {
		v, err = yamlTree(data)
	}
	if err != nil {
		return nil, nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil, errors.New("top level must be a mapping with apiVersion and kind")
	}
	return m, js, nil
}

func jsonTree(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := lineCol(data, se.Offset)
			return nil, fmt.Errorf("invalid JSON at line %d, column %d: %s", line, col, se.Error())
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errors.New("invalid JSON: unexpected end of input")
		}
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: trailing data after the document")
	}
	return v, nil
}

// lineCol converts a byte offset (1-based, as json.SyntaxError reports it) into a line and column.
func lineCol(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	line, col = 1, 1
	for _, c := range data[:max(offset-1, 0)] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

func yamlTree(data []byte) (tree any, err error) {
	defer func() {
		// The YAML parser is third-party code; a panic on hostile input must not crash us.
		if r := recover(); r != nil {
			tree, err = nil, fmt.Errorf("invalid YAML: %v", r)
		}
	}()
	if line, ok := yamlFlowDepthOK(data); !ok {
		return nil, fmt.Errorf("invalid YAML: line %d: nested deeper than %d levels", line, jsonx.DefaultMaxDepth)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, errors.New("empty file")
		}
		return nil, fmt.Errorf("invalid YAML: %s", trimYAMLErr(err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		if err != nil {
			return nil, fmt.Errorf("invalid YAML: %s", trimYAMLErr(err))
		}
		return nil, errors.New("invalid YAML: more than one document in the file")
	}
	c := &yamlConv{active: map[*yaml.Node]bool{}}
	return c.convert(&doc, false)
}

// yamlFlowDepthOK scans YAML text for flow collections ([ and {, outside quotes and
// comments) open more than jsonx.DefaultMaxDepth deep, and returns the line of the first
// bracket past the limit. The YAML parser builds a node of a few hundred bytes per level
// before anything can refuse it (5,000 brackets: 3 MB), so depth is bounded before it runs;
// block nesting needs a line of indentation per level and stays cheap. A bracket inside a
// plain scalar (a[1]) counts too, balanced by its partner.
func yamlFlowDepthOK(data []byte) (line int, ok bool) {
	depth, line := 0, 1
	var quote byte
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '\n':
			line++
			if quote == '#' {
				quote = 0
			}
		case quote == '#':
		case quote == '"' && c == '\\':
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' && (i == 0 || data[i-1] == ' ' || data[i-1] == '\t' || data[i-1] == '\n'):
			quote = '#'
		case c == '[' || c == '{':
			if depth++; depth > jsonx.DefaultMaxDepth {
				return line, false
			}
		case c == ']' || c == '}':
			depth = max(depth-1, 0)
		}
	}
	return 0, true
}

func trimYAMLErr(err error) string {
	msg := err.Error()
	const p = "yaml: "
	if len(msg) > len(p) && msg[:len(p)] == p {
		return msg[len(p):]
	}
	return msg
}

type yamlConv struct {
	aliasNodes int
	// depth is the nesting of the node being converted: bounded as JSON's is
	// (jsonx.DefaultMaxDepth), so that no document costs memory or stack per level.
	depth  int
	active map[*yaml.Node]bool // anchors being expanded, to reject recursive aliases
}

func (c *yamlConv) convert(n *yaml.Node, viaAlias bool) (any, error) {
	if viaAlias {
		c.aliasNodes++
		if c.aliasNodes > maxAliasNodes {
			return nil, errors.New("invalid YAML: aliases expand to too many nodes")
		}
	}
	if n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode {
		if c.depth >= jsonx.DefaultMaxDepth {
			return nil, fmt.Errorf("invalid YAML: line %d: nested deeper than %d levels", n.Line, jsonx.DefaultMaxDepth)
		}
		c.depth++
		defer func() { c.depth-- }()
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.convert(n.Content[0], viaAlias)
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, fmt.Errorf("invalid YAML: line %d: unknown alias", n.Line)
		}
		if c.active[n.Alias] {
			return nil, fmt.Errorf("invalid YAML: line %d: recursive alias", n.Line)
		}
		c.active[n.Alias] = true
		defer delete(c.active, n.Alias)
		return c.convert(n.Alias, true)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, item := range n.Content {
			v, err := c.convert(item, viaAlias)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		var merges []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				merges = append(merges, val)
				continue
			}
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("invalid YAML: line %d: mapping keys must be strings", k.Line)
			}
			if _, dup := out[k.Value]; dup {
				return nil, fmt.Errorf("invalid YAML: line %d: duplicate key %q", k.Line, k.Value)
			}
			v, err := c.convert(val, viaAlias)
			if err != nil {
				return nil, err
			}
			out[k.Value] = v
		}
		// Merge keys (<<: *base) fill in what the mapping does not set itself.
		for _, m := range merges {
			srcs := []*yaml.Node{m}
			if m.Kind == yaml.SequenceNode {
				srcs = m.Content
			}
			for _, s := range srcs {
				v, err := c.convert(s, viaAlias)
				if err != nil {
					return nil, err
				}
				sm, ok := v.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("invalid YAML: line %d: << must merge a mapping", m.Line)
				}
				for k, x := range sm {
					if _, set := out[k]; !set {
						out[k] = x
					}
				}
			}
		}
		return out, nil
	case yaml.ScalarNode:
		return scalar(n)
	}
	return nil, fmt.Errorf("invalid YAML: line %d: unsupported node", n.Line)
}

func scalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, fmt.Errorf("invalid YAML: line %d: %s", n.Line, trimYAMLErr(err))
		}
		return b, nil
	case "!!int":
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("invalid YAML: line %d: %s", n.Line, trimYAMLErr(err))
		}
		switch x := v.(type) {
		case int:
			return json.Number(strconv.FormatInt(int64(x), 10)), nil
		case int64:
			return json.Number(strconv.FormatInt(x, 10)), nil
		case uint64:
			return json.Number(strconv.FormatUint(x, 10)), nil
		case float64:
			return floatNode(x), nil
		}
		return n.Value, nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, fmt.Errorf("invalid YAML: line %d: %s", n.Line, trimYAMLErr(err))
		}
		return floatNode(f), nil
	}
	// !!str, !!timestamp, !!binary and custom tags keep their text.
	return n.Value, nil
}

// floatNode keeps non-finite values as float64 so the structural check can reject them with a
// path; finite values become json.Number like everything else.
func floatNode(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return f
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
}
