package jsonx

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner walks one JSON value (RFC 8259's grammar, as encoding/json reads it) by recursive
// descent, at most maxDepth levels deep, so the Go stack is bounded too.
type scanner struct {
	data     []byte
	i        int
	opt      Options
	maxDepth int
	// frames are the open objects and arrays (reused: a frame's seen keeps its capacity).
	frames []frame
	depth  int
	// keys are the keys the open objects compare (a stack: an object's are keys[f.keys:]).
	keys []span
	// scratch holds an escaped key's text while it is looked up among a struct's fields.
	scratch []byte
	err     *Error
}

// frame is an open object or array: for the error's path, its current key or index.
type frame struct {
	array bool
	index int
	key   span
	// seen marks the struct fields given so far; keys is where the object's keys start in
	// scanner.keys.
	seen []bool
	keys int
}

// span is a key's raw text between its quotes, data[off:off+n&^rewrite]; the rewrite bit
// of n marks text that must be decoded to be compared (escapes, bytes that are not UTF-8).
// Keys are compared rune by rune as decoded (compare), never copied: 8 bytes per key kept.
type span struct{ off, n uint32 }

const rewriteBit = 1 << 31

func (s *scanner) raw(k span) []byte { return s.data[k.off : k.off+k.n&^rewriteBit] }

// decoded returns k's text as encoding/json decodes it, at most limit bytes of it (a key
// quoted in a message is cut anyway), and the length of its raw text.
func (s *scanner) decoded(k span, limit int) string {
	raw := s.raw(k)
	if k.n&rewriteBit == 0 {
		return string(raw[:min(len(raw), limit)])
	}
	var b []byte
	for i := 0; i < len(raw) && len(b) < limit; {
		var r rune
		r, i = nextRune(raw, i)
		b = utf8.AppendRune(b, r)
	}
	return string(b)
}

func (s *scanner) fail(kind error, at int, detail string) bool {
	if s.err == nil {
		s.err = &Error{Kind: kind, Offset: at, Path: s.path(), Detail: detail}
	}
	return false
}

func (s *scanner) failKey(kind error, at int, key span, like string) bool {
	s.fail(kind, at, "")
	s.err.Key, s.err.Like = s.decoded(key, MaxEcho+1), like
	if int(key.n&^rewriteBit) > MaxEcho {
		s.err.keyLen = int(key.n &^ rewriteBit)
	}
	return false
}

// path renders the open frames as a field path (inputs[0].data), built only for an error.
func (s *scanner) path() string {
	var b strings.Builder
	for _, f := range s.frames[:s.depth] {
		if f.array {
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
			continue
		}
		if f.key.n == 0 && f.key.off == 0 {
			continue // no key read yet
		}
		k := s.decoded(f.key, MaxEcho+1)
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		if plain(k) {
			b.WriteString(k)
		} else {
			b.WriteString(Quote(k))
		}
	}
	return b.String()
}

// plain reports a key that reads unambiguously in a path without quotes.
func plain(k string) bool {
	if k == "" || len(k) > MaxEcho {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || c == '-' || c == '/' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

func (s *scanner) ws() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value scans the value at s.i (whitespace skipped) expected to decode into r.
func (s *scanner) value(r ref) bool {
	if s.i >= len(s.data) {
		return s.fail(ErrSyntax, s.i, "unexpected end of input")
	}
	t := r.t
	switch c := s.data[s.i]; c {
	case '{':
		return s.object(t)
	case '[':
		if t.kind == kSlice {
			return s.array(t.elem)
		}
		return s.array(ref{t: anyInfo})
	case '"':
		_, ok := s.str()
		return ok
	case 'n':
		at := s.i
		if !s.literal("null") {
			return false
		}
		if t.kind == kNumber && !r.nullable {
			return s.fail(ErrNull, at, "")
		}
		return true
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return s.number()
		}
		return s.fail(ErrSyntax, s.i, "invalid character "+strconv.QuoteRune(rune(c))+" looking for the beginning of a value")
	}
}

func (s *scanner) literal(word string) bool {
	if !bytes.HasPrefix(s.data[s.i:], []byte(word)) {
		return s.fail(ErrSyntax, s.i, "invalid literal (want "+word+")")
	}
	s.i += len(word)
	return true
}

// number consumes -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	start := s.i
	if s.data[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.data) && s.data[s.i] == '0':
		s.i++
	case s.digits() == 0:
		return s.fail(ErrSyntax, start, "invalid number")
	}
	if s.i < len(s.data) && s.data[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return s.fail(ErrSyntax, start, "invalid number")
		}
	}
	if s.i < len(s.data) && (s.data[s.i] == 'e' || s.data[s.i] == 'E') {
		s.i++
		if s.i < len(s.data) && (s.data[s.i] == '+' || s.data[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return s.fail(ErrSyntax, start, "invalid number")
		}
	}
	return true
}

