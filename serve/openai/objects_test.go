package openai

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// The typed answer objects (objects.go) replaced maps: these tests hold them to the maps'
// bytes, for the answers and chunks every request shape produces.

// encodings are json.Marshal and writeJSON's encoder, which differ in the newline and
// are both on the wire (queue results, stream events; whole answers).
func sameEncoding(t *testing.T, name string, old, typed any) {
	t.Helper()
	ob, err1 := json.Marshal(old)
	tb, err2 := json.Marshal(typed)
	if err1 != nil || err2 != nil {
		t.Fatalf("%s: %v, %v", name, err1, err2)
	}
	if !bytes.Equal(ob, tb) {
		t.Errorf("%s:\nmap   %s\ntyped %s", name, ob, tb)
	}
	var ow, tw bytes.Buffer
	_ = json.NewEncoder(&ow).Encode(old)
	_ = json.NewEncoder(&tw).Encode(typed)
	if !bytes.Equal(ow.Bytes(), tw.Bytes()) {
		t.Errorf("%s (encoder): %q, %q", name, ow.Bytes(), tw.Bytes())
	}
}

// objectRequests are the request shapes whose answers differ: chat or not, max_tokens or
// the profile's length, n, prompt arrays, and a model name that JSON escapes.
func objectRequests() map[string]*Request {
	return map[string]*Request{
		"completion":             {Model: "m", Prompt: "a", Prompts: []string{"a"}, N: 1, PromptTokens: 3},
		"completion max_tokens":  {Model: "mistral-batch", Prompt: "a", Prompts: []string{"a"}, N: 1, PromptTokens: 3, MaxTokens: 5},
		"completion n=3":         {Model: "m", Prompt: "a", Prompts: []string{"a"}, N: 3, PromptTokens: 2, MaxTokens: 2},
		"completion prompts n=2": {Model: "m", Prompt: "a", Prompts: []string{"a", "b c d"}, promptTokens: []int{1, 3}, N: 2, PromptTokens: 1},
		"chat":                   {Chat: true, Model: "mistral-chat", N: 1, PromptTokens: 9},
		"chat max_tokens n=2":    {Chat: true, Model: "mistral-chat", N: 2, PromptTokens: 9, MaxTokens: 4},
		"escaped model":          {Chat: true, Model: `a<b>&"c"/é`, N: 1, PromptTokens: 1},
	}
}

func TestObjectsResponse(t *testing.T) {
	for name, req := range objectRequests() {
		subs := choices(req, "cmpl-x-1")
		for i, sub := range subs {
			sub.tokens = 1 + 3*i // some ran longer
		}
		sameEncoding(t, name, legacyResponse(req, "cmpl-x-1", 1700000000, subs), response(req, "cmpl-x-1", 1700000000, subs))
	}
}

func TestObjectsChunks(t *testing.T) {
	for name, req := range objectRequests() {
		for _, continuous := range []bool{false, true} {
			req.ContinuousUsage = continuous
			sw := newStreamWriter(nil, time.Second, req, "chatcmpl-x-2", 1700000001, []int{7, 11})
			stop := "stop"
			for _, c := range []struct {
				text   string
				finish *string
				first  bool
				upto   int
			}{
				{" lorem", nil, true, 1}, {"", nil, true, 0}, {" ipsum", nil, false, 2},
				{"", &stop, false, 2}, {"", &stop, true, 1},
			} {
				for i := range 2 {
					var finish any
					if c.finish != nil {
						finish = *c.finish
					}
					sameEncoding(t, name, legacyChunk(sw, i, c.text, finish, c.first, c.upto), sw.choiceChunk(i, c.text, c.finish, c.first, c.upto))
				}
			}
			u := &Usage{PromptTokens: 18, CompletionTokens: 4, TotalTokens: 22}
			sameEncoding(t, name+" usage", legacyUsageChunk(sw, u), sw.usageChunk(u))
		}
	}
}

func TestObjectsOthers(t *testing.T) {
	for _, e := range []*Error{
		{Status: 400, Type: "invalid_request_error", Message: "n: 0: must be in [1, 1024]", Param: "n"},
		{Status: 429, Type: "rate_limit_error", Code: "would_finish_late", Message: "rejected <soon> & later", RetryAfter: 3},
		{Status: 503, Type: "server_error", Message: "", Close: true},
	} {
		sameEncoding(t, "error "+e.Type, map[string]*Error{"error": e}, errorBody{e})
	}
	for name, ms := range map[string][]Model{"no models": {}, "models": {{ID: "a", Object: "model", Created: 5, OwnedBy: "plan"}, {ID: "b/c", Object: "model", Created: 5, OwnedBy: "plan"}}} {
		sameEncoding(t, name, map[string]any{"object": "list", "data": ms}, list[Model]{Data: ms, Object: "list"})
	}
	for name, es := range map[string][]EngineState{"no engines": {}, "engines": {{Instance: "i0", URL: "http://x", Waiting: 1.5, Err: "down"}, {Instance: "i1", URL: "http://y", Model: "m", Polled: 9, Failures: 3, Down: true}}} {
		sameEncoding(t, name, map[string]any{"object": "list", "data": es}, list[EngineState]{Data: es, Object: "list"})
	}
	sameEncoding(t, "version", map[string]string{"version": "v1.2.3 <dev>"}, version{"v1.2.3 <dev>"})
}

// The encodings before the typed objects, kept as they were, for the tests to hold the
// typed objects to.

func legacyResponse(req *Request, id string, created int64, subs []*submission) any {
	object := "text_completion"
	if req.Chat {
		object = "chat.completion"
	}
	outs := outputs(subs)
	cs := make([]any, len(subs))
	for i, sub := range subs {
		choice := map[string]any{"index": i, "finish_reason": finishReason(sub.req)}
		if req.Chat {
			choice["message"] = map[string]any{"role": "assistant", "content": Filler(0, outs[i])}
		} else {
			choice["text"] = Filler(0, outs[i])
			choice["logprobs"] = nil
		}
		cs[i] = choice
	}
	return map[string]any{"id": id, "object": object, "created": created, "model": req.Model,
		"choices": cs, "usage": totalUsage(req, subs, outs)}
}

func legacyChunk(s *streamWriter, i int, text string, finish any, first bool, upto int) any {
	c := map[string]any{"index": i, "finish_reason": finish}
	if s.chat {
		d := map[string]any{}
		if first {
			d["role"] = "assistant"
		}
		if text != "" || !first {
			d["content"] = text
		}
		c["delta"] = d
	} else {
		c["text"] = text
		c["logprobs"] = nil
	}
	ev := map[string]any{"id": s.id, "object": s.object, "created": s.created, "model": s.model, "choices": []any{c}}
	if s.continuous {
		p := s.prompt[i]
		ev["usage"] = &Usage{PromptTokens: p, CompletionTokens: upto, TotalTokens: p + upto}
	}
	return ev
}

func legacyUsageChunk(s *streamWriter, u *Usage) any {
	return map[string]any{"id": s.id, "object": s.object, "created": s.created, "model": s.model,
		"choices": []any{}, "usage": u}
}
