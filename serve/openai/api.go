// Package openai is QLM's OpenAI-compatible front end on `plan serve` (QLM
// paper §2; the OpenAI API's completions and chat objects): POST /v1/completions and
// /v1/chat/completions (answered whole or streamed as server-sent events), GET /v1/models, and
// a durable submit-and-poll queue for long-SLO (batch) requests, POST /v1/queue and GET
// /v1/queue/{id}, kept in an embedded NATS JetStream server by default.
//
// Every request goes through serve.Server.Submit with its token counts, priority and class in
// dataplane.Attrs, so QLM's request groups and virtual queues (paper §4: a request group is
// formed by model and SLO; the RCT estimator, §6, needs the prompt length and the expected
// output length) see what the client asked for. The model a client names is one of the plan's
// applications (QLM's LLM classes); the engine's iterations (OnHop) are the stream's tokens.
package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/jsonx"
)

// Limits on what a request may ask for: beyond them the request is malformed (400).
const (
	// MaxTokensLimit bounds max_tokens and the prompt_tokens extension.
	MaxTokensLimit = 1 << 20
	// MaxChoices bounds the sequences one request asks for: n times its prompts. Each is a
	// request in the engine and a goroutine here; vLLM's own default bound on n is 16384
	// (VLLM_MAX_N_SEQUENCES), far more than a plan's instance batches at once.
	MaxChoices = 1024
	// greedyTemperature is vLLM's _SAMPLING_EPS: a temperature below it is greedy sampling.
	greedyTemperature = 1e-5
)

// Request is a decoded completion or chat-completion request.
type Request struct {
	Chat  bool
	Model string
	// Prompt is the completion prompt (the first of an array of prompts).
	Prompt string
	// Prompts are all of a completion's prompts: one for a string prompt. Each is served
	// on its own with N choices, as vLLM serves a prompt array (perPrompt).
	Prompts  []string
	Messages []Message
	// N is the choices per prompt (the n field, 1 by default): each an independent sequence
	// in the engine, its own choice in the answer.
	N int
	// MaxTokens is the output length; 0 means the class's profile draws it (emulation).
	MaxTokens int
	Stream    bool
	// IncludeUsage asks for a final usage chunk in a stream (stream_options.include_usage);
	// ContinuousUsage for usage in every chunk (stream_options.continuous_usage_stats, vLLM's
	// extension).
	IncludeUsage, ContinuousUsage bool
	// Priority is vLLM's request priority (lower first).
	Priority int32
	// PromptTokens is the prompt length: the prompt_tokens extension field when given,
	// otherwise Tokens of the text (of Prompt, for an array of prompts).
	PromptTokens int
	// Class is the class extension field (dataplane.Attrs.Class).
	Class int32
	// explicitPrompt: PromptTokens came from the prompt_tokens field.
	explicitPrompt bool
	// promptTokens are the lengths of Prompts, when there are several.
	promptTokens []int
	// logprobs names the first log-probability field that asks for some (with its value),
	// "" when none does: only a real engine has them to give (Frontend.read).
	logprobs string
}

