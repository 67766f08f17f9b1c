package formats

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/plan-dev/plan/formats/jsonx"
)

// Sentinel errors callers can branch on with errors.Is.
var (
	// ErrInvalid marks a document that decoded but broke a semantic rule.
	ErrInvalid = errors.New("invalid document")
	// ErrDecode marks a file that is not valid YAML/JSON or does not match the schema.
	ErrDecode = errors.New("cannot decode document")
	// ErrUnknownKind marks a document whose kind this build does not know.
	ErrUnknownKind = errors.New("unknown kind")
	// ErrWrongKind marks a document of a different kind than the caller asked for.
	ErrWrongKind = errors.New("wrong kind")
)

// FieldError is one problem in a document: file, field path, offending value and the rule.
// It renders as `cluster.yaml: gpus[1].count: -3: must be >= 0`.
type FieldError struct {
	File  string
	Path  string
	Value string
	Rule  string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(EchoName(e.File))
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(cut(e.Path))
		b.WriteString(": ")
	}
	if e.Value != "" {
		b.WriteString(cut(e.Value))
		b.WriteString(": ")
	}
	b.WriteString(e.Rule)
	return b.String()
}

// Echo renders a value taken from input — a field's value, a key, a model or worker name
// from a request — for an error message: Go-quoted, so that a newline or an escape
// sequence cannot forge a line of the output, and cut to jsonx.MaxEcho (200) bytes with the
// size it had, so that a 200 KB value is not sent back. It is the one helper every error
// that echoes input uses (formats' field errors, serve's HTTP errors).
func Echo(s string) string { return jsonx.Quote(s) }

// EchoName renders a name taken from input — a file name, a URL path — for a message: as
// given when it prints as itself (no control character, quote, backslash or invalid UTF-8)
// within jsonx.MaxEcho bytes, so plain names read as before, else as Echo renders it — a
// name holding a newline cannot inject a line into the output.
func EchoName(name string) string {
	if len(name) <= jsonx.MaxEcho && strconv.Quote(name) == `"`+name+`"` {
		return name
	}
	return Echo(name)
}

// cut bounds an already rendered path or value (the validators render values themselves):
// past jsonx.MaxEcho bytes (and a little room for the quotes and the size Echo adds), the
// first MaxEcho bytes and the size.
func cut(s string) string {
	if len(s) <= jsonx.MaxEcho+32 {
		return s
	}
	n := jsonx.MaxEcho
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("… (%d bytes)", len(s))
}

// Unwrap lets errors.Is(err, ErrInvalid) match every FieldError.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// ErrorList collects every problem found in one or more documents.
type ErrorList []*FieldError

// MaxListedProblems bounds how many problems a rendered list shows: 48k duplicate names
// printed 48,219 lines. The rest are counted: "... and N more problems".
const MaxListedProblems = 100

func (l ErrorList) Error() string {
	n := min(len(l), MaxListedProblems)
	msgs := make([]string, n, n+1)
	for i, e := range l[:n] {
		msgs[i] = e.Error()
	}
	if more := MoreProblems(len(l)); more != "" {
		msgs = append(msgs, more)
	}
	return strings.Join(msgs, "\n")
}

// MoreProblems is the line that ends a list of total problems shown up to MaxListedProblems
// ("... and 47 more problems"), or "" when all are shown.
func MoreProblems(total int) string {
	if total <= MaxListedProblems {
		return ""
	}
	more := total - MaxListedProblems
	if more == 1 {
		return "... and 1 more problem"
	}
	return fmt.Sprintf("... and %d more problems", more)
}

// Unwrap exposes the individual errors to errors.Is/As.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Err returns nil for an empty list so callers can `return list.Err()`.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// WithFile sets the file name on every error that has none.
func (l ErrorList) WithFile(file string) ErrorList {
	for _, e := range l {
		if e.File == "" {
			e.File = file
		}
	}
	return l
}

// validator accumulates FieldErrors while walking a document.
type validator struct {
	errs ErrorList
}

func (v *validator) add(path string, value any, rule string, args ...any) {
	v.errs = append(v.errs, &FieldError{Path: path, Value: render(value), Rule: fmt.Sprintf(rule, args...)})
}

func render(value any) string {
	switch x := value.(type) {
	case nil:
		return ""
	case raw:
		return string(x)
	case string:
		return Echo(x)
	case float64:
		return fmt.Sprintf("%g", x)
	default:
		return fmt.Sprint(x)
	}
}

// raw is a value rendered as is, without quotes (tuples such as "(L4, vgpu 2, batch 4)").
type raw string

func idx(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func field(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
