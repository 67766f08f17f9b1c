package formats

import (
	"encoding/json"
	"errors"
	"io/fs"
	"reflect"
	"strings"

	"github.com/plan-dev/plan/formats/jsonx"
)

// Document is any decoded file: *Profile, *Cluster, *Workload, *Plan or *Trace. Validate
// (the package function) checks one: a plan and a workload with the registered systems'
// sections, the others by their own Validate method.
type Document interface {
	// GetKind returns the document's kind.
	GetKind() string
}

// GetKind returns the kind.
func (t TypeMeta) GetKind() string { return t.Kind }

// MaxFileBytes bounds what we read, so a wrong path (a disk image, /dev/zero) fails cleanly.
const MaxFileBytes = 512 << 20

// MaxWorkloadBytes bounds a workload document: decoded, a document takes several times its
// bytes (a workload of 10^6 LLM classes, about 150 MB, reached 3.3 GB in solve), and 32 MiB
// holds some 200,000 classes or models, far past any fleet's. A plan that embeds a workload
// is read under MaxFileBytes.
const MaxWorkloadBytes = 32 << 20

// ReadFile decodes and validates a file of any known kind. All problems are returned as one
// ErrorList naming the file by its path as given (so `golden/plan.json` and `plan.json` are
// told apart); decoding problems wrap ErrDecode, a file that cannot be read wraps the os
// error (errors.Is(err, fs.ErrNotExist) works). secs are the registered systems' sections
// (the system registry's SectionSet): a plan or a workload is read only with them
// (ErrNoSections), other kinds take nil.
func ReadFile(path string, secs *SectionSet) (Document, error) {
	data, err := ReadBytes(path)
	if err != nil {
		return nil, err
	}
	return Decode(path, data, secs)
}

// ReadBytes reads a whole regular text file of at most MaxFileBytes (ReadText). Its errors
// read `PATH: cannot read: CAUSE` and wrap the underlying error.
func ReadBytes(path string) ([]byte, error) { return ReadText(path, MaxFileBytes) }

// ReadError is a file that could not be read.
type ReadError struct {
	Path string
	Err  error
}

func (e *ReadError) Error() string { return EchoName(e.Path) + ": cannot read: " + e.cause() }

func (e *ReadError) cause() string {
	var pe *fs.PathError
	if errors.As(e.Err, &pe) {
		if errors.Is(pe.Err, fs.ErrNotExist) {
			return "no such file"
		}
		return pe.Err.Error()
	}
	return e.Err.Error()
}

func (e *ReadError) Unwrap() error { return e.Err }

func (e *ReadError) problems() ErrorList {
	return ErrorList{{File: e.Path, Rule: "cannot read: " + e.cause()}}
}

// Decode decodes YAML or JSON bytes by their kind, strictly, and validates the result.
// name is used in error messages (usually the file's base name). A plan or workload is
// decoded and validated with the registered sections secs (nil is refused for them,
// ErrNoSections): a section that neither formats nor secs knows is an error naming the
// systems, and each system's own rules always run.
func Decode(name string, data []byte, secs *SectionSet) (Document, error) {
	doc, err := Parse(name, data, secs)
	if err != nil {
		return nil, err
	}
	if errs := Validate(doc, secs); len(errs) > 0 {
		return nil, errs.WithFile(name)
	}
	return doc, nil
}

// Parse decodes YAML or JSON bytes by their kind, strictly, without the semantic validation
// (callers that want every problem of a set of files, like `plan validate`, validate
// themselves). Structural problems — unreadable YAML/JSON, an unknown field, a missing
// required field, a wrong type, a non-finite number — are all reported, each with its path,
// in an error that matches ErrDecode; a wrong apiVersion or an unknown kind stop early.
// secs are the registered sections, as for Decode.
func Parse(name string, data []byte, secs *SectionSet) (Document, error) {
	return parse(name, data, "", secs)
}