// perPrompt is the request once per prompt: a completion with an array of prompts is
// served as one request per prompt, each with its own prompt and length, in order.
func (r *Request) perPrompt() []*Request {
	if len(r.Prompts) <= 1 {
		return []*Request{r}
	}
	out := make([]*Request, len(r.Prompts))
	for i, p := range r.Prompts {
		c := *r
		c.Prompt, c.Prompts, c.PromptTokens, c.promptTokens = p, nil, r.promptTokens[i], nil
		out[i] = &c
	}
	return out
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// wire is the JSON body. Integer fields are read as numbers and must be integral (3.0 is 3,
// as Python clients send them). Sampling fields (temperature, top_p, top_k, seed, stop,
// presence and frequency penalties, user, ignore_eos, min_tokens) are accepted: the
// generated text is filler whatever they say, and its length is max_tokens or the class's
// profile. n and an array of prompts are served (one sequence per choice). Fields that would
// change the answer's shape or content and that this server does not implement are refused
// with a 400 naming them (unimplemented, below) rather than ignored; other unknown fields
// are accepted, as vLLM does.
type wire struct {
	Model         *string            `json:"model"`
	Prompt        json.RawMessage    `json:"prompt"`
	Messages      *[]json.RawMessage `json:"messages"`
	MaxTokens     *float64           `json:"max_tokens"`
	MaxCompletion *float64           `json:"max_completion_tokens"`
	Stream        *bool              `json:"stream"`
	StreamOptions *struct {
		IncludeUsage    *bool `json:"include_usage"`
		ContinuousUsage *bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
	Priority     *float64 `json:"priority"`
	N            *float64 `json:"n"`
	Temperature  *float64 `json:"temperature"`
	PromptTokens *float64 `json:"prompt_tokens"`
	Class        *float64 `json:"class"`

	Logprobs       json.RawMessage `json:"logprobs"`
	TopLogprobs    json.RawMessage `json:"top_logprobs"`
	PromptLogprobs json.RawMessage `json:"prompt_logprobs"`
	Echo           json.RawMessage `json:"echo"`
	BestOf         json.RawMessage `json:"best_of"`
	Suffix         json.RawMessage `json:"suffix"`
	Tools          json.RawMessage `json:"tools"`
	ToolChoice     json.RawMessage `json:"tool_choice"`
	Functions      json.RawMessage `json:"functions"`
	FunctionCall   json.RawMessage `json:"function_call"`
	ResponseFormat json.RawMessage `json:"response_format"`
	LogitBias      json.RawMessage `json:"logit_bias"`
	Audio          json.RawMessage `json:"audio"`
	Modalities     json.RawMessage `json:"modalities"`
}

// unimplemented lists the fields refused unless they hold their default (the values that
// ask for nothing: null, false, 0, 1 for best_of, "", [], {}, "none"/"auto" tool choice,
// {"type":"text"} format, ["text"] modalities). The log-probability fields are the first
// three (logprobFields): a real engine behind --llm-endpoints answers them.
func (w *wire) unimplemented() []struct {
	name string
	raw  json.RawMessage
	ok   []string
} {
	return []struct {
		name string
		raw  json.RawMessage
		ok   []string
	}{
		{"logprobs", w.Logprobs, []string{"false", "0"}},
		{"top_logprobs", w.TopLogprobs, []string{"0"}},
		{"prompt_logprobs", w.PromptLogprobs, []string{"0"}},
		{"echo", w.Echo, []string{"false"}},
		{"best_of", w.BestOf, []string{"1", "1.0"}},
		{"suffix", w.Suffix, []string{`""`}},
		{"tools", w.Tools, []string{"[]"}},
		{"tool_choice", w.ToolChoice, []string{`"none"`, `"auto"`}},
		{"functions", w.Functions, []string{"[]"}},
		{"function_call", w.FunctionCall, []string{`"none"`, `"auto"`}},
		{"response_format", w.ResponseFormat, []string{`{"type":"text"}`}},
		{"logit_bias", w.LogitBias, []string{"{}"}},
		{"audio", w.Audio, nil},
		{"modalities", w.Modalities, []string{`["text"]`}},
	}
}

// logprobFields is how many of unimplemented's first entries ask for log probabilities.
const logprobFields = 3

// compactJSON is raw without insignificant spaces ("" when it does not parse).
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return ""
	}
	return b.String()
}

// intField reads integer field name (nil: absent) in [lo, hi]: an integral number (3.0 is
// 3); anything else is a 400 naming the field and its value.
func intField(name string, v *float64, lo, hi int64) (int64, bool, *Error) {
	if v == nil {
		return 0, false, nil
	}
	if *v != math.Trunc(*v) || math.IsInf(*v, 0) {
		return 0, false, badRequest(name, "%s: %g: must be an integer", name, *v)
	}
	if *v < float64(lo) || *v > float64(hi) {
		return 0, false, badRequest(name, "%s: %g: must be in [%d, %d]", name, *v, lo, hi)
	}
	return int64(*v), true, nil
}

