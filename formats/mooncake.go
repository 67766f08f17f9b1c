package formats

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// MooncakeBlockTokens is the tokens per hash id of Mooncake's traces (kvcache-ai/Mooncake,
// FAST'25: hash_ids are remapped block hashes of 512 tokens; llm-engine-2.md §3).
const MooncakeBlockTokens = 512

// mooncakeFields are a Mooncake trace line's fields, all required.
var mooncakeFields = [...]string{"timestamp", "input_length", "output_length", "hash_ids"}

// IsMooncakeTrace reports whether data is a Mooncake JSONL trace: its first non-blank line
// is a JSON object with the fields timestamp and input_length (a trace given to --trace is
// detected by them, whatever its name). A Trace document is never taken for one: its first
// key is apiVersion, and a YAML or indented JSON document's first line is no object.
func IsMooncakeTrace(data []byte) bool {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var line []byte
	for len(data) > 0 {
		line, data, _ = bytes.Cut(data, []byte("\n"))
		if line = bytes.TrimSpace(line); len(line) > 0 {
			break
		}
	}
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	var ts, in bool
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case "apiVersion", "kind":
			return false
		case "timestamp":
			ts = true
		case "input_length":
			in = true
		}
		if ts && in {
			return true
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}

// ParseMooncakeTrace reads a Mooncake JSONL trace (one request a line:
// {"timestamp": ms, "input_length": n, "output_length": m, "hash_ids": [ids]}) into a
// Trace: each line one untargeted request at timestamp ms from the trace start (kept as
// recorded, in µs), input_tokens n, output_tokens m and its hash ids, with
// hash_block_tokens = blockTokens (0: MooncakeBlockTokens). Strict: unknown or repeated
// fields, a missing one, a non-integer length or id, len(hash_ids) other than
// ceil(n / blockTokens), decreasing timestamps are errors naming the file, the line, the
// field and its value. The result is validated like a Trace document.
func ParseMooncakeTrace(name string, data []byte, blockTokens int) (*Trace, error) {
	if blockTokens == 0 {
		blockTokens = MooncakeBlockTokens
	}
	if blockTokens < 1 || blockTokens > MaxTraceTokens {
		return nil, fmt.Errorf("%s: hash block size %d: must be in [1, %d]", name, blockTokens, MaxTraceTokens)
	}
	t := &Trace{TypeMeta: TypeMeta{APIVersion: APIVersion, Kind: KindTrace}, Metadata: Metadata{Name: name}, HashBlockTokens: blockTokens}
	var bad error
	at, err := ScanLines(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), func(line int, text []byte) bool {
		r, err := parseMooncakeLine(text, blockTokens)
		if err != nil {
			bad = fmt.Errorf("%s:%d: %w", name, line, err)
			return false
		}
		if n := len(t.Requests); n > 0 && r.TimeUs < t.Requests[n-1].TimeUs {
			bad = fmt.Errorf("%s:%d: timestamp: %s: earlier than the line before (timestamps must be non-decreasing)", name, line, formatMs(r.TimeUs))
			return false
		}
		t.Requests = append(t.Requests, r)
		return true
	})
	if bad != nil {
		return nil, bad
	}
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %v", name, at, err)
	}
	if len(t.Requests) == 0 {
		return nil, fmt.Errorf("%s: no requests", name)
	}
	if errs := t.Validate(); len(errs) > 0 {
		return nil, errs.WithFile(name)
	}
	return t, nil
}

// ScanLines calls each with the number (from 1) and the text, white space trimmed, of every
// non-blank line of data (a JSON Lines file; lines up to MaxLineBytes) until each returns false. A
// read error (a longer line) is returned with the number of the line it stopped at.
func ScanLines(data []byte, each func(line int, text []byte) bool) (at int, err error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) > 0 && !each(line, text) {
			return line, nil
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		// bufio's "token too long" names neither the limit nor what to do.
		return line + 1, fmt.Errorf("%w: longer than %d MiB, the most one record may hold", ErrLineTooLong, MaxLineBytes>>20)
	}
	return line + 1, sc.Err()
}

