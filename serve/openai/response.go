package openai

import "strings"

// The whole (non-streaming) answer of a completion: its choices' text and token usage.

// completionTokens is the answer's output length: max_tokens when given (the engine generated
// exactly that many), else the iterations the request took.
func completionTokens(req *Request, hops int) int {
	if req.MaxTokens > 0 {
		return req.MaxTokens
	}
	return max(hops, 1)
}

func finishReason(req *Request) string {
	if req.MaxTokens > 0 {
		return "length"
	}
	return "stop"
}

// Usage is the token accounting of an answer.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// totalUsage is the usage of a whole answer whose choices generated outs: every prompt's
// tokens once, however many choices it has (n), and every choice's output (as vLLM counts).
func totalUsage(req *Request, subs []*submission, outs []int) *Usage {
	var u Usage
	for i, sub := range subs {
		if i%req.N == 0 {
			u.PromptTokens += sub.req.PromptTokens
		}
		u.CompletionTokens += outs[i]
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return &u
}

// outputs are the choices' output lengths once they have finished.
func outputs(subs []*submission) []int {
	outs := make([]int, len(subs))
	for i, sub := range subs {
		outs[i] = sub.output()
	}
	return outs
}

// response is the whole (non-streaming) answer of finished choices subs: a completion of
// textChoice or of chatChoice.
func response(req *Request, id string, created int64, subs []*submission) any {
	outs := outputs(subs)
	u := totalUsage(req, subs, outs)
	if req.Chat {
		cs := make([]chatChoice, len(subs))
		for i, sub := range subs {
			cs[i] = chatChoice{FinishReason: finishReason(sub.req), Index: i,
				Message: assistantMessage{Content: Filler(0, outs[i]), Role: "assistant"}}
		}
		return completion[chatChoice]{Choices: cs, Created: created, ID: id, Model: req.Model, Object: "chat.completion", Usage: u}
	}
	cs := make([]textChoice, len(subs))
	for i, sub := range subs {
		reason := finishReason(sub.req)
		cs[i] = textChoice{FinishReason: &reason, Index: i, Text: Filler(0, outs[i])}
	}
	return completion[textChoice]{Choices: cs, Created: created, ID: id, Model: req.Model, Object: "text_completion", Usage: u}
}

// fillerWords are the emulated instances' generated text: the engine emulates an LLM's timing,
// not its words, so token i of every answer is fillerWords[i mod len] (deterministic).
var fillerWords = []string{" lorem", " ipsum", " dolor", " sit", " amet", ",", " consectetur", " adipiscing", " elit", "."}

// Filler is the generated text of tokens [from, to).
func Filler(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		b.WriteString(fillerWords[i%len(fillerWords)])
	}
	return b.String()
}