// Error is an OpenAI-style error object: Status is the HTTP status it goes with.
type Error struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"`
	Code    any    `json:"code"`
	// RetryAfter is the Retry-After header's seconds for 429/503 (0: none).
	RetryAfter int64 `json:"-"`
	// Close asks the client to close the connection (Connection: close): the server is
	// draining, so a retry belongs on another connection, possibly another replica.
	Close bool `json:"-"`
}

func (e *Error) Error() string { return e.Message }

func badRequest(param, format string, a ...any) *Error {
	var p any
	if param != "" {
		p = param
	}
	return &Error{Status: 400, Type: "invalid_request_error", Param: p, Message: fmt.Sprintf(format, a...)}
}

// Decode reads a completion (chat false) or chat-completion body. A malformed body is a 400
// Error naming the field and the value, and so is a request for log probabilities, which
// the server's emulated engines do not have (decode leaves that to the caller).
func Decode(body []byte, chat bool) (*Request, *Error) {
	r, e := decode(body, chat)
	if e == nil && r.logprobs != "" {
		e = noLogprobs(r)
	}
	if e != nil {
		return nil, e
	}
	return r, nil
}

// noLogprobs refuses the log probabilities r asks for: an emulated engine times an LLM but
// generates filler text, and has no token probabilities to report (numbers made up for them
// would be wrong).
func noLogprobs(r *Request) *Error {
	name, _, _ := strings.Cut(r.logprobs, ": ")
	return badRequest(name, "%s: not served by this server's emulated engines: they time an LLM but generate filler text, with no token probabilities to report (a plan served with --llm-endpoints forwards it to a real engine)", r.logprobs)
}

