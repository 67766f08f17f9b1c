package validate

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/internal/onformats/benchapi"
	"github.com/plan-dev/plan/internal/registry/system"
	"github.com/plan-dev/plan/internal/registry/systems"
	runap "github.com/plan-dev/plan/internal/run/autopilot"
	"github.com/plan-dev/plan/internal/run/frontier"
	"github.com/plan-dev/plan/internal/run/replay"
	runsched "github.com/plan-dev/plan/internal/run/schedule"
	"github.com/plan-dev/plan/planner/schedule"
	"github.com/plan-dev/plan/sim"
)

// Kind is a kind of file plan writes besides the five documents of formats.Kinds, the
// schedule and the validation records: reports, request logs, the frontier and the benches'
// bench.json. `plan validate` recognises each (by its kind field, or by its shape where the
// file carries none) and reads it strictly; Reread is also what the round trip of every
// written file uses (write, validate, read, write again: byte-identical).
type Kind struct {
	// Name is the kind as validate prints it.
	Name string
	// is reports whether data is a file of this kind; top is its top-level object's keys
	// (nil when data is not one JSON object).
	is func(data []byte, top map[string]json.RawMessage) bool
	// Reread decodes data strictly into the type its writer wrote and returns it encoded
	// as that writer encodes it.
	Reread func(name string, data []byte) ([]byte, error)
}

// Kinds of the files in writtenKinds.
const (
	kindSimulationReport  = sim.ReportKind // simulate --report DIR/report.json, load --report
	kindScheduleReport    = "ScheduleReport"
	kindAutopilotReport   = "AutopilotReport"
	kindSimulatedRequests = "SimulatedRequests" // simulate --requests-out (JSONL)
	kindFrontier          = "Frontier"          // frontier --output json
)

// writtenKinds lists them, with the bench.json of every bench of systems and tools.
func writtenKinds(reg *systems.Registry, toolBenches []func() benchapi.Bench) []Kind {
	ks := []Kind{
		{kindSimulationReport, func(data []byte, top map[string]json.RawMessage) bool {
			return kindIs(top, kindSimulationReport)
		}, reread(func(name string, r *sim.Report) error {
			if r.APIVersion != formats.APIVersion {
				return &formats.FieldError{File: name, Path: "apiVersion", Value: formats.Echo(r.APIVersion), Rule: "must be " + formats.APIVersion}
			}
			return atLeastOne(name, "points", len(r.Points), "load point")
		}, indentJSON)},
		{kindScheduleReport, func(data []byte, top map[string]json.RawMessage) bool {
			return hasKeys(top, "schedule", "windows", "overall", "peak", "switch_delay_s")
		}, reread(func(name string, r *runsched.Report) error {
			return atLeastOne(name, "windows", len(r.Windows), "window")
		}, formats.Marshal)},
		{kindAutopilotReport, func(data []byte, top map[string]json.RawMessage) bool {
			return hasKeys(top, "start_plan", "decisions", "summary", "trace_rate")
		}, reread(func(name string, r *runap.ReportDoc) error {
			if r.Summary == nil {
				return &formats.FieldError{File: name, Path: "summary", Rule: "must be set"}
			}
			return nil
		}, formats.Marshal)},
		{kindFrontier, func(data []byte, top map[string]json.RawMessage) bool {
			return hasKeys(top, "system", "sweep", "currency", "points")
		}, reread(func(name string, r *frontier.Report) error {
			return atLeastOne(name, "points", len(r.Points), "point")
		}, indentJSON)},
		{kindSimulatedRequests, isRequestLog, rereadRequestLog},
	}
	var benches []func() benchapi.Bench
	for _, s := range reg.Systems() {
		if b, ok := s.(system.Benching); ok {
			benches = append(benches, b.Benches()...)
		}
	}
	for _, nb := range append(benches, toolBenches...) {
		r, ok := nb().(benchapi.ReportReader)
		if !ok {
			continue
		}
		kind := r.ReportKind()
		ks = append(ks, Kind{kind, func(data []byte, top map[string]json.RawMessage) bool {
			return kindIs(top, kind)
		}, r.ReadReport})
	}
	return ks
}

