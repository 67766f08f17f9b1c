// Package jsonx is the one gate every JSON input of plan passes before encoding/json decodes
// it: the files formats reads (profiles, clusters, workloads, plans, traces, validation
// records, endpoints) and every HTTP body serve decodes (KServe infer, PUT /v1/plan, the
// OpenAI and workflow APIs).
//
// Check is a single pass over the bytes, with no allocation per token, that refuses what
// encoding/json would accept silently or at a cost out of proportion to the input:
//
//   - nesting deeper than Options.MaxDepth (64 by default): encoding/json accepts 10,000
//     levels, and code that builds a path per level turned a 240 KB body of brackets into
//     1.65 GB of memory;
//   - a document larger than Options.MaxBytes;
//   - a key given twice in one object (encoding/json keeps the last: `"count": 64,
//     "count": 1` means one), compared after unescaping (`"max\u005ftokens"`);
//   - in an object decoded into a Go struct, a key that differs only in case from one of
//     the struct's fields (encoding/json matches keys case-insensitively, so `MAX_TOKENS`
//     overrode `max_tokens`), or from another key of the same object;
//   - null where a number is required (encoding/json leaves the zero value: a record whose
//     sample is null became sample 0); a pointer field takes null as "not given";
//   - with Options.Closed, a key that names no field (Check reports it with its path and
//     offset; Decode leaves it to encoding/json's DisallowUnknownFields, whose wording
//     callers and users rely on);
//   - data after the value.
//
// Decode runs Check and then encoding/json. Memory is linear in the input: Check keeps a
// frame per open level (at most MaxDepth), the keys of the open objects that it must compare
// (8 bytes each, for keys of at least 4 bytes of input) and the unescaped text of escaped
// keys; FuzzCheckMemory asserts at most MemoryFactor bytes allocated per input byte.
//
// Quote is the one way an error message echoes input: quoted, and cut to MaxEcho bytes.
package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultMaxDepth is the nesting limit when Options.MaxDepth is 0. No plan file or API body
// comes near it (a KServe tensor nests at most 32 levels under inputs[i].data).
const DefaultMaxDepth = 64

// hardMaxBytes bounds every input: offsets are kept in 31 bits.
const hardMaxBytes = 1<<31 - 1

// MemoryFactor is the most bytes Check allocates per byte of input (and, beyond it, a
// constant for the frames): asserted by the fuzz target.
const MemoryFactor = 4

// Sentinels of the refusals (errors.Is on an *Error).
var (
	ErrSyntax       = errors.New("invalid JSON")
	ErrTooDeep      = errors.New("nested too deeply")
	ErrTooLarge     = errors.New("too large")
	ErrDuplicateKey = errors.New("duplicate key")
	ErrCaseKey      = errors.New("key differs only in case")
	ErrNull         = errors.New("null where a number is required")
	ErrUnknownField = errors.New("unknown field")
	ErrTrailing     = errors.New("data after the JSON value")
)

// Options configure Check and Decode.
type Options struct {
	// MaxDepth bounds the nesting of objects and arrays (0: DefaultMaxDepth).
	MaxDepth int
	// MaxBytes bounds the document's size (0: 2 GiB − 1).
	MaxBytes int64
	// Closed refuses keys that name no field of the struct they are decoded into
	// (encoding/json's DisallowUnknownFields). Open schemas (the OpenAI API's bodies, which
	// clients fill with parameters plan ignores) leave it unset.
	Closed bool
	// OnDuplicate, when set, is handed each duplicate or case-variant key (ErrDuplicateKey,
	// ErrCaseKey) instead of Check stopping at the first; the scan goes on while it returns
	// true (a file's reader reports every duplicate, each with its line).
	OnDuplicate func(*Error) bool
}

func (o Options) depth() int {
	if o.MaxDepth <= 0 {
		return DefaultMaxDepth
	}
	return o.MaxDepth
}

func (o Options) maxBytes() int64 {
	if o.MaxBytes <= 0 || o.MaxBytes > hardMaxBytes {
		return hardMaxBytes
	}
	return o.MaxBytes
}

// Error is a refusal: what (Kind, a sentinel), where (Offset, the byte where the offending
// token starts; Path, the field path from the top, "" for the top level) and, for a key,
// which (Key; Like, the field or key it collides with).
type Error struct {
	Kind   error
	Offset int
	Path   string
	Key    string
	Like   string
	Detail string
	// keyLen is the raw length of a key longer than MaxEcho (Key holds its start).
	keyLen int
}

