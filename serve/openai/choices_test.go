package openai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDecodeChoices: n and an array of prompts are read as vLLM reads them (n ≥ 1, not
// with greedy sampling; each prompt its own), bounded, and a field this server cannot
// serve truthfully is a 400 naming it. temperature keeps vLLM's current range, [0, 2].
func TestDecodeChoices(t *testing.T) {
	const cmpl = `{"model":"m",`
	for _, tc := range []struct {
		name, body string
		chat       bool
		n          int
		prompts    []int // each prompt's tokens (perPrompt)
		param      string
		msg        string // in the error
	}{
		{"n 3", cmpl + `"prompt":"one two","n":3}`, false, 3, []int{2}, "", ""},
		{"chat n 2", `{"model":"m","messages":[{"role":"user","content":"hi"}],"n":2}`, true, 2, []int{8}, "", ""},
		{"prompt array", cmpl + `"prompt":["a","bb cc dd"]}`, false, 1, []int{1, 3}, "", ""},
		{"prompt array, n 2", cmpl + `"prompt":["a","b","c"],"n":2}`, false, 2, []int{1, 1, 1}, "", ""},
		{"one-prompt array with prompt_tokens", cmpl + `"prompt":["x"],"prompt_tokens":700}`, false, 1, []int{700}, "", ""},
		{"temperature 2", cmpl + `"prompt":"x","temperature":2,"n":2}`, false, 2, []int{1}, "", ""},
		{"temperature 0, n 1", cmpl + `"prompt":"x","temperature":0}`, false, 1, []int{1}, "", ""},

		{"n 0", cmpl + `"prompt":"x","n":0}`, false, 0, nil, "n", "must be in [1, 1024]"},
		{"n too many", cmpl + `"prompt":"x","n":1025}`, false, 0, nil, "n", "must be in [1, 1024]"},
		{"n times prompts too many", cmpl + `"prompt":["a","b","c"],"n":500}`, false, 0, nil, "n", "500 choices for each of 3 prompts"},
		{"n greedy", cmpl + `"prompt":"x","n":2,"temperature":0}`, false, 0, nil, "n", "must be 1 with greedy sampling"},
		{"empty prompt array", cmpl + `"prompt":[]}`, false, 0, nil, "prompt", "an empty array"},
		{"prompt_tokens with prompts", cmpl + `"prompt":["a","b"],"prompt_tokens":5}`, false, 0, nil, "prompt_tokens", "the request has 2 prompts"},
		{"token-id prompts", cmpl + `"prompt":[[1,2],[3]]}`, false, 0, nil, "prompt", "token-id prompts"},
		{"temperature 3", cmpl + `"prompt":"x","temperature":3}`, false, 0, nil, "temperature", "must be in [0, 2]"},
		{"temperature negative", cmpl + `"prompt":"x","temperature":-0.5}`, false, 0, nil, "temperature", "must be in [0, 2]"},
		{"logprobs", cmpl + `"prompt":"x","logprobs":2}`, false, 0, nil, "logprobs", "no token probabilities"},
		{"chat logprobs", `{"model":"m","messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":2}`, true, 0, nil, "logprobs", `logprobs: "true": not served`},
		{"top_logprobs", `{"model":"m","messages":[{"role":"user","content":"hi"}],"top_logprobs":2}`, true, 0, nil, "top_logprobs", "emulated engines"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, e := Decode([]byte(tc.body), tc.chat)
			if tc.param != "" {
				if e == nil {
					t.Fatalf("decoded %+v, want a 400 on %s", r, tc.param)
				}
				if p, _ := e.Param.(string); e.Status != 400 || p != tc.param || !strings.Contains(e.Message, tc.msg) {
					t.Errorf("error %d %v %q, want 400 on %s containing %q", e.Status, e.Param, e.Message, tc.param, tc.msg)
				}
				return
			}
			if e != nil {
				t.Fatal(e)
			}
			var got []int
			for _, p := range r.perPrompt() {
				got = append(got, p.PromptTokens)
			}
			if r.N != tc.n || fmt.Sprint(got) != fmt.Sprint(tc.prompts) {
				t.Errorf("n %d, prompts' tokens %v; want %d, %v", r.N, got, tc.n, tc.prompts)
			}
		})
	}
}

