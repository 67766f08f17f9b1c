package formats

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/plan-dev/plan/formats/jsonx"
)

// ErrDuplicateKey marks a JSON object that holds the same key twice. encoding/json keeps
// the last value (`"count": 64, "count": 1` plans for one GPU) where the YAML decoder
// rejects the file: the same document must mean the same in both syntaxes, so a JSON
// duplicate is refused too, naming the key, its path and its line. It is jsonx's sentinel,
// so the scanner's refusal and this package's mean one thing under errors.Is.
var ErrDuplicateKey = jsonx.ErrDuplicateKey

// checkDuplicateKeys is the gate every JSON document passes before it is parsed (jsonx.Check,
// one pass over the bytes): it reports every key that appears twice in one object, at any
// depth, with its path and line, and refuses nesting deeper than jsonx.DefaultMaxDepth — the
// tree and streaming parsers that follow would otherwise spend memory per level (a 240 KB
// document of brackets cost 1.65 GB). Problems are tagged ErrDecode. Non-JSON input (YAML)
// and JSON with a syntax error return nil (after any duplicate before the error): the
// decoder proper reports those as before.
func checkDuplicateKeys(name string, data []byte) error {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil
	}
	offset := len(data) - len(trimmed)
	var errs ErrorList
	err := jsonx.Check(trimmed, nil, jsonx.Options{MaxBytes: MaxFileBytes, OnDuplicate: func(e *jsonx.Error) bool {
		line, _ := lineCol(data, int64(offset+e.Offset+1))
		errs = append(errs, &FieldError{File: name, Path: field(e.Path, e.Key),
			Rule: fmt.Sprintf("duplicate key %s (line %d): a key may appear once in an object (JSON decoders would keep only the last)", jsonx.Quote(e.Key), line)})
		return len(errs) < maxDuplicateKeys
	}})
	var je *jsonx.Error
	if errors.As(err, &je) && (je.Kind == jsonx.ErrTooDeep || je.Kind == jsonx.ErrTooLarge) {
		line, _ := lineCol(data, int64(offset+je.Offset+1))
		return append(errs, &FieldError{File: name, Path: je.Path, Rule: fmt.Sprintf("%s (line %d)", strings.TrimPrefix(je.Error(), je.Path+": "), line)}).tagged(ErrDecode)
	}
	if len(errs) == 0 {
		return nil
	}
	return errs.tagged(errors.Join(ErrDecode, ErrDuplicateKey))
}

// maxDuplicateKeys stops the scan after this many duplicates: the file is refused anyway.
const maxDuplicateKeys = 100
