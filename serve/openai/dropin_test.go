package openai

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/plan-dev/plan/internal/base/buildinfo"
)

// TestDecodeDropIn: what OpenAI and vLLM clients send (ecosystem drop-in §1, §3):
// max_completion_tokens wins over max_tokens, integral floats are integers, and every field
// that would change the answer is refused with a 400 naming it, never ignored.
func TestDecodeDropIn(t *testing.T) {
	const chat = `{"model":"m","messages":[{"role":"user","content":"hi"}],`
	for _, tc := range []struct {
		name, body string
		max        int // want MaxTokens (when param is "")
		param      string
	}{
		{"max_completion_tokens wins", chat + `"max_tokens":3,"max_completion_tokens":5}`, 5, ""},
		{"max_tokens alone", chat + `"max_tokens":3}`, 3, ""},
		{"integral float", chat + `"max_tokens":3.0,"n":1.0,"priority":-2.0}`, 3, ""},
		{"fractional", chat + `"max_tokens":3.5}`, 0, "max_tokens"},
		{"fractional max_completion_tokens", chat + `"max_completion_tokens":2.25}`, 0, "max_completion_tokens"},
		{"n 2.0", chat + `"n":2.0}`, 0, ""},
		{"n 0", chat + `"n":0}`, 0, "n"},
		{"logprobs false", chat + `"logprobs":false,"top_logprobs":0,"tool_choice":"none"}`, 0, ""},
		{"logprobs true", chat + `"logprobs":true}`, 0, "logprobs"},
		{"completion logprobs", `{"model":"m","prompt":"x","logprobs":2}`, 0, "logprobs"},
		{"top_logprobs", chat + `"top_logprobs":3}`, 0, "top_logprobs"},
		{"echo", `{"model":"m","prompt":"x","echo":true}`, 0, "echo"},
		{"best_of", `{"model":"m","prompt":"x","best_of":3}`, 0, "best_of"},
		{"suffix", `{"model":"m","prompt":"x","suffix":"end"}`, 0, "suffix"},
		{"tools", chat + `"tools":[{"type":"function","function":{"name":"f"}}]}`, 0, "tools"},
		{"response_format json", chat + `"response_format":{"type":"json_object"}}`, 0, "response_format"},
		{"response_format text", chat + `"response_format":{"type": "text"}}`, 0, ""},
		{"logit_bias", chat + `"logit_bias":{"50256":-100}}`, 0, "logit_bias"},
		{"sampling accepted", chat + `"temperature":0,"top_p":1,"seed":7,"stop":["\n"],"ignore_eos":true}`, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isChat := strings.Contains(tc.body, "messages")
			r, e := Decode([]byte(tc.body), isChat)
			if tc.param != "" {
				if e == nil {
					t.Fatalf("decoded %+v, want a 400 on %s", r, tc.param)
				}
				if p, _ := e.Param.(string); e.Status != 400 || p != tc.param || !strings.Contains(e.Message, tc.param) {
					t.Errorf("error %+v, want 400 naming %s", e, tc.param)
				}
				return
			}
			if e != nil {
				t.Fatal(e)
			}
			if r.MaxTokens != tc.max {
				t.Errorf("MaxTokens %d, want %d", r.MaxTokens, tc.max)
			}
		})
	}
	r, e := Decode([]byte(`{"model":"m","prompt":"x","stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`), false)
	if e != nil || !r.ContinuousUsage || !r.IncludeUsage {
		t.Errorf("continuous_usage_stats: %+v %v", r, e)
	}
}

// TestHealthVersion: vLLM's GET /health (GuideLLM and vllm bench probe it) and GET /version,
// which answers the version plan version prints (the build's stamp), not "(devel)".
func TestHealthVersion(t *testing.T) {
	defer buildinfo.SetStamp("v1.2.3-4-gabcdef0", "abcdef0")()
	_, url := qlmServer(t, memFrontend())
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET /health: %d, want 200", resp.StatusCode)
	}
	resp, err = http.Get(url + "/version")
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Version string }
	err = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || v.Version != "v1.2.3-4-gabcdef0" {
		t.Errorf("GET /version: %d %+v %v", resp.StatusCode, v, err)
	}
	resp, err = http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET /v1/models: %d", resp.StatusCode)
	}
}

// TestStreamContinuousUsage: stream_options.continuous_usage_stats puts usage in every chunk,
// its completion_tokens the tokens sent so far (never decreasing, the last the total).
func TestStreamContinuousUsage(t *testing.T) {
	_, url := qlmServer(t, memFrontend())
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(
		`{"model":"mistral-chat","prompt":"one two","max_tokens":6,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	last, chunks := -1, 0
	for {
		line, err := rd.ReadString('\n')
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatal(err)
		}
		if c.Usage == nil {
			t.Fatalf("chunk without usage: %s", data)
		}
		if c.Usage.CompletionTokens < last {
			t.Errorf("completion_tokens went from %d to %d", last, c.Usage.CompletionTokens)
		}
		last = c.Usage.CompletionTokens
		chunks++
	}
	if chunks < 3 || last != 6 {
		t.Errorf("%d chunks, last completion_tokens %d; want at least 3 and 6", chunks, last)
	}
}
