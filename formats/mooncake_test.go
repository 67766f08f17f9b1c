package formats

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParseMooncakeTrace: a Mooncake JSONL trace imports as a Trace (timestamps in ms kept
// from the trace start, lengths as token counts, hash ids per request, 512-token blocks);
// bad lines name the file, the line, the field and the value.
func TestParseMooncakeTrace(t *testing.T) {
	line := func(s string) string { return s + "\n" }
	ok := line(`{"timestamp": 5, "input_length": 600, "output_length": 2, "hash_ids": [3, 4]}`)
	cases := []struct {
		name, data string
		want       []TraceRequest
		wantErr    string
	}{
		{name: "one line", data: ok, want: []TraceRequest{{TimeUs: 5000, InputTokens: 600, OutputTokens: 2, HashIDs: &[]int64{3, 4}}}},
		{name: "any field order, BOM, CRLF, blank lines", data: "\xef\xbb\xbf\r\n" + `{"hash_ids":[9],"output_length":1,"input_length":512,"timestamp":1.5}` + "\r\n\r\n",
			want: []TraceRequest{{TimeUs: 1500, InputTokens: 512, OutputTokens: 1, HashIDs: &[]int64{9}}}},
		{name: "id not an integer", data: line(`{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [3, 4.5]}`),
			wantErr: `t.jsonl:1: hash_ids[1]: 4.5: must be an integer >= 0`},
		{name: "id a string", data: line(`{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": ["3", 4]}`),
			wantErr: `t.jsonl:1: hash_ids[0]: "3": must be an integer >= 0`},
		{name: "id negative", data: line(`{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [3, -4]}`),
			wantErr: `t.jsonl:1: hash_ids[1]: -4: must be an integer >= 0`},
		{name: "too few ids", data: ok + line(`{"timestamp": 6, "input_length": 1025, "output_length": 2, "hash_ids": [3, 4]}`),
			wantErr: `t.jsonl:2: hash_ids: 2 ids: must be ceil(input_length 1025 / 512) = 3, one per 512-token block`},
		{name: "too many ids", data: line(`{"timestamp": 6, "input_length": 512, "output_length": 2, "hash_ids": [3, 4]}`),
			wantErr: `t.jsonl:1: hash_ids: 2 ids: must be ceil(input_length 512 / 512) = 1`},
		{name: "ids not an array", data: line(`{"timestamp": 6, "input_length": 512, "output_length": 2, "hash_ids": 3}`),
			wantErr: `t.jsonl:1: hash_ids: 3: must be an array of integers`},
		{name: "ids null", data: line(`{"timestamp": 6, "input_length": 512, "output_length": 2, "hash_ids": null}`),
			wantErr: `t.jsonl:1: hash_ids: null: must be an array of integers`},
		{name: "length not an integer", data: line(`{"timestamp": 0, "input_length": 600.5, "output_length": 2, "hash_ids": [3, 4]}`),
			wantErr: `t.jsonl:1: input_length: 600.5: must be an integer in [1, 16777216]`},
		{name: "zero output", data: line(`{"timestamp": 0, "input_length": 600, "output_length": 0, "hash_ids": [3, 4]}`),
			wantErr: `t.jsonl:1: output_length: 0: must be an integer in [1, 16777216]`},
		{name: "negative time", data: line(`{"timestamp": -1, "input_length": 600, "output_length": 2, "hash_ids": [3, 4]}`),
			wantErr: `t.jsonl:1: timestamp: -1: must be a number of ms`},
		{name: "decreasing", data: ok + line(`{"timestamp": 4, "input_length": 600, "output_length": 2, "hash_ids": [3, 4]}`),
			wantErr: `t.jsonl:2: timestamp: 4: earlier than the line before`},
		{name: "unknown field", data: line(`{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [3, 4], "text": "hi"}`),
			wantErr: `t.jsonl:1: text: unknown field`},
		{name: "missing field", data: line(`{"timestamp": 0, "input_length": 600, "hash_ids": [3, 4]}`),
			wantErr: `t.jsonl:1: output_length: missing`},
		{name: "twice", data: line(`{"timestamp": 0, "timestamp": 1, "input_length": 600, "output_length": 2, "hash_ids": [3, 4]}`),
			wantErr: `t.jsonl:1: timestamp: given twice`},
		{name: "two objects on a line", data: line(`{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [3, 4]} {}`),
			wantErr: `t.jsonl:1: trailing data`},
		{name: "not an object", data: ok + line(`[1, 2]`), wantErr: `t.jsonl:2: [1, 2]: want a JSON object`},
		{name: "broken JSON", data: line(`{"timestamp": 0, "input_length": 6`), wantErr: `t.jsonl:1: not valid JSON`},
		{name: "empty", data: "\n\n", wantErr: `t.jsonl: no requests`},
		// Two million hash_ids: past one line's bound, said with the line and the bound
		// (bufio's own words were "token too long").
		{name: "line past the bound", data: ok + `{"timestamp": 6, "input_length": 1, "output_length": 1, "hash_ids": [` +
			strings.Repeat("1234567, ", 2_000_000) + "1]}\n", wantErr: `t.jsonl:2: line too long: longer than 16 MiB, the most one record may hold`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := ParseMooncakeTrace("t.jsonl", []byte(c.data), 0)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tr.HashBlockTokens != MooncakeBlockTokens || len(tr.Requests) != len(c.want) {
				t.Fatalf("block %d, %d requests, want 512 and %d", tr.HashBlockTokens, len(tr.Requests), len(c.want))
			}
			for i, w := range c.want {
				g := tr.Requests[i]
				if g.TimeUs != w.TimeUs || g.InputTokens != w.InputTokens || g.OutputTokens != w.OutputTokens || !slices.Equal(g.Hashes(), w.Hashes()) {
					t.Errorf("request %d = %+v %v, want %+v %v", i, g, g.Hashes(), w, w.Hashes())
				}
			}
		})
	}
}