func (e *Error) Error() string {
	var b strings.Builder
	key := Quote(e.Key)
	if e.keyLen > 0 {
		key = quoteCut(e.Key, e.keyLen)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	switch e.Kind {
	case ErrDuplicateKey:
		fmt.Fprintf(&b, "duplicate key %s at byte %d: a key may appear once in an object", key, e.Offset)
	case ErrCaseKey:
		fmt.Fprintf(&b, "key %s at byte %d differs only in case from %s: keys are matched exactly", key, e.Offset, e.Like)
	case ErrUnknownField:
		fmt.Fprintf(&b, "unknown field %s at byte %d", key, e.Offset)
	case ErrNull:
		fmt.Fprintf(&b, "null at byte %d where a number is required", e.Offset)
	case ErrTooDeep:
		fmt.Fprintf(&b, "nested deeper than %s levels at byte %d", e.Detail, e.Offset)
	case ErrTooLarge:
		b.WriteString(e.Detail)
	case ErrTrailing:
		fmt.Fprintf(&b, "data after the JSON value at byte %d", e.Offset)
	default:
		fmt.Fprintf(&b, "invalid JSON at byte %d: %s", e.Offset, e.Detail)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Kind }

// Check scans data, one JSON value, against the Go type t that it will be decoded into (nil:
// any shape; only the untyped rules apply) and returns the first problem as an *Error.
func Check(data []byte, t reflect.Type, opt Options) error {
	if max := opt.maxBytes(); int64(len(data)) > max {
		return &Error{Kind: ErrTooLarge, Detail: fmt.Sprintf("a JSON document of %d bytes: larger than the limit of %d bytes", len(data), max)}
	}
	s := scanner{data: data, opt: opt, maxDepth: opt.depth()}
	var r ref
	if t != nil {
		r = refOf(t)
	} else {
		r = ref{t: anyInfo}
	}
	s.ws()
	if !s.value(r) {
		return s.err
	}
	s.ws()
	if s.i < len(s.data) {
		return &Error{Kind: ErrTrailing, Offset: s.i}
	}
	return nil
}

// Decode checks data (Check, against v's type) and decodes it into v with encoding/json,
// refusing unknown fields when opt.Closed. Two refusals keep encoding/json's words, which
// callers render and users know: a syntax error (*json.SyntaxError, failing at the byte
// Check found) and an unknown field (`json: unknown field "x"`, DisallowUnknownFields);
// every other refusal is an *Error.
func Decode(data []byte, v any, opt Options) error {
	closed := opt.Closed
	opt.Closed = false
	if err := Check(data, reflect.TypeOf(v), opt); err != nil {
		if errors.Is(err, ErrSyntax) {
			if jerr := decodeStd(data, v, closed); jerr != nil && !errors.Is(jerr, ErrTrailing) {
				return jerr
			}
		}
		return err
	}
	return decodeStd(data, v, closed)
}

// decodeStd is encoding/json's decoding of one value (with unknown fields refused when
// closed) and nothing after it.
func decodeStd(data []byte, v any, closed bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if closed {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return cutEcho(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return &Error{Kind: ErrTrailing, Offset: int(dec.InputOffset())}
	}
	return nil
}

// cutEcho bounds what encoding/json's errors repeat of the input: an unknown field's name
// and a wrong value's literal (UnmarshalTypeError.Value: "number 1111…").
func cutEcho(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && len(te.Value) > MaxEcho {
		te.Value = quoteCut(te.Value, len(te.Value))
		return err
	}
	if key, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok && len(key) > MaxEcho {
		if k, uerr := strconv.Unquote(key); uerr == nil {
			return fmt.Errorf("json: unknown field %s", Quote(k))
		}
	}
	return err
}

// MaxEcho bounds the bytes of input an error message repeats.
const MaxEcho = 200

// Quote renders s, a value taken from input (a field's value, a key, a file name), for an
// error message: Go-quoted (so a newline or an escape sequence cannot forge a line of the
// output) and, when longer than MaxEcho bytes, cut at a rune boundary with the size it had
// (a 200 KB field value is not echoed back).
func Quote(s string) string {
	if len(s) <= MaxEcho {
		return strconv.Quote(s)
	}
	return quoteCut(s, len(s))
}

// quoteCut quotes the first MaxEcho bytes of s (cut at a rune boundary), saying the whole
// was size bytes.
func quoteCut(s string, size int) string {
	cut := min(MaxEcho, len(s))
	for cut > 0 && cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + fmt.Sprintf("… (%d bytes)", size)
}
