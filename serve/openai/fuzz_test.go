package openai

import (
	"strings"
	"testing"
)

// FuzzDecode: any body decodes to a request within the limits or to a 400 error with a
// message; never a panic.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","prompt":"hello world","max_tokens":5,"priority":-3}`,
		`{"model":"m","prompt":["a"],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"max_completion_tokens":9}`,
		`{"model":"m","prompt":[1,2,3],"prompt_tokens":3,"class":2}`,
		`{"model":"m","prompt":"x","max_tokens":3.0,"max_completion_tokens":5,"n":1.0,"logprobs":false}`,
		`{"model":"m","prompt":"x","stream":true,"stream_options":{"continuous_usage_stats":true},"tools":[],"response_format":{"type":"text"}}`,
		`{"model":"m","prompt":"x","max_tokens":1e400,"logprobs":true,"best_of":2.5}`,
		`{"model":1}`, `[]`, `{"model":"m","prompt":"x"} {}`, `{"model":"m","messages":[null]}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, chat bool) {
		r, e := Decode(body, chat)
		if e != nil {
			if r != nil || e.Status != 400 || e.Message == "" || e.Type != "invalid_request_error" {
				t.Fatalf("error %+v with request %+v", e, r)
			}
			if p, ok := e.Param.(string); ok && !strings.Contains(e.Message, strings.SplitN(p, "[", 2)[0]) {
				t.Fatalf("message %q does not name param %q", e.Message, p)
			}
			return
		}
		if r.Model == "" || r.PromptTokens < 1 || r.PromptTokens > MaxTokensLimit || r.MaxTokens < 0 || r.MaxTokens > MaxTokensLimit ||
			r.Class < 0 || (r.IncludeUsage && !r.Stream) || r.Chat != chat || (chat && len(r.Messages) == 0) {
			t.Fatalf("request out of bounds: %+v", r)
		}
	})
}

func TestTokens(t *testing.T) {
	cases := []struct {
		text string
		want int
	}{
		{"", 0},
		{"hello", 2},                // 5 letters: 2 tokens of ≤ 4
		{"hi there", 3},             // 1 + 2 (5 letters)
		{"Hello, world!", 6},        // 2 + 2 for the words, 2 punctuation
		{"internationalization", 5}, // 20 letters
		{"  \n\t ", 0},
		{"日本語", 3}, // 9 UTF-8 bytes: 3 tokens
		{"a+b=c", 5},
	}
	for _, tc := range cases {
		if got := Tokens(tc.text); got != tc.want {
			t.Errorf("Tokens(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
	if got := ChatTokens([]Message{{Role: "user", Content: "hi there"}}); got != 3+4+3 {
		t.Errorf("ChatTokens = %d, want 10", got)
	}
}

func TestDecode(t *testing.T) {
	cases := []struct {
		name, body string
		chat       bool
		want       Request
		param      string
	}{
		{"completion", `{"model":"m","prompt":"hi there","max_tokens":7,"priority":-2,"temperature":0.5,"top_p":1}`, false,
			Request{Model: "m", Prompt: "hi there", MaxTokens: 7, Priority: -2, PromptTokens: 3}, ""},
		{"prompt_tokens wins", `{"model":"m","prompt":"hi","prompt_tokens":512,"class":1}`, false,
			Request{Model: "m", Prompt: "hi", PromptTokens: 512, Class: 1}, ""},
		{"max_completion_tokens", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`, true,
			Request{Chat: true, Model: "m", Messages: []Message{{"user", "hi"}}, MaxTokens: 3, Stream: true, IncludeUsage: true, PromptTokens: 8}, ""},
		{"priority range", `{"model":"m","prompt":"x","priority":4294967296}`, false, Request{}, "priority"},
		{"two prompts", `{"model":"m","prompt":["a","b"]}`, false, Request{Model: "m", Prompt: "a", PromptTokens: 1}, ""},
		{"no prompts", `{"model":"m","prompt":[]}`, false, Request{}, "prompt"},
		{"token prompt", `{"model":"m","prompt":[1,2]}`, false, Request{}, "prompt"},
		{"messages in completion", `{"model":"m","prompt":"x","messages":[]}`, false, Request{}, "messages"},
		{"prompt in chat", `{"model":"m","prompt":"x","messages":[{"role":"user","content":"x"}]}`, true, Request{}, "prompt"},
		{"stream_options without stream", `{"model":"m","prompt":"x","stream_options":{"include_usage":true}}`, false, Request{}, "stream_options"},
		{"stream not bool", `{"model":"m","prompt":"x","stream":"yes"}`, false, Request{}, "stream"},
		{"image part", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, true, Request{}, "messages[0]"},
		{"temperature", `{"model":"m","prompt":"x","temperature":3}`, false, Request{}, "temperature"},
		{"trailing data", `{"model":"m","prompt":"x"}{}`, false, Request{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, e := Decode([]byte(tc.body), tc.chat)
			if tc.want.Model == "" {
				if e == nil {
					t.Fatalf("decoded %+v, want an error", r)
				}
				p, _ := e.Param.(string)
				if e.Status != 400 || p != tc.param {
					t.Errorf("error %+v, want 400 on %q", e, tc.param)
				}
				return
			}
			if e != nil {
				t.Fatal(e)
			}
			if r.Model != tc.want.Model || r.Prompt != tc.want.Prompt || r.MaxTokens != tc.want.MaxTokens || r.Priority != tc.want.Priority ||
				r.PromptTokens != tc.want.PromptTokens || r.Class != tc.want.Class || r.Stream != tc.want.Stream || r.IncludeUsage != tc.want.IncludeUsage ||
				len(r.Messages) != len(tc.want.Messages) {
				t.Errorf("decoded %+v, want %+v", r, tc.want)
			}
		})
	}
}
