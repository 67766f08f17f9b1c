package load

// A reader of Mooncake traces (Mooncake, FAST'25; spec §4), kept to this one file so that
// formats' reader can replace it when it lands: ReadMooncake is the only entry point.

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/plan-dev/plan/formats"
)

// MooncakeBlock is the tokens one hash id of a Mooncake trace stands for.
const MooncakeBlock = 512

// ReadMooncake reads a Mooncake trace: JSON lines {"timestamp": ms since the first request,
// "input_length", "output_length", "hash_ids": [one id per MooncakeBlock-token block of the
// prompt]}. Equal hash ids become identical prompt blocks (BlockPrompt), so a server's
// prefix cache sees the trace's sharing. Entries are in time order (a stable sort).
// Errors name the file, the line and the field.
func ReadMooncake(name string, data []byte) (*Dataset, error) {
	d := &Dataset{Name: DatasetMooncake, Path: name, Timed: true}
	var bad error
	at, err := formats.ScanLines(data, func(line int, text []byte) bool {
		e, err := mooncakeEntry(name, line, text)
		if err != nil {
			bad = err
			return false
		}
		d.Entries = append(d.Entries, e)
		return true
	})
	if bad != nil {
		return nil, bad
	}
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %v", name, at, err)
	}
	if len(d.Entries) == 0 {
		return nil, fmt.Errorf("%s: no requests (a Mooncake trace is JSON lines {\"timestamp\", \"input_length\", \"output_length\", \"hash_ids\"})", name)
	}
	sort.SliceStable(d.Entries, func(i, j int) bool { return d.Entries[i].At < d.Entries[j].At })
	return d, nil
}

// mooncakeEntry decodes and checks line (its number, from 1) of a Mooncake trace.
func mooncakeEntry(name string, line int, text []byte) (DatasetEntry, error) {
	var r struct {
		Timestamp    *float64 `json:"timestamp"`
		InputLength  *int     `json:"input_length"`
		OutputLength *int     `json:"output_length"`
		HashIDs      []int64  `json:"hash_ids"`
	}
	if err := json.Unmarshal(text, &r); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return DatasetEntry{}, fmt.Errorf("%s:%d: %s: want %s, got JSON %s", name, line, te.Field, te.Type, te.Value)
		}
		return DatasetEntry{}, fmt.Errorf("%s:%d: not a JSON object: %v", name, line, err)
	}
	switch {
	case r.Timestamp == nil:
		return DatasetEntry{}, fmt.Errorf("%s:%d: timestamp: missing (ms since the first request)", name, line)
	case !(*r.Timestamp >= 0 && *r.Timestamp < 1e12):
		return DatasetEntry{}, fmt.Errorf("%s:%d: timestamp: %g: must be ms >= 0", name, line, *r.Timestamp)
	case r.InputLength == nil:
		return DatasetEntry{}, fmt.Errorf("%s:%d: input_length: missing", name, line)
	case *r.InputLength < 1 || *r.InputLength > formats.MaxTraceTokens:
		return DatasetEntry{}, fmt.Errorf("%s:%d: input_length: %d: must be in [1, %d]", name, line, *r.InputLength, formats.MaxTraceTokens)
	case r.OutputLength == nil:
		return DatasetEntry{}, fmt.Errorf("%s:%d: output_length: missing", name, line)
	case *r.OutputLength < 1 || *r.OutputLength > formats.MaxTraceTokens:
		return DatasetEntry{}, fmt.Errorf("%s:%d: output_length: %d: must be in [1, %d]", name, line, *r.OutputLength, formats.MaxTraceTokens)
	case len(r.HashIDs) > (*r.InputLength+MooncakeBlock-1)/MooncakeBlock:
		return DatasetEntry{}, fmt.Errorf("%s:%d: hash_ids: %d ids for input_length %d: at most one per %d-token block", name, line, len(r.HashIDs), *r.InputLength, MooncakeBlock)
	}
	return DatasetEntry{At: time.Duration(*r.Timestamp * float64(time.Millisecond)),
		InputTokens: *r.InputLength, OutputTokens: *r.OutputLength, HashIDs: r.HashIDs}, nil
}
