package kserve

import (
	"encoding/json"
	"strconv"
	"strings"
)

// The answers of the infer endpoint are encoded by hand: they are the hot path's largest
// cost after the HTTP stack itself, and encoding/json walks them by reflection. The output
// decodes to the same values as json.Marshal's (TestEncodeMatchesJSON); tensors with
// parameters, the rare case, go through json.Marshal.

// AppendInferResponse appends r as JSON; ok is false when r needs json.Marshal.
func AppendInferResponse(b []byte, r *InferResponse) ([]byte, bool) {
	if r.Parameters != nil {
		return b, false
	}
	for i := range r.Outputs {
		if r.Outputs[i].Parameters != nil {
			return b, false
		}
	}
	b = append(b, `{"model_name":`...)
	b = appendString(b, r.ModelName)
	if r.ModelVersion != "" {
		b = append(b, `,"model_version":`...)
		b = appendString(b, r.ModelVersion)
	}
	if r.ID != "" {
		b = append(b, `,"id":`...)
		b = appendString(b, r.ID)
	}
	b = append(b, `,"outputs":[`...)
	for i := range r.Outputs {
		if i > 0 {
			b = append(b, ',')
		}
		t := &r.Outputs[i]
		b = append(b, `{"name":`...)
		b = appendString(b, t.Name)
		b = append(b, `,"shape":`...)
		if t.Shape == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for k, d := range t.Shape {
				if k > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, d, 10)
			}
			b = append(b, ']')
		}
		b = append(b, `,"datatype":`...)
		b = appendString(b, t.Datatype)
		b = append(b, `,"data":`...)
		if len(t.Data) == 0 {
			b = append(b, "null"...)
		} else {
			b = append(b, t.Data...) // valid JSON: it passed the decoder (or a worker built it)
		}
		b = append(b, '}')
	}
	b = append(b, `],"outcome":`...)
	b = appendString(b, r.Outcome)
	b = append(b, `,"timing":`...)
	b = appendTiming(b, &r.Timing)
	return append(b, '}'), true
}

// AppendDropResponse appends d as JSON.
func AppendDropResponse(b []byte, d *DropResponse) []byte {
	b = append(b, `{"error":`...)
	b = appendString(b, d.Error)
	if d.Model != "" {
		b = append(b, `,"model":`...)
		b = appendString(b, d.Model)
	}
	if d.ID != "" {
		b = append(b, `,"id":`...)
		b = appendString(b, d.ID)
	}
	b = append(b, `,"reason":`...)
	b = appendString(b, d.Reason)
	b = append(b, `,"stage":`...)
	b = appendString(b, d.Stage)
	if d.EstimateUs != 0 {
		b = append(b, `,"estimate_us":`...)
		b = strconv.AppendInt(b, d.EstimateUs, 10)
	}
	b = append(b, `,"timing":`...)
	b = appendTiming(b, &d.Timing)
	return append(b, '}')
}

func appendTiming(b []byte, t *Timing) []byte {
	field := func(b []byte, name string, v int64) []byte {
		b = append(b, name...)
		return strconv.AppendInt(b, v, 10)
	}
	b = field(b, `{"latency_us":`, t.LatencyUs)
	b = field(b, `,"slo_us":`, t.SLOUs)
	b = field(b, `,"intake_us":`, t.IntakeUs)
	if t.MigrationUs != 0 {
		b = field(b, `,"migration_us":`, t.MigrationUs)
	}
	b = field(b, `,"batch_wait_us":`, t.BatchWaitUs)
	b = field(b, `,"queue_us":`, t.QueueUs)
	b = field(b, `,"exec_us":`, t.ExecUs)
	b = field(b, `,"transfer_us":`, t.TransferUs)
	b = field(b, `,"delivery_us":`, t.DeliveryUs)
	if t.FirstTokenUs != 0 {
		b = field(b, `,"first_token_us":`, t.FirstTokenUs)
	}
	if len(t.Stages) > 0 {
		b = append(b, `,"stages":[`...)
		for i := range t.Stages {
			s := &t.Stages[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"stage":`...)
			b = appendString(b, s.Stage)
			b = append(b, `,"worker":`...)
			b = appendString(b, s.Worker)
			b = field(b, `,"batch":`, int64(s.Batch))
			b = field(b, `,"queue_us":`, s.QueueUs)
			b = field(b, `,"exec_us":`, s.ExecUs)
			if s.TransferUs != 0 {
				b = field(b, `,"transfer_us":`, s.TransferUs)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendString appends s as a JSON string: plain printable ASCII directly, anything else
// (escapes, control characters, non-ASCII, HTML-sensitive characters) as encoding/json
// writes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			// A copy goes to json.Marshal, whose argument escapes: s itself must not, or
			// every response (its outputs, its timing's stages) would be taken to escape
			// with it and be allocated per answer.
			q, _ := json.Marshal(strings.Clone(s))
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