func (s *scanner) digits() int {
	start := s.i
	for s.i < len(s.data) && s.data[s.i] >= '0' && s.data[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}

// str consumes a string and reports whether its text must be rewritten to be compared:
// escapes, or bytes that are not UTF-8 (encoding/json turns those into U+FFFD).
func (s *scanner) str() (rewrite, ok bool) {
	start := s.i
	s.i++ // the quote
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == '"':
			s.i++
			return rewrite, true
		case c == '\\':
			rewrite = true
			if s.i+1 >= len(s.data) {
				return false, s.fail(ErrSyntax, start, "unterminated string")
			}
			switch s.data[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.data) || !hex4(s.data[s.i+2:s.i+6]) {
					return false, s.fail(ErrSyntax, s.i, "invalid \\u escape")
				}
				s.i += 6
			default:
				return false, s.fail(ErrSyntax, s.i, "invalid escape")
			}
		case c < 0x20:
			return false, s.fail(ErrSyntax, s.i, "control character in a string")
		case c < utf8.RuneSelf:
			s.i++
		default:
			r, n := utf8.DecodeRune(s.data[s.i:])
			if r == utf8.RuneError && n == 1 {
				rewrite = true
			}
			s.i += n
		}
	}
	return false, s.fail(ErrSyntax, start, "unterminated string")
}

func hex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// key consumes an object's key and returns its text as encoding/json would decode it.
func (s *scanner) key() (span, bool) {
	if s.i >= len(s.data) || s.data[s.i] != '"' {
		return span{}, s.fail(ErrSyntax, s.i, "object key must be a string")
	}
	start := s.i
	rewrite, ok := s.str()
	if !ok {
		return span{}, false
	}
	k := span{off: uint32(start + 1), n: uint32(s.i - 1 - (start + 1))}
	if rewrite {
		k.n |= rewriteBit
	}
	return k, true
}

// nextRune decodes the rune at raw[i:], the contents of a valid string (str checked it), as
// encoding/json does: escapes resolved, a UTF-16 surrogate pair joined, a lone surrogate or
// a byte that is not UTF-8 read as U+FFFD. It returns the rune and the index after it.
func nextRune(raw []byte, i int) (rune, int) {
	c := raw[i]
	switch {
	case c == '\\':
		if raw[i+1] != 'u' {
			return rune(unescapeByte(raw[i+1])), i + 2
		}
		r := rune(hexVal(raw[i+2 : i+6]))
		i += 6
		if !utf16.IsSurrogate(r) {
			return r, i
		}
		if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' && hex4(raw[i+2:i+6]) {
			if d := utf16.DecodeRune(r, rune(hexVal(raw[i+2:i+6]))); d != unicode.ReplacementChar {
				return d, i + 6
			}
		}
		return unicode.ReplacementChar, i
	case c < utf8.RuneSelf:
		return rune(c), i + 1
	}
	r, n := utf8.DecodeRune(raw[i:])
	return r, i + n
}