func parse(name string, data []byte, wantKind string, secs *SectionSet) (Document, error) {
	if secs == nil && sectioned(wantKind) {
		return nil, noSections(name, wantKind)
	}
	if doc, err := parseStreaming(name, data, wantKind); doc != nil || err != nil {
		if err == nil && secs == nil && sectioned(doc.GetKind()) {
			return nil, noSections(name, doc.GetKind())
		}
		return doc, err
	}
	tree, js, err := parseTree(data)
	if err != nil {
		return nil, ErrorList{{File: name, Rule: err.Error()}}.tagged(ErrDecode)
	}
	apiVersion, _ := tree["apiVersion"].(string)
	kind, kindOK := tree["kind"].(string)
	if apiVersion != APIVersion {
		return nil, ErrorList{{File: name, Path: "apiVersion", Value: renderTree(tree["apiVersion"]), Rule: "must be " + APIVersion}}.tagged(ErrDecode)
	}
	doc, err := newDocument(kind)
	if err != nil || !kindOK {
		return nil, ErrorList{{File: name, Path: "kind", Value: renderTree(tree["kind"]), Rule: "must be one of " + strings.Join(Kinds, ", ")}}.tagged(ErrUnknownKind)
	}
	if wantKind != "" && kind != wantKind {
		return nil, ErrorList{{File: name, Path: "kind", Value: render(kind), Rule: "must be " + wantKind}}.tagged(ErrWrongKind)
	}
	if secs == nil && sectioned(kind) {
		return nil, noSections(name, kind)
	}
	var errs ErrorList
	ext := takeSections(kind, doc, tree, secs, &errs)
	checkStructure(reflect.TypeOf(doc).Elem(), tree, "", &errs)
	if len(errs) > 0 {
		return nil, errs.WithFile(name).tagged(ErrDecode)
	}
	switch {
	case js == nil: // YAML: the tree holds only finite numbers now, so it marshals
		js, err = json.Marshal(tree)
	case ext != nil:
		js, err = withoutKeys(js, ext.cut)
	}
	if err == nil {
		var into any = doc // the sections are out: the shared fields, strictly
		switch d := doc.(type) {
		case *Plan:
			into = (*planFields)(d)
		case *Workload:
			into = (*workloadFields)(d)
		}
		err = StrictUnmarshal(js, into)
	}
	if err != nil {
		// The structural check should have caught everything; report what encoding/json says.
		return nil, ErrorList{{File: name, Rule: strings.TrimPrefix(err.Error(), "json: ")}}.tagged(ErrDecode)
	}
	ext.attach(doc)
	return doc, nil
}

// DecodeInto decodes into a document of a specific kind and fails with ErrWrongKind
// (`name: kind: "Plan": must be Cluster`) when the file holds another one. secs are the
// registered sections, as for Decode.
func DecodeInto[T Document](name string, data []byte, secs *SectionSet) (T, error) {
	var zero T
	doc, err := parse(name, data, kindOf(zero), secs)
	if err != nil {
		return zero, err
	}
	if errs := Validate(doc, secs); len(errs) > 0 {
		return zero, errs.WithFile(name)
	}
	return doc.(T), nil
}

// ReadInto reads a file expected to hold a document of type T, with the registered
// sections secs as for Decode.
func ReadInto[T Document](path string, secs *SectionSet) (T, error) {
	var zero T
	limit := int64(MaxFileBytes)
	if kindOf(zero) == KindWorkload {
		limit = MaxWorkloadBytes
	}
	data, err := ReadText(path, limit)
	if err != nil {
		return zero, err
	}
	return DecodeInto[T](path, data, secs)
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

// StrictUnmarshal decodes the one JSON value in js into v, refusing fields v does not have
// and data after the value: what every decoder of files a user or an exporter wrote needs,
// since a misspelt key silently ignored is a setting silently lost.
//
// It is jsonx.Decode with a closed schema: nesting, duplicate and case-variant keys, and null
// where a number belongs are refused too (a JSONL record whose sample is null is not sample
// 0), each naming its field path and byte.
func StrictUnmarshal(js []byte, v any) error {
	err := jsonx.Decode(js, v, jsonx.Options{MaxBytes: MaxFileBytes, Closed: true})
	if errors.Is(err, jsonx.ErrTrailing) {
		return errors.New("trailing data after the document")
	}
	return err
}

// taggedList is an ErrorList that also matches a sentinel (ErrDecode, ErrWrongKind, ...).
type taggedList struct {
	ErrorList
	tag error
}

func (l ErrorList) tagged(tag error) error { return taggedList{l, tag} }

func (t taggedList) Unwrap() []error { return append(t.ErrorList.Unwrap(), t.tag) }

func (t taggedList) problems() ErrorList { return t.ErrorList }

// Problems returns the individual problems behind an error from this package: the entries
// of an ErrorList (however it is wrapped), a read error as one problem, and any other error
// as a single problem whose rule is its message. nil gives nil.
func Problems(err error) ErrorList {
	if err == nil {
		return nil
	}
	var p interface{ problems() ErrorList }
	if errors.As(err, &p) {
		return p.problems()
	}
	var l ErrorList
	if errors.As(err, &l) {
		return l
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return ErrorList{fe}
	}
	return ErrorList{{Rule: err.Error()}}
}