// TestChoicesServed: n choices are n sequences in the engine and a prompt array one choice
// per prompt (times n), indexed as vLLM orders them (prompt i's choices i·n … i·n+n−1),
// whole, streamed and queued; the usage counts each prompt once and every choice's output,
// and vllm:request_params_n sees n once per prompt.
func TestChoicesServed(t *testing.T) {
	_, url := qlmServer(t, memFrontend())
	p1, p2 := "one two three", "four"
	for _, tc := range []struct {
		name, path, body string
		choices          int
		prompt, out      int // usage
		paramN           float64
	}{
		{"n 3", "/v1/completions", `{"model":"mistral-chat","prompt":"` + p1 + `","max_tokens":4,"n":3}`, 3, Tokens(p1), 12, 3},
		{"chat n 2", "/v1/chat/completions", `{"model":"mistral-chat","messages":[{"role":"user","content":"` + p1 + `"}],"max_tokens":3,"n":2}`, 2,
			ChatTokens([]Message{{Content: p1}}), 6, 2},
		{"prompt array", "/v1/completions", `{"model":"mistral-chat","prompt":["` + p1 + `","` + p2 + `"],"max_tokens":2}`, 2, Tokens(p1) + Tokens(p2), 4, 2},
		{"prompt array, n 2", "/v1/completions", `{"model":"mistral-chat","prompt":["` + p1 + `","` + p2 + `"],"max_tokens":2,"n":2}`, 4, Tokens(p1) + Tokens(p2), 8, 4},
		{"stream n 2", "/v1/completions", `{"model":"mistral-chat","prompt":"` + p1 + `","max_tokens":3,"n":2,"stream":true,"stream_options":{"include_usage":true}}`, 2, Tokens(p1), 6, 2},
		{"stream chat, prompt n 3", "/v1/chat/completions", `{"model":"mistral-chat","messages":[{"role":"user","content":"` + p1 + `"}],"max_tokens":2,"n":3,"stream":true,"stream_options":{"include_usage":true}}`, 3,
			ChatTokens([]Message{{Content: p1}}), 6, 3},
		{"queued n 2", "/v1/queue", `{"model":"mistral-batch","prompt":"` + p1 + `","max_tokens":2,"n":2}`, 2, Tokens(p1), 4, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := metricSum(t, url, "vllm:request_params_n_sum")
			stream := strings.Contains(tc.body, `"stream":true`)
			type choice struct {
				Index        int
				Text         string
				Message      struct{ Role, Content string }
				Delta        struct{ Role, Content string }
				FinishReason *string `json:"finish_reason"`
			}
			var answer struct {
				Choices []choice
				Usage   *Usage
			}
			// texts[i] is choice i's text, finish[i] its finish reason.
			texts, finish := map[int]string{}, map[int]string{}
			switch {
			case stream:
				resp, err := http.Post(url+tc.path, "application/json", strings.NewReader(tc.body))
				if err != nil {
					t.Fatal(err)
				}
				events := sse(t, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || len(events) == 0 || events[len(events)-1] != "[DONE]" {
					t.Fatalf("status %d, events %q", resp.StatusCode, events)
				}
				for _, e := range events[:len(events)-1] {
					var c struct {
						Choices []choice
						Usage   *Usage
					}
					if err := json.Unmarshal([]byte(e), &c); err != nil {
						t.Fatalf("%q: %v", e, err)
					}
					if c.Usage != nil {
						answer.Usage = c.Usage
						continue
					}
					for _, ch := range c.Choices {
						if _, done := finish[ch.Index]; done {
							t.Errorf("choice %d: a chunk after its finish", ch.Index)
						}
						texts[ch.Index] += ch.Text + ch.Delta.Content
						if ch.FinishReason != nil {
							finish[ch.Index] = *ch.FinishReason
						}
					}
				}
			default:
				var b []byte
				if tc.path == "/v1/queue" {
					st := waitDone(t, url, enqueue(t, url, tc.body).ID)
					if st.Status != StatusCompleted {
						t.Fatalf("queued: %+v", st)
					}
					b = st.Result
				} else {
					resp, body := post(t, url+tc.path, tc.body)
					if resp.StatusCode != 200 {
						t.Fatalf("status %d: %s", resp.StatusCode, body)
					}
					b = body
				}
				if err := json.Unmarshal(b, &answer); err != nil {
					t.Fatal(err)
				}
				for i, ch := range answer.Choices {
					if ch.Index != i {
						t.Errorf("choices[%d].index %d", i, ch.Index)
					}
					texts[ch.Index] = ch.Text + ch.Message.Content
					if ch.FinishReason != nil {
						finish[ch.Index] = *ch.FinishReason
					}
				}
			}
			if len(texts) != tc.choices || len(finish) != tc.choices {
				t.Fatalf("%d choices (%d finished), want %d: %v", len(texts), len(finish), tc.choices, texts)
			}
			out := 0
			for i := range tc.choices {
				text := texts[i]
				n := fillerLen(text)
				if n < 0 || finish[i] != "length" {
					t.Errorf("choice %d: %q, finish %q", i, text, finish[i])
				}
				out += n
			}
			want := Usage{PromptTokens: tc.prompt, CompletionTokens: tc.out, TotalTokens: tc.prompt + tc.out}
			if answer.Usage == nil || *answer.Usage != want || out != tc.out {
				t.Errorf("usage %+v (texts of %d tokens), want %+v", answer.Usage, out, want)
			}
			if got := metricSum(t, url, "vllm:request_params_n_sum") - before; got != tc.paramN {
				t.Errorf("vllm:request_params_n_sum grew by %g, want %g", got, tc.paramN)
			}
		})
	}
}

