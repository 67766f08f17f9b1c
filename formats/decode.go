package formats

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// Document is any decoded file: *Profile, *Cluster, *Workload, *Plan or *Trace.
type Document interface {
	// GetKind returns the document's kind.
	GetKind() string
	// Validate checks every semantic rule and returns all problems (file names unset).
	Validate() ErrorList
}

// GetKind returns the kind.
func (t TypeMeta) GetKind() string { return t.Kind }

// MaxFileBytes bounds what we read, so a wrong path (a disk image, /dev/zero) fails cleanly.
const MaxFileBytes = 512 << 20

// ReadFile decodes and validates a file of any known kind. All problems are returned as one
// ErrorList naming the file; decoding problems wrap ErrDecode.
func ReadFile(path string) (Document, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, err
	}
	return Decode(filepath.Base(path), data)
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxFileBytes)
	}
	return data, nil
}

// Decode decodes YAML or JSON bytes by their kind, strictly, and validates the result.
// name is used in error messages (usually the file's base name).
func Decode(name string, data []byte) (Document, error) {
	js, err := toJSON(data)
	if err != nil {
		return nil, decodeErr(name, "", err)
	}
	var meta TypeMeta
	if err := json.Unmarshal(js, &meta); err != nil {
		return nil, decodeErr(name, "", err)
	}
	if meta.APIVersion != APIVersion {
		return nil, ErrorList{{File: name, Path: "apiVersion", Value: render(meta.APIVersion), Rule: "must be " + APIVersion}}
	}
	doc, err := newDocument(meta.Kind)
	if err != nil {
		return nil, ErrorList{{File: name, Path: "kind", Value: render(meta.Kind), Rule: "must be one of " + strings.Join(Kinds, ", ")}}
	}
	if err := strictUnmarshal(js, doc); err != nil {
		return nil, decodeErr(name, "", err)
	}
	if errs := doc.Validate(); len(errs) > 0 {
		return nil, errs.WithFile(name)
	}
	return doc, nil
}

// DecodeInto decodes into a document of a specific kind and fails with ErrWrongKind
// (naming both kinds) when the file holds another one.
func DecodeInto[T Document](name string, data []byte) (T, error) {
	var zero T
	doc, err := Decode(name, data)
	if err != nil {
		return zero, err
	}
	t, ok := doc.(T)
	if !ok {
		want, _ := any(zero).(Document)
		wantKind := kindOf(want)
		return zero, fmt.Errorf("%s: kind: %q: must be %s: %w", name, doc.GetKind(), wantKind, ErrWrongKind)
	}
	return t, nil
}

// ReadInto reads a file expected to hold a document of type T.
func ReadInto[T Document](path string) (T, error) {
	var zero T
	data, err := readLimited(path)
	if err != nil {
		return zero, err
	}
	return DecodeInto[T](filepath.Base(path), data)
}

func kindOf(d Document) string {
	switch d.(type) {
	case *Profile:
		return KindProfile
	case *Cluster:
		return KindCluster
	case *Workload:
		return KindWorkload
	case *Plan:
		return KindPlan
	case *Trace:
		return KindTrace
	}
	return "?"
}

func newDocument(kind string) (Document, error) {
	switch kind {
	case KindProfile:
		return &Profile{}, nil
	case KindCluster:
		return &Cluster{}, nil
	case KindWorkload:
		return &Workload{}, nil
	case KindPlan:
		return &Plan{}, nil
	case KindTrace:
		return &Trace{}, nil
	}
	return nil, ErrUnknownKind
}

func toJSON(data []byte) ([]byte, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("empty file")
	}
	if trimmed[0] == '{' {
		if !json.Valid(trimmed) {
			// Report the JSON syntax error with its offset.
			var v any
			if err := json.Unmarshal(trimmed, &v); err != nil {
				return nil, err
			}
		}
		return trimmed, nil
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) || !bytes.HasPrefix(bytes.TrimSpace(js), []byte("{")) {
		return nil, errors.New("top level must be a mapping with apiVersion and kind")
	}
	return js, nil
}

func strictUnmarshal(js []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the document")
	}
	return nil
}

// decodeErr turns encoding/json's messages into a FieldError with a field path when it can.
func decodeErr(name, path string, err error) error {
	msg := err.Error()
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		return ErrorList{{File: name, Path: ute.Field, Value: ute.Value, Rule: "must be " + ute.Type.String()}}.decode()
	}
	if strings.HasPrefix(msg, "json: unknown field ") {
		f := strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`)
		return ErrorList{{File: name, Path: f, Rule: "unknown field"}}.decode()
	}
	msg = strings.TrimPrefix(msg, "json: ")
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	return ErrorList{{File: name, Path: path, Rule: msg}}.decode()
}

// decodeError is an ErrorList that also matches ErrDecode.
type decodeError struct{ ErrorList }

func (l ErrorList) decode() error { return decodeError{l} }

func (d decodeError) Unwrap() []error { return append(d.ErrorList.Unwrap(), ErrDecode) }