// MaxLineBytes bounds one line of a JSON Lines file (ScanLines): a Mooncake request with
// two million hash_ids is past it.
const MaxLineBytes = 16 << 20

// ErrLineTooLong marks a JSON Lines line past MaxLineBytes.
var ErrLineTooLong = errors.New("line too long")

// formatMs writes µs as the trace's ms.
func formatMs(us int64) string { return strconv.FormatFloat(float64(us)/1e3, 'f', -1, 64) }

// parseMooncakeLine decodes one line's object. Errors are "field: value: rule".
func parseMooncakeLine(text []byte, blockTokens int) (TraceRequest, error) {
	var r TraceRequest
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return r, fmt.Errorf("%s: want a JSON object {%s}", shorten(text), strings.Join(mooncakeFields[:], ", "))
	}
	seen := map[string]bool{}
	var ids json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return r, fmt.Errorf("not valid JSON: %v", err)
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return r, fmt.Errorf("%s: not valid JSON: %v", key, err)
		}
		if seen[key] {
			return r, fmt.Errorf("%s: given twice", key)
		}
		seen[key] = true
		switch key {
		case "timestamp":
			f, ok := jsonNumber(raw)
			if !ok || f < 0 || f*1e3 > MaxDurationUs {
				return r, fmt.Errorf("timestamp: %s: must be a number of ms in [0, %g] from the trace start", shorten(raw), MaxDurationUs/1e3)
			}
			r.TimeUs = int64(math.Round(f * 1e3))
		case "input_length", "output_length":
			n, ok := jsonInt(raw)
			if !ok || n < 1 || n > MaxTraceTokens {
				return r, fmt.Errorf("%s: %s: must be an integer in [1, %d]", key, shorten(raw), MaxTraceTokens)
			}
			if key == "input_length" {
				r.InputTokens = int(n)
			} else {
				r.OutputTokens = int(n)
			}
		case "hash_ids":
			ids = raw
		default:
			return r, fmt.Errorf("%s: unknown field (a Mooncake trace line has %s)", key, strings.Join(mooncakeFields[:], ", "))
		}
	}
	if _, err := dec.Token(); err != nil {
		return r, fmt.Errorf("not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return r, errors.New("trailing data after the object (one request a line)")
	}
	for _, f := range mooncakeFields {
		if !seen[f] {
			return r, fmt.Errorf("%s: missing", f)
		}
	}
	h, err := hashIDs(ids, r.InputTokens, blockTokens)
	r.HashIDs = &h
	return r, err
}

// hashIDs decodes a line's hash_ids: an array of integers >= 0, ceil(input / blockTokens)
// of them.
func hashIDs(raw json.RawMessage, input, blockTokens int) ([]int64, error) {
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil || elems == nil {
		return nil, fmt.Errorf("hash_ids: %s: must be an array of integers", shorten(raw))
	}
	out := make([]int64, len(elems))
	for k, e := range elems {
		n, ok := jsonInt(e)
		if !ok || n < 0 {
			return nil, fmt.Errorf("hash_ids[%d]: %s: must be an integer >= 0", k, shorten(e))
		}
		out[k] = n
	}
	if want := ceilDiv(input, blockTokens); len(out) != want {
		return nil, fmt.Errorf("hash_ids: %d ids: must be ceil(input_length %d / %d) = %d, one per %d-token block", len(out), input, blockTokens, want, blockTokens)
	}
	return out, nil
}

// jsonNumber is a finite JSON number's value.
func jsonNumber(raw json.RawMessage) (float64, bool) {
	var n json.Number
	if json.Unmarshal(raw, &n) != nil || (len(raw) > 0 && raw[0] == '"') {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
}

// jsonInt is a JSON integer's value (no fraction, no exponent, fits in 64 bits).
func jsonInt(raw json.RawMessage) (int64, bool) {
	if _, ok := jsonNumber(raw); !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	return n, err == nil
}

// shorten renders a value for an error: at most 40 bytes of its JSON text.
func shorten(b []byte) string {
	const limit = 40
	s := string(bytes.TrimSpace(b))
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	return s
}
