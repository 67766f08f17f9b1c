package formats

import (
	"strings"
	"testing"
)

// TestParseAzureLLMTrace: the Azure LLM trace CSV imports as a Trace (offsets from the first
// line, prompt and output tokens), detected by its header; bad lines name file, line, column
// and value.
func TestParseAzureLLMTrace(t *testing.T) {
	const h = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	cases := []struct {
		name, data string
		want       []TraceRequest
		wantErr    string
	}{
		{name: "two lines", data: h + "2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n",
			want: []TraceRequest{{TimeUs: 0, InputTokens: 374, OutputTokens: 44}, {TimeUs: 4314579, InputTokens: 396, OutputTokens: 109}}},
		{name: "BOM, CRLF, blank line", data: "\xef\xbb\xbf" + strings.ReplaceAll(h+"2023-11-16 18:15:46.68,1,2\n\n2023-11-16 18:15:46.69,3,4\n", "\n", "\r\n"),
			want: []TraceRequest{{TimeUs: 0, InputTokens: 1, OutputTokens: 2}, {TimeUs: 10000, InputTokens: 3, OutputTokens: 4}}},
		{name: "quoted fields", data: h + "\"2023-11-16 18:15:46.68\",\"5\",6\n",
			want: []TraceRequest{{TimeUs: 0, InputTokens: 5, OutputTokens: 6}}},
		{name: "not the header", data: "a,b,c\n", wantErr: `t.csv:1: header`},
		{name: "bare quote", data: h + "2023-11-16 18:15:46.68,1\"x,2\n", wantErr: `t.csv:2: bare " in non-quoted-field`},
		{name: "no requests", data: h, wantErr: "t.csv: no requests"},
		{name: "bad time", data: h + "yesterday,1,2\n", wantErr: `t.csv:2: TIMESTAMP: "yesterday"`},
		{name: "zero tokens", data: h + "2023-11-16 18:15:46.68,0,2\n", wantErr: `t.csv:2: ContextTokens: "0": must be an integer in [1, 16777216]`},
		{name: "columns", data: h + "2023-11-16 18:15:46.68,1\n", wantErr: "t.csv:2: \"2023-11-16 18:15:46.68,1\": want 3 columns"},
		{name: "decreasing", data: h + "2023-11-16 18:15:47,1,1\n2023-11-16 18:15:46,1,1\n", wantErr: "t.csv:3: TIMESTAMP"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := ParseAzureLLMTrace("t.csv", []byte(c.data))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Requests) != len(c.want) {
				t.Fatalf("requests %+v, want %+v", tr.Requests, c.want)
			}
			for i := range c.want {
				if tr.Requests[i] != c.want[i] {
					t.Errorf("request %d = %+v, want %+v", i, tr.Requests[i], c.want[i])
				}
			}
		})
	}
}

// FuzzParseAzureLLMTrace: any input either fails with an error naming the file or gives a
// valid trace (non-decreasing times, tokens in range).
func FuzzParseAzureLLMTrace(f *testing.F) {
	f.Add([]byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"))
	f.Add([]byte("TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:15:46,1,1\r\n2023-11-16 18:15:45,1,1\r\n"))
	f.Add([]byte("\xef\xbb\xbftimestamp,contexttokens,generatedtokens\n,,\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ParseAzureLLMTrace("f.csv", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.csv") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if errs := tr.Validate(); len(errs) > 0 {
			t.Fatalf("invalid trace: %v", errs)
		}
		for i, r := range tr.Requests {
			if r.InputTokens < 1 || r.OutputTokens < 1 || (i > 0 && r.TimeUs < tr.Requests[i-1].TimeUs) {
				t.Fatalf("request %d: %+v", i, r)
			}
		}
	})
}