// decode is Decode except that a request for log probabilities is recorded
// (Request.logprobs), not refused.
func decode(body []byte, chat bool) (*Request, *Error) {
	var w wire
	// The one checked decoding path (formats/jsonx): nesting, duplicate keys, keys that
	// differ only in case from a field (MAX_TOKENS), null numbers; unknown fields stay
	// allowed (the API is open).
	if err := jsonx.Decode(body, &w, jsonx.Options{}); err != nil {
		var te *json.UnmarshalTypeError
		var je *jsonx.Error
		switch {
		case errors.As(err, &te) && te.Field != "":
			return nil, badRequest(te.Field, "%s: must be %s, not a JSON %s", te.Field, kindOf(te.Type.Kind().String()), te.Value)
		case errors.Is(err, jsonx.ErrTrailing):
			return nil, badRequest("", "the body has data after its JSON object")
		case errors.As(err, &je) && je.Kind != jsonx.ErrSyntax:
			return nil, badRequest(je.Path, "%v", err)
		}
		return nil, badRequest("", "the body is not a JSON object: %v", err)
	}
	r := &Request{Chat: chat}
	if w.Model == nil || *w.Model == "" {
		return nil, badRequest("model", "model: required (one of GET /v1/models)")
	}
	r.Model = *w.Model
	if chat {
		if w.Prompt != nil {
			return nil, badRequest("prompt", "prompt: not a chat-completion field (use messages, or POST /v1/completions)")
		}
		if w.Messages == nil || len(*w.Messages) == 0 {
			return nil, badRequest("messages", "messages: required, at least one {role, content}")
		}
		for i, raw := range *w.Messages {
			m, err := decodeMessage(raw)
			if err != "" {
				return nil, badRequest(fmt.Sprintf("messages[%d]", i), "messages[%d]: %s", i, err)
			}
			r.Messages = append(r.Messages, m)
		}
	} else {
		if w.Messages != nil {
			return nil, badRequest("messages", "messages: not a completion field (use prompt, or POST /v1/chat/completions)")
		}
		ps, err := decodePrompt(w.Prompt)
		if err != "" {
			return nil, badRequest("prompt", "prompt: %s", err)
		}
		r.Prompt, r.Prompts = ps[0], ps
	}
	for i, f := range w.unimplemented() {
		if f.raw == nil {
			continue
		}
		v := compactJSON(f.raw)
		if v == "null" || slices.Contains(f.ok, v) {
			continue
		}
		if i < logprobFields {
			if r.logprobs == "" {
				r.logprobs = f.name + ": " + formats.Echo(v)
			}
			continue
		}
		return nil, badRequest(f.name, "%s: %s: not implemented by this server (it would change the answer; leave it out)", f.name, formats.Echo(v))
	}
	// max_completion_tokens, OpenAI's current name, wins over the deprecated max_tokens when
	// both are given (as OpenAI and vLLM do).
	mt, name := w.MaxTokens, "max_tokens"
	if w.MaxCompletion != nil {
		mt, name = w.MaxCompletion, "max_completion_tokens"
	}
	if n, ok, e := intField(name, mt, 1, MaxTokensLimit); e != nil {
		return nil, e
	} else if ok {
		r.MaxTokens = int(n)
	}
	if w.Stream != nil {
		r.Stream = *w.Stream
	}
	if w.StreamOptions != nil {
		if !r.Stream {
			return nil, badRequest("stream_options", "stream_options: only allowed with stream: true")
		}
		if w.StreamOptions.IncludeUsage != nil {
			r.IncludeUsage = *w.StreamOptions.IncludeUsage
		}
		if w.StreamOptions.ContinuousUsage != nil {
			r.ContinuousUsage = *w.StreamOptions.ContinuousUsage
		}
	}
	if n, ok, e := intField("priority", w.Priority, math.MinInt32, math.MaxInt32); e != nil {
		return nil, e
	} else if ok {
		r.Priority = int32(n)
	}
	r.N = 1
	if n, ok, e := intField("n", w.N, 1, MaxChoices); e != nil {
		return nil, e
	} else if ok {
		r.N = int(n)
	}
	if k := max(len(r.Prompts), 1); r.N*k > MaxChoices {
		return nil, badRequest("n", "n: %d choices for each of %d prompts: more than the %d sequences one request may ask for", r.N, k, MaxChoices)
	}
	// vLLM's range (SamplingParams._verify_args): finite, at least 0 and, since vLLM
	// checks OpenAI's upper bound too (0.24), at most 2; older vLLM took any temperature ≥ 0.
	if w.Temperature != nil && (*w.Temperature < 0 || *w.Temperature > 2) {
		return nil, badRequest("temperature", "temperature: %g: must be in [0, 2]", *w.Temperature)
	}
	if w.Temperature != nil && *w.Temperature < greedyTemperature && r.N > 1 {
		// vLLM's _verify_greedy_sampling: greedy choices would all be the same text.
		return nil, badRequest("n", "n: %d: must be 1 with greedy sampling (temperature %g), as vLLM requires", r.N, *w.Temperature)
	}
	if n, ok, e := intField("class", w.Class, 0, math.MaxInt32); e != nil {
		return nil, e
	} else if ok {
		r.Class = int32(n)
	}
	if n, ok, e := intField("prompt_tokens", w.PromptTokens, 1, MaxTokensLimit); e != nil {
		return nil, e
	} else if ok {
		if len(r.Prompts) > 1 {
			return nil, badRequest("prompt_tokens", "prompt_tokens: gives one prompt's length, and the request has %d prompts (send one request per prompt, or leave prompt_tokens out)", len(r.Prompts))
		}
		r.PromptTokens = int(n)
		r.explicitPrompt = true
	} else if chat {
		r.PromptTokens = ChatTokens(r.Messages)
	} else if len(r.Prompts) > 1 {
		r.promptTokens = make([]int, len(r.Prompts))
		for i, p := range r.Prompts {
			r.promptTokens[i] = max(Tokens(p), 1)
			if r.promptTokens[i] > MaxTokensLimit {
				return nil, badRequest("prompt", "prompt[%d]: about %d tokens: more than %d", i, r.promptTokens[i], MaxTokensLimit)
			}
		}
		r.PromptTokens = r.promptTokens[0]
	} else {
		r.PromptTokens = max(Tokens(r.Prompt), 1)
	}
	if r.PromptTokens > MaxTokensLimit {
		return nil, badRequest("prompt", "prompt: about %d tokens: more than %d", r.PromptTokens, MaxTokensLimit)
	}
	return r, nil
}