// KindOf finds the kind data is among writtenKinds; ok is false for none.
func KindOf(reg *systems.Registry, toolBenches []func() benchapi.Bench, data []byte) (Kind, bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		top = nil
	}
	for _, k := range writtenKinds(reg, toolBenches) {
		if k.is(data, top) {
			return k, true
		}
	}
	return Kind{}, false
}

// kindIs reports whether the object's "kind" is kind.
func kindIs(top map[string]json.RawMessage, kind string) bool {
	var k string
	return top != nil && json.Unmarshal(top["kind"], &k) == nil && k == kind
}

// hasKeys reports whether the object has every key (the files without a kind field).
func hasKeys(top map[string]json.RawMessage, keys ...string) bool {
	if top == nil || top["kind"] != nil {
		return false
	}
	for _, k := range keys {
		if _, ok := top[k]; !ok {
			return false
		}
	}
	return true
}

// reread is a Kind's Reread for a file its writer wrote from a T: read strictly, checked by
// check (the rules T's type cannot say), then encoded by write as that writer encodes it.
func reread[T any](check func(name string, r *T) error, write func(v any) ([]byte, error)) func(name string, data []byte) ([]byte, error) {
	return func(name string, data []byte) ([]byte, error) {
		var r T
		if err := strictRead(name, data, &r); err != nil {
			return nil, err
		}
		if err := check(name, &r); err != nil {
			return nil, err
		}
		return write(r)
	}
}

// atLeastOne requires the list at path of the file name to hold n >= 1 of what ("point").
func atLeastOne(name, path string, n int, what string) error {
	if n == 0 {
		return &formats.FieldError{File: name, Path: path, Rule: "must list at least one " + what}
	}
	return nil
}

// strictRead decodes data into v as formats reads a document: unknown fields, duplicate keys,
// wrong types and trailing data are errors naming the file.
func strictRead(name string, data []byte, v any) error {
	if err := formats.StrictUnmarshal(data, v); err != nil {
		return &formats.FieldError{File: name, Rule: err.Error()}
	}
	return nil
}

// indentJSON is App.WriteJSON's and writeSimReport's encoding: two-space indent, a newline.
func indentJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// isRequestLog: a JSONL file whose first line is a request's record (load, id, class,
// arrival_us, done_us, outcome).
func isRequestLog(data []byte, top map[string]json.RawMessage) bool {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	var first map[string]json.RawMessage
	if top != nil || json.Unmarshal(line, &first) != nil {
		return false
	}
	for _, k := range []string{"load", "id", "class", "arrival_us", "done_us", "outcome"} {
		if _, ok := first[k]; !ok {
			return false
		}
	}
	return true
}

// rereadRequestLog reads every line as the record writeRequestsOut or writeEngineRequests
// wrote (replay.Record: a sim.RequestRecord with the trace's request id when it had one).
func rereadRequestLog(name string, data []byte) ([]byte, error) {
	if len(data) == 0 || data[len(data)-1] != '\n' {
		return nil, &formats.FieldError{File: name, Rule: "must end with a newline (a file cut short?)"}
	}
	var recs []replay.Record
	for i, line := range bytes.Split(data[:len(data)-1], []byte("\n")) {
		var r replay.Record
		if err := formats.StrictUnmarshal(line, &r); err != nil {
			return nil, &formats.FieldError{File: name, Path: fmt.Sprintf("line %d", i+1), Rule: err.Error()}
		}
		if r.Outcome == "" || r.Class == "" {
			return nil, &formats.FieldError{File: name, Path: fmt.Sprintf("line %d", i+1), Rule: "must name its class and outcome"}
		}
		recs = append(recs, r)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// RereadOther reads a schedule or validation records (validateOtherKind's kinds) with the
// decoder of the command that takes it and encodes it as its writer does.
func RereadOther(kind, name string, data []byte) ([]byte, error) {
	switch kind {
	case schedule.Kind:
		s, err := schedule.Decode(name, data)
		if err != nil {
			return nil, err
		}
		return s.Marshal()
	case cascadesec.KindValidationRecords:
		r, err := cascadesec.ImportValidation(name, data, "")
		if err != nil {
			return nil, err
		}
		b, err := cascadesec.ValidationRecordsJSON(r)
		return append(b, '\n'), err // as import validation writes it
	}
	return nil, fmt.Errorf("%s: kind %s: not one plan writes", name, kind)
}
