package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// The JSON Schemas of schema/ are evaluated by santhosh-tekuri/jsonschema (draft 2020-12 by
// default; the schemas use draft-07's keywords, which it reads the same): a maintained
// implementation of the whole specification instead of the subset of keywords plan checked
// by hand. Its errors are rephrased in the form every other input check of plan prints,
// "PATH: VALUE: must ...", the path in dotted form with [i] for array items.

var english = message.NewPrinter(language.English)

var schemas struct {
	sync.Mutex
	byName map[string]*jsonschema.Schema
}

// compiledSchema is schema/name compiled once per process.
func compiledSchema(name string) (*jsonschema.Schema, error) { return compiledSchemaOf(name, nil) }

// compiledSchemaOf is the schema raw (nil: schema/name) compiled once per process; a
// target's schemas (SchemaProvider) are named by the target.
func compiledSchemaOf(name string, raw []byte) (*jsonschema.Schema, error) {
	schemas.Lock()
	defer schemas.Unlock()
	if s := schemas.byName[name]; s != nil {
		return s, nil
	}
	if raw == nil {
		var err error
		if raw, err = schemaFS.ReadFile("schema/" + name); err != nil {
			return nil, err
		}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema/%s: %w", name, err)
	}
	url := "embed:///schema/" + name
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("schema/%s: %w", name, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("schema/%s: %w", name, err)
	}
	if schemas.byName == nil {
		schemas.byName = map[string]*jsonschema.Schema{}
	}
	schemas.byName[name] = s
	return s, nil
}

// validateAgainst checks a JSON document against schema/name.
func validateAgainst(name string, js []byte) []string { return validateAgainstOf(name, nil, js) }

// validateAgainstOf checks a JSON document against the schema raw (nil: schema/name).
func validateAgainstOf(name string, raw, js []byte) []string {
	schema, err := compiledSchemaOf(name, raw)
	if err != nil {
		return []string{err.Error()}
	}
	// The instance as the library reads JSON: numbers as json.Number, exact.
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		return []string{err.Error()}
	}
	return schemaErrors(schema.Validate(inst))
}

// schemaErrors are a validation's failures, one line each, sorted by path (nil: valid).
func schemaErrors(err error) []string {
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{err.Error()}
	}
	var out []string
	collectSchemaErrors(ve, &out)
	slices.Sort(out)
	return slices.Compact(out)
}

// collectSchemaErrors appends the leaves of a validation error tree: the keywords that failed
// (a group's or a $ref's own entry only says that something under it did). A oneOf that
// failed is one line: which alternative failed how is noise when none was meant to match.
func collectSchemaErrors(ve *jsonschema.ValidationError, out *[]string) {
	switch ve.ErrorKind.(type) {
	case *kind.Group, *kind.Reference, *kind.Schema, *kind.AllOf:
		for _, c := range ve.Causes {
			collectSchemaErrors(c, out)
		}
		return
	}
	at := instancePath(ve.InstanceLocation)
	line := func(format string, a ...any) { *out = append(*out, orDocument(at)+": "+fmt.Sprintf(format, a...)) }
	switch k := ve.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			*out = append(*out, instancePath(append(slices.Clone(ve.InstanceLocation), p))+": unknown field")
		}
	case *kind.Required:
		for _, m := range k.Missing {
			line("missing required field %q", m)
		}
	case *kind.Minimum:
		line("%s: must be >= %s", k.Got.RatString(), k.Want.RatString())
	case *kind.Maximum:
		line("%s: must be <= %s", k.Got.RatString(), k.Want.RatString())
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = echo(w)
		}
		line("%s: must be one of %s", echo(k.Got), strings.Join(want, ", "))
	case *kind.Type:
		line("must be of type %s, not %s", strings.Join(k.Want, " or "), k.Got)
	case *kind.OneOf:
		line("matches %d of the alternatives (want exactly 1)", len(k.Subschemas))
	default:
		line("%s", strings.ReplaceAll(ve.ErrorKind.LocalizedString(english), "\n", " "))
	}
}

// echo is a value as an error line quotes it: JSON (strings quoted, control characters
// escaped, so a line stays one line), cut to maxEcho bytes.
func echo(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(fmt.Sprintf("%q", fmt.Sprint(v)))
	}
	if len(b) > maxEcho {
		return string(b[:maxEcho]) + "…"
	}
	return string(b)
}

// plainKey is a field name written bare in a path; any other is quoted (["a b"]).
var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_./-]*$`)

// maxEcho bounds an echoed value: a manifest's value can be arbitrarily long.
const maxEcho = 200

// instancePath is a JSON value's location as plan names fields: spec.triggers[0].type.
func instancePath(loc []string) string {
	var b strings.Builder
	for _, tok := range loc {
		if tok != "" && strings.Trim(tok, "0123456789") == "" {
			b.WriteString("[" + tok + "]")
			continue
		}
		if !plainKey.MatchString(tok) {
			b.WriteString("[" + echo(tok) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

func orDocument(at string) string {
	if at == "" {
		return "(document)"
	}
	return at
}
