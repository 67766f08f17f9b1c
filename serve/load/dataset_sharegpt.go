package load

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ShareGPT length limits of vllm bench serve's filter (spec §4): a conversation is dropped
// when its prompt or its completion is shorter than 4 tokens, its prompt longer than 1024,
// or both together longer than 2048 (with --sharegpt-output-len the completion's minimum is
// not checked). Here the token counts are EstimateTokens's.
const (
	shareGPTMinTokens = 4
	shareGPTMaxPrompt = 1024
	shareGPTMaxTotal  = 2048
)

// ReadShareGPT reads a ShareGPT JSON file (ShareGPT_V3_unfiltered_cleaned_split.json's
// format: [{"id", "conversations": [{"from": "human"|"gpt", "value": text}, …]}, …]) as
// vllm bench serve does (spec §4): conversations with fewer than two turns are skipped; the
// prompt is the first turn's text (the human's in ShareGPT), the output length the second
// turn's (the model's answer) token count, or outputLen when > 0 (--sharegpt-output-len);
// then vLLM's length filter. Errors name the file, the line and the field.
func ReadShareGPT(name string, data []byte, outputLen int) (*Dataset, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %v", name, lineOf(data, dec.InputOffset()), jsonErr(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, fmt.Errorf("%s:%d: want a JSON array of conversations ([{\"id\", \"conversations\": [...]}, ...]), got %v", name, lineOf(data, dec.InputOffset()), tok)
	}
	d := &Dataset{Name: DatasetShareGPT, Path: name}
	type turn struct {
		From  string  `json:"from"`
		Value *string `json:"value"`
	}
	var seen, short int
	for i := 0; dec.More(); i++ {
		start := dec.InputOffset()
		var c struct {
			Conversations *[]turn `json:"conversations"`
		}
		if err := dec.Decode(&c); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return nil, fmt.Errorf("%s:%d: [%d].%s: want %s, got JSON %s", name, lineOf(data, te.Offset), i, te.Field, te.Type, te.Value)
			}
			return nil, fmt.Errorf("%s:%d: [%d]: %v", name, lineOf(data, dec.InputOffset()), i, jsonErr(err))
		}
		if c.Conversations == nil {
			return nil, fmt.Errorf("%s:%d: [%d].conversations: missing (a ShareGPT entry is {\"id\", \"conversations\": [{\"from\", \"value\"}, ...]})", name, entryLine(data, start), i)
		}
		seen++
		conv := *c.Conversations
		for j, t := range conv {
			if t.Value == nil {
				return nil, fmt.Errorf("%s:%d: [%d].conversations[%d].value: missing", name, entryLine(data, start), i, j)
			}
		}
		if len(conv) < 2 {
			continue
		}
		prompt := *conv[0].Value
		in, out := EstimateTokens(prompt), EstimateTokens(*conv[1].Value)
		if outputLen > 0 {
			out = outputLen
		}
		if in < shareGPTMinTokens || (outputLen <= 0 && out < shareGPTMinTokens) || in > shareGPTMaxPrompt || in+out > shareGPTMaxTotal {
			short++
			continue
		}
		d.Entries = append(d.Entries, DatasetEntry{Prompt: prompt, InputTokens: in, OutputTokens: out})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", name, lineOf(data, dec.InputOffset()), jsonErr(err))
	}
	if len(d.Entries) == 0 {
		return nil, fmt.Errorf("%s: none of its %d conversations passes vllm bench's ShareGPT filter (two turns; prompt >= %d and <= %d tokens, answer >= %d, both <= %d; %d were outside the lengths)",
			name, seen, shareGPTMinTokens, shareGPTMaxPrompt, shareGPTMinTokens, shareGPTMaxTotal, short)
	}
	return d, nil
}

// entryLine is the line of the array element that starts after offset off (past
// whitespace and the comma between elements).
func entryLine(data []byte, off int64) int {
	for off < int64(len(data)) && bytes.IndexByte([]byte(" \t\r\n,"), data[off]) >= 0 {
		off++
	}
	return lineOf(data, off)
}

// jsonErr turns io.EOF (a file cut short) into a readable error.
func jsonErr(err error) error {
	if err != nil && err.Error() == "EOF" {
		return errors.New("unexpected end of file (the JSON is cut short)")
	}
	return err
}