// fillerLen is the tokens of filler text (Filler(0, n) == text), -1 if it is not filler.
func fillerLen(text string) int {
	for n := 0; n <= len(text); n++ {
		if Filler(0, n) == text {
			return n
		}
	}
	return -1
}

// TestRemoteChoices: with --llm-endpoints, a real engine generates, so a request for log
// probabilities goes to it whole; n > 1 and prompt arrays are refused, since a request is
// one sequence on the one engine QLM placed it on.
func TestRemoteChoices(t *testing.T) {
	v := &fakeVLLM{name: "mistralai/Mistral-7B"}
	srv := httptest.NewServer(v.handler())
	defer srv.Close()
	fe := memFrontend()
	if err := fe.Endpoints.Set("llm-0=" + srv.URL + ",llm-1=" + srv.URL); err != nil {
		t.Fatal(err)
	}
	_, url := qlmServer(t, fe)
	for _, tc := range []struct {
		name, path, body string
		status           int
		param            string
		forwarded        string // a field the engine must receive
	}{
		{"logprobs", "/v1/completions", `{"model":"mistral-chat","prompt":"x","max_tokens":2,"logprobs":2}`, 200, "", "logprobs"},
		{"chat logprobs", "/v1/chat/completions", `{"model":"mistral-chat","messages":[{"role":"user","content":"x"}],"max_tokens":2,"logprobs":true,"top_logprobs":3}`, 200, "", "top_logprobs"},
		{"n 2", "/v1/completions", `{"model":"mistral-chat","prompt":"x","max_tokens":2,"n":2}`, 400, "n", ""},
		{"prompt array", "/v1/completions", `{"model":"mistral-chat","prompt":["x","y"],"max_tokens":2}`, 400, "prompt", ""},
		{"echo still refused", "/v1/completions", `{"model":"mistral-chat","prompt":"x","echo":true}`, 400, "echo", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := v.received()
			resp, b := post(t, url+tc.path, tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d: %s, want %d", resp.StatusCode, b, tc.status)
			}
			if tc.param != "" {
				var e struct{ Error *Error }
				if err := json.Unmarshal(b, &e); err != nil || e.Error == nil || e.Error.Param != tc.param {
					t.Errorf("%s, want an error on %s", b, tc.param)
				}
				if v.received() != n {
					t.Errorf("a refused request reached the engine")
				}
				return
			}
			v.mu.Lock()
			last := v.bodies[len(v.bodies)-1]
			v.mu.Unlock()
			if _, ok := last[tc.forwarded]; !ok || !strings.Contains(string(b), "real words") {
				t.Errorf("the engine got %v and answered %s: want %s forwarded", last, b, tc.forwarded)
			}
		})
	}
}