// compare orders two keys by their decoded text (folded: under simple case folding, each
// rune replaced by the smallest of its folding orbit, so keys bytes.EqualFold finds equal
// compare equal and sort next to each other).
func (s *scanner) compare(a, b span, folded bool) int {
	ra, rb := s.raw(a), s.raw(b)
	if !folded && (a.n|b.n)&rewriteBit == 0 {
		return bytes.Compare(ra, rb)
	}
	i, j := 0, 0
	for i < len(ra) && j < len(rb) {
		var x, y rune
		x, i = nextRune(ra, i)
		y, j = nextRune(rb, j)
		if folded {
			x, y = foldMin(x), foldMin(y)
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	switch {
	case i < len(ra):
		return 1
	case j < len(rb):
		return -1
	}
	return 0
}

func unescapeByte(e byte) byte {
	switch e {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return e // '"', '\\', '/'
}

func hexVal(b []byte) uint32 {
	var v uint32
	for _, c := range b {
		v <<= 4
		switch {
		case c >= '0' && c <= '9':
			v |= uint32(c - '0')
		case c >= 'a' && c <= 'f':
			v |= uint32(c - 'a' + 10)
		default:
			v |= uint32(c - 'A' + 10)
		}
	}
	return v
}

// push opens a frame at s.i (an object or an array) or refuses one level too many.
func (s *scanner) push(array bool) bool {
	if s.depth >= s.maxDepth {
		return s.fail(ErrTooDeep, s.i, strconv.Itoa(s.maxDepth))
	}
	if s.depth == len(s.frames) {
		s.frames = append(s.frames, frame{})
	}
	f := &s.frames[s.depth]
	*f = frame{array: array, seen: f.seen[:0], keys: len(s.keys)}
	s.depth++
	s.i++ // the bracket
	return true
}

func (s *scanner) pop() {
	s.depth--
	s.keys = s.keys[:s.frames[s.depth].keys]
}

// empty reads the close of a container just opened (its frame pushed) when it comes next, and
// pops its frame: an empty array or object.
func (s *scanner) empty(close byte) bool {
	s.ws()
	if s.i < len(s.data) && s.data[s.i] == close {
		s.i++
		s.pop()
		return true
	}
	return false
}

// more skips the white space after an element of a container (an "array" or an "object") to
// the byte that says what follows: false, with the error, at the end of input.
func (s *scanner) more(container string) bool {
	s.ws()
	return s.i < len(s.data) || s.fail(ErrSyntax, s.i, "unexpected end of input in an "+container)
}

func (s *scanner) array(elem ref) bool {
	if !s.push(true) {
		return false
	}
	f := s.depth - 1
	if s.empty(']') {
		return true
	}
	for {
		s.ws()
		if !s.value(elem) || !s.more("array") {
			return false
		}
		switch s.data[s.i] {
		case ',':
			s.i++
			s.frames[f].index++
		case ']':
			s.i++
			s.pop()
			return true
		default:
			return s.fail(ErrSyntax, s.i, "invalid character "+strconv.QuoteRune(rune(s.data[s.i]))+" after an array element")
		}
	}
}

// object scans an object decoded into t: a struct's keys are matched against its fields,
// any other object's keys only against each other.
func (s *scanner) object(t *info) bool {
	if !s.push(false) {
		return false
	}
	f := s.depth - 1
	if t.kind == kStruct {
		s.frames[f].seen = append(s.frames[f].seen[:0], make([]bool, len(t.fields))...)
	}
	if s.empty('}') {
		return true
	}
	for {
		s.ws()
		at := s.i
		k, ok := s.key()
		if !ok {
			return false
		}
		s.frames[f].key = k
		// The key is judged before its colon: a duplicate is reported even in a document
		// cut short right after it.
		elem := ref{t: anyInfo}
		switch t.kind {
		case kStruct:
			var ok bool
			if elem, ok = s.member(t, f, k, at); !ok {
				return false
			}
		case kMap:
			elem = t.elem
			if !s.pushKey(f, k, false) {
				return false
			}
		default:
			if !s.pushKey(f, k, false) {
				return false
			}
		}
		s.ws()
		if s.i >= len(s.data) || s.data[s.i] != ':' {
			return s.fail(ErrSyntax, s.i, "missing ':' after an object key")
		}
		s.i++
		s.ws()
		if !s.value(elem) || !s.more("object") {
			return false
		}
		switch s.data[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			if !s.distinct(t.kind == kStruct) {
				return false
			}
			s.pop()
			return true
		default:
			return s.fail(ErrSyntax, s.i, "invalid character "+strconv.QuoteRune(rune(s.data[s.i]))+" after an object value")
		}
	}
}

// member resolves key k (at byte at) of struct t's object in frame f to the field's type:
// exactly one field's name, given once. A key equal to a field's name but for case is
// refused (encoding/json would fill the field from it); an unknown key is refused when the
// schema is closed, else kept to be compared with the object's other unknown keys.
func (s *scanner) member(t *info, f int, k span, at int) (ref, bool) {
	text := s.raw(k)
	if k.n&rewriteBit != 0 {
		// Decoded into scratch for the lookup; a key far longer than every field's name
		// (a \u escape is 6 bytes for 1, a folded rune up to 3 for 1) matches none.
		text = nil
		if len(s.raw(k)) <= 18*(t.longest+1) {
			s.scratch = s.scratch[:0]
			for raw, i := s.raw(k), 0; i < len(raw); {
				var r rune
				r, i = nextRune(raw, i)
				s.scratch = utf8.AppendRune(s.scratch, r)
			}
			text = s.scratch
		}
	}
	if i, ok := t.byName[string(text)]; text != nil && ok {
		if s.frames[f].seen[i] && !s.keyProblem(f, ErrDuplicateKey, at, k, "") {
			return ref{}, false
		}
		s.frames[f].seen[i] = true
		return t.fields[i].ref, true
	}
	for _, fl := range t.fields {
		if text != nil && bytes.EqualFold(text, []byte(fl.name)) {
			return ref{}, s.keyProblem(f, ErrCaseKey, at, k, "field "+Quote(fl.name))
		}
	}
	if s.opt.Closed {
		s.frames[f].key = span{}
		return ref{}, s.failKey(ErrUnknownField, at, k, "")
	}
	return ref{t: anyInfo}, s.pushKey(f, k, true)
}

// pushKey keeps key k of the object in frame f to be compared with the object's others
// (folded: under case folding). The first smallObject keys are compared at once, so a
// duplicate is reported where it stands even in a document cut short after it; an object
// with more is sorted when it closes (distinct). The stack doubles when full: append's
// growth by a quarter past 256 elements allocates five times the final size in all,
// doubling twice.
func (s *scanner) pushKey(f int, k span, folded bool) bool {
	if len(s.keys) == cap(s.keys) {
		keys := make([]span, len(s.keys), max(2*cap(s.keys), 64))
		copy(keys, s.keys)
		s.keys = keys
	}
	s.keys = append(s.keys, k)
	if prev := s.keys[s.frames[f].keys : len(s.keys)-1]; len(prev) < smallObject {
		for _, p := range prev {
			if s.compare(p, k, folded) == 0 {
				return s.dupKey(f, p, k)
			}
		}
	}
	return true
}

// keyProblem reports key k (at byte at) of the object in frame f, and says whether the scan
// goes on (Options.OnDuplicate).
func (s *scanner) keyProblem(f int, kind error, at int, k span, like string) bool {
	cur := s.frames[f].key
	s.frames[f].key = span{} // the path is the object's, not the key's
	s.failKey(kind, at, k, like)
	s.frames[f].key = cur
	if s.opt.OnDuplicate == nil {
		return false
	}
	e := s.err
	s.err = nil
	return s.opt.OnDuplicate(e)
}

// smallObject is the most keys compared pairwise; more are sorted.
const smallObject = 8

// distinct checks the keys the closing object kept (s.keys from its frame's start): no two
// equal, nor, in a struct's object (folded), equal but for case.
func (s *scanner) distinct(folded bool) bool {
	f := &s.frames[s.depth-1]
	keys := s.keys[f.keys:]
	if len(keys) <= smallObject {
		return true // compared as they came (pushKey)
	}
	slices.SortFunc(keys, func(a, b span) int { return s.compare(a, b, folded) })
	for j := 1; j < len(keys); j++ {
		if s.compare(keys[j-1], keys[j], folded) == 0 {
			a, b := keys[j-1], keys[j]
			if a.off > b.off {
				a, b = b, a
			}
			if !s.dupKey(s.depth-1, a, b) {
				return false
			}
		}
	}
	return true
}

// dupKey reports b, a key equal to a (or, folded, equal but for case) in the object of
// frame f, and says whether the scan goes on.
func (s *scanner) dupKey(f int, a, b span) bool {
	at := int(b.off) - 1 // the later key's opening quote
	if s.compare(a, b, false) == 0 {
		return s.keyProblem(f, ErrDuplicateKey, at, b, "")
	}
	return s.keyProblem(f, ErrCaseKey, at, b, "key "+Quote(s.decoded(a, MaxEcho+1)))
}

// foldMin is the smallest rune of r's simple case-folding orbit (A→a→A: 'A').
func foldMin(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		if r != 'K' && r != 'S' && r != 'k' && r != 's' {
			return r
		}
	}
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return m
}
