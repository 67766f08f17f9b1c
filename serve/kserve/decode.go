package kserve

// The infer endpoint's request decoder has a fast path for the shape nearly every request
// has: {"id": "...", "inputs": [{"name", "shape", "datatype", "data"}]} with plain ASCII
// strings, integer shapes and numeric data. encoding/json decodes such a body by reflection
// at several µs per request, most of the server's own CPU per request after the HTTP stack,
// and that CPU bounds how many requests a core can take before the driver falls behind. The
// fast path answers only when it is sure: anything
// else (escapes, non-ASCII, other fields, null, duplicate keys, strings or booleans in the
// data, malformed JSON) returns ok = false and the request goes through encoding/json, which
// stays the reference and produces every error message. FuzzDecodeFast checks that whenever
// the fast path answers, encoding/json decodes the same request.

// maxFastDepth bounds the nesting of the data array the fast path walks (checkData refuses
// anything deeper than 32 levels; the reference decoder reports it).
const maxFastDepth = 32

// decodeInferFast parses body if it has the common shape. The tensors' Data alias body.
// Strings equal to spec's name or datatype, which nearly every request repeats, are
// returned as spec's, without an allocation.
func decodeInferFast(body []byte, spec TensorSpec) (req InferRequest, ok bool) {
	p := fastParser{b: body, name: spec.Name, dtype: spec.Datatype}
	var seenID, seenInputs bool
	p.ws()
	ok = p.object(func(key []byte) bool {
		switch string(key) { // no allocation: the compiler compares the bytes
		case "id":
			if seenID {
				return false
			}
			seenID = true
			req.ID, ok = p.str()
		case "inputs":
			if seenInputs {
				return false
			}
			seenInputs = true
			req.Inputs, ok = p.tensors()
		default:
			return false
		}
		return ok
	})
	p.ws()
	return req, ok && seenInputs && p.i == len(p.b)
}

type fastParser struct {
	b []byte
	i int
	// name and dtype are strings str returns without allocating when the body has them.
	name, dtype string
}

func (p *fastParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// byte consumes c if it is next.
func (p *fastParser) byte(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *fastParser) colon() bool {
	p.ws()
	ok := p.byte(':')
	p.ws()
	return ok
}

// str parses a string of printable ASCII without escapes (the reference decodes it to the
// same bytes).
func (p *fastParser) str() (string, bool) {
	b, ok := p.raw()
	switch string(b) { // no allocation: the compiler compares the bytes
	case p.name:
		return p.name, ok
	case p.dtype:
		return p.dtype, ok
	}
	return string(b), ok
}

// raw is str's bytes, aliasing the body.
func (p *fastParser) raw() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return p.b[start : p.i-1], true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return nil, false
		}
		p.i++
	}
	return nil, false
}

// tensors parses a non-empty array of tensor objects.
func (p *fastParser) tensors() ([]TensorJSON, bool) {
	if !p.byte('[') {
		return nil, false
	}
	var ts []TensorJSON
	for {
		p.ws()
		t, ok := p.tensor()
		if !ok {
			return nil, false
		}
		ts = append(ts, t)
		p.ws()
		if p.byte(']') {
			return ts, true
		}
		if !p.byte(',') {
			return nil, false
		}
	}
}

// tensor parses an object with name, shape, datatype and data, each at most once.
func (p *fastParser) tensor() (t TensorJSON, ok bool) {
	var seen [4]bool
	ok = p.object(func(key []byte) bool {
		k := -1
		ok := false
		switch string(key) {
		case "name":
			k = 0
			t.Name, ok = p.str()
		case "shape":
			k = 1
			t.Shape, ok = p.ints()
		case "datatype":
			k = 2
			t.Datatype, ok = p.str()
		case "data":
			k = 3
			start := p.i
			if ok = p.numericArray(1); ok {
				t.Data = p.b[start:p.i:p.i]
			}
		}
		if k < 0 || !ok || seen[k] {
			return false
		}
		seen[k] = true
		return true
	})
	return t, ok
}

// object parses a non-empty object, calling member with each key and the parser at its
// value; member parses the value or refuses the body.
func (p *fastParser) object(member func(key []byte) bool) bool {
	if !p.byte('{') {
		return false
	}
	for first := true; ; first = false {
		p.ws()
		if !first {
			if p.byte('}') {
				return true
			}
			if !p.byte(',') {
				return false
			}
			p.ws()
		}
		key, ok := p.raw()
		if !ok || !p.colon() || !member(key) {
			return false
		}
	}
}

// ints parses an array of integers that fit an int64 (at most 18 digits).
func (p *fastParser) ints() ([]int64, bool) {
	if !p.byte('[') {
		return nil, false
	}
	out := make([]int64, 0, 4)
	p.ws()
	if p.byte(']') {
		return out, true
	}
	for {
		p.ws()
		neg := p.byte('-')
		start := p.i
		var v int64
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			v = v*10 + int64(p.b[p.i]-'0')
			p.i++
		}
		n := p.i - start
		if n == 0 || n > 18 || (n > 1 && p.b[start] == '0') {
			return nil, false
		}
		if p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
			return nil, false // not an integer: the reference reports it
		}
		if neg {
			v = -v
		}
		out = append(out, v)
		p.ws()
		if p.byte(']') {
			return out, true
		}
		if !p.byte(',') {
			return nil, false
		}
	}
}

// numericArray walks an array (at depth) whose elements are JSON numbers or such arrays.
func (p *fastParser) numericArray(depth int) bool {
	if depth > maxFastDepth || !p.byte('[') {
		return false
	}
	p.ws()
	if p.byte(']') {
		return true
	}
	for {
		p.ws()
		if p.i >= len(p.b) {
			return false
		}
		if p.b[p.i] == '[' {
			if !p.numericArray(depth + 1) {
				return false
			}
		} else if !p.number() {
			return false
		}
		p.ws()
		if p.byte(']') {
			return true
		}
		if !p.byte(',') {
			return false
		}
	}
}

// number consumes a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *fastParser) number() bool {
	p.byte('-')
	if p.byte('0') {
		// a leading zero stands alone
	} else if p.digits() == 0 {
		return false
	}
	if p.byte('.') && p.digits() == 0 {
		return false
	}
	if p.byte('e') || p.byte('E') {
		if !p.byte('+') {
			p.byte('-')
		}
		if p.digits() == 0 {
			return false
		}
	}
	return true
}

func (p *fastParser) digits() int {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i - start
}
