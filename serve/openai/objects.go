package openai

// The JSON objects the API answers (ecosystem digest §5: completions, chat completions, their
// stream chunks, errors, lists). Each struct's fields are in the order of their keys' names:
// the answers were maps once, which encoding/json writes with sorted keys, and the bytes on
// the wire stay as they were (objects_test.go compares them).

// completion is a whole answer, object "text_completion" or "chat.completion": C is
// textChoice or chatChoice.
type completion[C textChoice | chatChoice] struct {
	Choices []C    `json:"choices"`
	Created int64  `json:"created"`
	ID      string `json:"id"`
	Model   string `json:"model"`
	Object  string `json:"object"`
	Usage   *Usage `json:"usage"`
}

// chunk is one event of a stream, object "text_completion" or "chat.completion.chunk": C is
// textChoice or chatDelta. Usage is there in every chunk with continuous usage
// (stream_options.continuous_usage_stats), and in the usage chunk, whose Choices are empty.
type chunk[C textChoice | chatDelta] struct {
	Choices []C    `json:"choices"`
	Created int64  `json:"created"`
	ID      string `json:"id"`
	Model   string `json:"model"`
	Object  string `json:"object"`
	Usage   *Usage `json:"usage,omitempty"`
}

// textChoice is a completion's choice, whole or one chunk of it. FinishReason is null in a
// stream's chunks before the choice's last; Logprobs is always null: the emulated engine has
// none to give (noLogprobs).
type textChoice struct {
	FinishReason *string   `json:"finish_reason"`
	Index        int       `json:"index"`
	Logprobs     *struct{} `json:"logprobs"`
	Text         string    `json:"text"`
}

// chatChoice is a whole chat answer's choice.
type chatChoice struct {
	FinishReason string           `json:"finish_reason"`
	Index        int              `json:"index"`
	Message      assistantMessage `json:"message"`
}

// assistantMessage is a chat answer's message: Message with its keys in the answer's order.
type assistantMessage struct {
	Content string `json:"content"`
	Role    string `json:"role"`
}

// chatDelta is a chat stream chunk's choice; FinishReason is null before the choice's last.
type chatDelta struct {
	Delta        delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
	Index        int     `json:"index"`
}

// delta is what a chat chunk adds: the role in the choice's first chunk only, the content in
// every chunk but a first that has no text.
type delta struct {
	Content *string `json:"content,omitempty"`
	Role    string  `json:"role,omitempty"`
}

// errorBody is an error answer, and a stream's error event: {"error": {...}}.
type errorBody struct {
	Error *Error `json:"error"`
}

// list is a list answer, object "list": GET /v1/models, GET /v1/engines.
type list[T Model | EngineState] struct {
	Data   []T    `json:"data"`
	Object string `json:"object"`
}

// version is GET /version's answer (vLLM's).
type version struct {
	Version string `json:"version"`
}