// TestMooncakeFixture reads the committed sample (the shape of the FAST'25 release: shared
// leading id 0, simultaneous arrivals) through ParseForeignTrace, as `--trace` does.
func TestMooncakeFixture(t *testing.T) {
	path := filepath.Join("..", "testdata", "formats", "mooncake", "sample.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tr, ok, err := ParseForeignTrace(path, data)
	if !ok || err != nil {
		t.Fatalf("ok %v err %v", ok, err)
	}
	if len(tr.Requests) != 4 || tr.Requests[1].TimeUs != 0 || tr.Requests[3].TimeUs != 3052500 {
		t.Fatalf("requests %+v", tr.Requests)
	}
	for i, r := range tr.Requests {
		if h := r.Hashes(); len(h) == 0 || h[0] != 0 {
			t.Fatalf("request %d: ids %v, want a leading 0", i, h)
		}
	}
	if errs := tr.Validate(); len(errs) > 0 {
		t.Fatal(errs)
	}
}

func TestDetectTraceFormat(t *testing.T) {
	for _, c := range []struct {
		name, data string
		mooncake   bool
	}{
		{"mooncake", `{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [0]}`, true},
		{"mooncake, ids first, blank first line", "\n" + `{"hash_ids": [0], "input_length": 1, "timestamp": 0}`, true},
		{"broken mooncake still detected (its errors then name the line)", `{"timestamp": 0, "input_length": "x"`, true},
		{"compact Trace document", `{"apiVersion":"plan/v1","kind":"Trace","requests":[{"t_us":0,"input_tokens":1}]}`, false},
		{"indented Trace document", "{\n  \"apiVersion\": \"plan/v1\",\n  \"kind\": \"Trace\"\n}", false},
		{"YAML Trace document", "apiVersion: plan/v1\nkind: Trace\n", false},
		{"Azure CSV", AzureLLMHeader + "\n2023-11-16 18:15:46.68,1,2\n", false},
		{"other JSONL", `{"prompt": "hi", "output_len": 3}`, false},
		{"empty", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := IsMooncakeTrace([]byte(c.data)); got != c.mooncake {
				t.Fatalf("IsMooncakeTrace = %v, want %v", got, c.mooncake)
			}
			_, ok, _ := ParseForeignTrace("t", []byte(c.data))
			if want := c.mooncake || strings.HasPrefix(c.data, AzureLLMHeader); ok != want {
				t.Fatalf("ParseForeignTrace ok = %v, want %v", ok, want)
			}
		})
	}
}

// FuzzMooncakeTrace: the decoder never panics; what it accepts is a valid Trace whose
// requests each hold ceil(input / 512) ids, at non-decreasing times.
func FuzzMooncakeTrace(f *testing.F) {
	f.Add([]byte(`{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [3, 4]}` + "\n"))
	f.Add([]byte(`{"timestamp": 1e3, "input_length": 1, "output_length": 1, "hash_ids": [0]}` + "\n" + `{"timestamp": 1e3, "input_length": 513, "output_length": 1, "hash_ids": [0, 1]}`))
	f.Add([]byte(`{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [3, 4.5]}`))
	f.Add([]byte("\xef\xbb\xbf{\"hash_ids\":[],\"timestamp\":0}\r\n"))
	if data, err := os.ReadFile(filepath.Join("..", "testdata", "formats", "mooncake", "sample.jsonl")); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ParseMooncakeTrace("f.jsonl", data, 0)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.jsonl") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if errs := tr.Validate(); len(errs) > 0 {
			t.Fatalf("accepted an invalid trace: %v", errs)
		}
		for i, r := range tr.Requests {
			if len(r.Hashes()) != (r.InputTokens+511)/512 || r.InputTokens < 1 || r.OutputTokens < 1 {
				t.Fatalf("request %d: %d tokens, %d ids", i, r.InputTokens, len(r.Hashes()))
			}
		}
		if _, ok, err2 := ParseForeignTrace("f.jsonl", data); !ok || err2 != nil {
			// What parses as Mooncake is detected as Mooncake.
			t.Fatalf("parsed but not detected: ok %v err %v", ok, errors.Unwrap(err2))
		}
	})
}
