package openai

import (
	"fmt"
	"sync"

	"github.com/plan-dev/plan/dataplane"
	dq "github.com/plan-dev/plan/dataplane/qlm"
)

// limitCache holds the per-class limits of the deployment being served (dq.Limits decodes
// the plan's profiles: once per deployment, not per request).
type limitCache struct {
	mu   sync.Mutex
	dep  *dataplane.Deployment
	byID map[string]dq.Limit
}

// limit returns the limits of the class a client names as its model (false when the plan has
// none to give: not a QLM plan, or a set-up it cannot decode; the engine judges then).
func (f *Frontend) limit(model string) (dq.Limit, bool) {
	d := f.s.Deployment()
	if d == nil {
		return dq.Limit{}, false
	}
	c := &f.limits
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dep != d {
		c.dep, c.byID = d, map[string]dq.Limit{}
		if ls, err := dq.Limits(d); err == nil {
			for i, a := range d.Apps {
				c.byID[a.Name] = ls[i]
			}
		}
	}
	l, ok := c.byID[model]
	return l, ok
}

// checkLimits refuses at intake a request that can never be served: a
// prompt or output longer than its class's maximum (the plan's token profiles, like vLLM's
// max_model_len, LLM engine digest §4), or prompt + output beyond the largest KV cache of an
// instance able to serve its model, which QLM would drop at arrival (dq.DropTooLarge). The 400
// names the field, its value and the limit. Counting the tokens is linear in the body, which
// MaxBody bounds: a chat of 100,000 one-word messages is refused here, never queued.
func (f *Frontend) checkLimits(req *Request) *Error {
	l, ok := f.limit(req.Model)
	if !ok {
		return nil
	}
	field := "prompt"
	switch {
	case req.explicitPrompt:
		field = "prompt_tokens"
	case req.Chat:
		field = "messages"
	}
	if l.MaxPrompt > 0 && req.PromptTokens > l.MaxPrompt {
		return badRequest(field, "%s: %d prompt tokens: more than model %s's maximum of %d", field, req.PromptTokens, req.Model, l.MaxPrompt)
	}
	if l.MaxOutput > 0 && req.MaxTokens > l.MaxOutput {
		return badRequest("max_tokens", "max_tokens: %d: more than model %s's maximum of %d output tokens", req.MaxTokens, req.Model, l.MaxOutput)
	}
	out := max(req.MaxTokens, 1)
	if l.MaxModelLen > 0 && req.PromptTokens+out > l.MaxModelLen {
		// vLLM's 400 for a context over max_model_len (LLM engine digest §4).
		f := "max_tokens"
		if req.PromptTokens >= l.MaxModelLen {
			f = field
		}
		return badRequest(f, "%s: %d prompt tokens + %d max_tokens: more than model %s's max_model_len of %d tokens", f, req.PromptTokens, out, req.Model, l.MaxModelLen)
	}
	if l.PromptBudget > 0 && req.PromptTokens > l.PromptBudget {
		return badRequest(field, "%s: %d prompt tokens: more than model %s's max_num_batched_tokens of %d (chunked prefill off)", field, req.PromptTokens, req.Model, l.PromptBudget)
	}
	if req.PromptTokens+out > l.KVTokens {
		what := fmt.Sprintf("%d prompt tokens + %d output tokens", req.PromptTokens, out)
		return badRequest(field, "%s: %s: more than the %d tokens of KV cache the largest instance serving model %s holds", field, what, l.KVTokens, req.Model)
	}
	return nil
}

// Queue ids are "q-" + the server's start time in base 36 + "-" + a decimal counter
// (handleEnqueue). Only such ids reach the queue's store: an id of another shape is unknown
// (404) without a lookup, and one longer than maxQueueIDLen is refused (414), so no request
// can put an over-long subject on the NATS connection (a 5,000-byte id
// exceeded NATS's maximum control line and the server closed the connection).
const maxQueueIDLen = 64

// validQueueID reports whether id has the shape handleEnqueue gives ids.
func validQueueID(id string) bool {
	if len(id) > maxQueueIDLen || len(id) < 5 || id[:2] != "q-" {
		return false
	}
	dash := -1
	for i := 2; i < len(id); i++ {
		c := id[i]
		switch {
		case c == '-':
			if dash >= 0 || i == 2 {
				return false
			}
			dash = i
		case c >= '0' && c <= '9':
		case c >= 'a' && c <= 'z' && dash < 0:
		default:
			return false
		}
	}
	return dash > 0 && dash < len(id)-1
}