func kindOf(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int64", "int", "int32":
		return "an integer"
	case "float64":
		return "a number"
	case "slice":
		return "an array"
	case "struct", "ptr":
		return "an object"
	}
	return k
}

// decodePrompt reads a completion's prompt: a string, or an array of strings (at least one),
// each served as its own prompt.
func decodePrompt(raw json.RawMessage) ([]string, string) {
	if raw == nil || string(raw) == "null" {
		return nil, "required (a string or an array of strings)"
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []string{s}, ""
	}
	var ss []string
	if err := json.Unmarshal(raw, &ss); err == nil {
		if len(ss) == 0 {
			return nil, "an empty array: give at least one prompt"
		}
		if len(ss) > MaxChoices {
			return nil, fmt.Sprintf("an array of %d prompts: more than the %d one request may hold", len(ss), MaxChoices)
		}
		return ss, ""
	}
	v := string(raw)
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	return nil, fmt.Sprintf("%s: must be a string or an array of strings (token-id prompts: give prompt_tokens)", v)
}

func decodeMessage(raw json.RawMessage) (Message, string) {
	var m struct {
		Role    *string         `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return Message{}, "must be an object {role, content}"
	}
	if m.Role == nil || *m.Role == "" {
		return Message{}, "role: required"
	}
	switch *m.Role {
	case "system", "user", "assistant", "developer", "tool":
	default:
		return Message{}, fmt.Sprintf("role: %q: must be system, developer, user, assistant or tool", *m.Role)
	}
	out := Message{Role: *m.Role}
	if m.Content == nil || string(m.Content) == "null" {
		return out, ""
	}
	if err := json.Unmarshal(m.Content, &out.Content); err == nil {
		return out, ""
	}
	// The array form: [{type: "text", text}].
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return Message{}, "content: must be a string or an array of {type: text, text}"
	}
	var b strings.Builder
	for i, p := range parts {
		if p.Type != "text" {
			return Message{}, fmt.Sprintf("content[%d].type: %q: only text parts are served", i, p.Type)
		}
		b.WriteString(p.Text)
	}
	out.Content = b.String()
	return out, ""
}

// Tokens approximates the number of tokens of text deterministically, without a model's
// vocabulary: every run of letters and digits counts one token per 4 bytes begun (the usual
// rule of thumb for BPE vocabularies on English text: about 4 characters a token), every other
// non-space character one token, spaces none. A client that knows the real count gives the
// prompt_tokens extension field instead.
func Tokens(text string) int {
	n, word := 0, 0
	flush := func() {
		n += (word + 3) / 4
		word = 0
	}
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		switch {
		case r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'):
			word++
		case r >= utf8.RuneSelf && r != utf8.RuneError && !isSpace(r):
			word += size // a non-ASCII letter: its UTF-8 bytes (CJK ≈ one token per character)
		case isSpace(r):
			flush()
		default:
			flush()
			n++
		}
	}
	flush()
	return n
}

func isSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\v', '\f', 0x85, 0xA0, 0x3000:
		return true
	}
	return false
}

// ChatTokens approximates a chat's prompt tokens: each message's content (Tokens) plus 4
// tokens of role framing, plus 3 priming the reply (the chat templates' overhead).
func ChatTokens(ms []Message) int {
	n := 3
	for _, m := range ms {
		n += 4 + Tokens(m.Content)
	}
	return n
}
