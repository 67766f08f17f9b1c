package formats

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// AzureLLMHeader is the header line of the Azure LLM inference traces (Azure Public Dataset,
// "Azure LLM inference trace 2023", Patel et al., Splitwise, ISCA 2024): one request a line,
// its arrival time and its prompt and output token counts.
const AzureLLMHeader = "TIMESTAMP,ContextTokens,GeneratedTokens"

// azureTimeLayout is the traces' timestamp: "2023-11-16 18:15:46.6805900".
const azureTimeLayout = "2006-01-02 15:04:05.9999999"

// IsAzureLLMTrace reports whether data starts with the Azure LLM trace's header (a trace
// file given to --trace is detected by it, whatever its name).
func IsAzureLLMTrace(data []byte) bool {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
	return strings.EqualFold(strings.TrimSpace(string(line)), AzureLLMHeader)
}

// ParseAzureLLMTrace reads an Azure LLM trace CSV into a Trace: each line one request at its
// offset from the first line's timestamp, with input_tokens = ContextTokens and
// output_tokens = GeneratedTokens, untargeted. Errors name the file, the line, the column and
// the value; the result is validated like a Trace document.
func ParseAzureLLMTrace(name string, data []byte) (*Trace, error) {
	if !IsAzureLLMTrace(data) {
		return nil, fmt.Errorf("%s:1: header: want %q", name, AzureLLMHeader)
	}
	t := &Trace{TypeMeta: TypeMeta{APIVersion: APIVersion, Kind: KindTrace}, Metadata: Metadata{Name: name}}
	// encoding/csv: quoting, CRLF and blank lines as RFC 4180 has them; the column count is
	// checked here, so that the error shows the line.
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord, r.ReuseRecord = -1, true
	var t0 time.Time
	for first := true; ; first = false {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%s:%d: %v", name, pe.Line, pe.Err)
			}
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		line, _ := r.FieldPos(0)
		if first {
			continue // the header, checked above
		}
		if len(rec) != 3 {
			return nil, fmt.Errorf("%s:%d: %q: want 3 columns (%s), got %d", name, line, strings.Join(rec, ","), AzureLLMHeader, len(rec))
		}
		ts, err := time.Parse(azureTimeLayout, strings.TrimSpace(rec[0]))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: TIMESTAMP: %q: want a time like 2023-11-16 18:15:46.6805900", name, line, rec[0])
		}
		in, err := azureTokens(name, line, "ContextTokens", rec[1])
		if err != nil {
			return nil, err
		}
		out, err := azureTokens(name, line, "GeneratedTokens", rec[2])
		if err != nil {
			return nil, err
		}
		if len(t.Requests) == 0 {
			t0 = ts
		}
		us := ts.Sub(t0).Microseconds()
		if n := len(t.Requests); n > 0 && us < t.Requests[n-1].TimeUs {
			return nil, fmt.Errorf("%s:%d: TIMESTAMP: %q: earlier than the line before (timestamps must be non-decreasing)", name, line, rec[0])
		}
		t.Requests = append(t.Requests, TraceRequest{TimeUs: us, InputTokens: in, OutputTokens: out})
	}
	if len(t.Requests) == 0 {
		return nil, fmt.Errorf("%s: no requests after the header", name)
	}
	if errs := t.Validate(); len(errs) > 0 {
		return nil, errs.WithFile(name)
	}
	return t, nil
}

func azureTokens(name string, line int, col, s string) (int, error) {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || v < 1 || v > MaxTraceTokens {
		return 0, fmt.Errorf("%s:%d: %s: %q: must be an integer in [1, %d]", name, line, col, s, MaxTraceTokens)
	}
	return v, nil
}

// MaxTraceTokens bounds a trace request's token counts (2^24: far above any model's context;
// a larger count is a corrupt line, not a request).
const MaxTraceTokens = 1 << 24
