package serve_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats/jsonx"
	"github.com/plan-dev/plan/serve/kserve"
	"github.com/plan-dev/plan/serve/openai"
)

// allocated returns the bytes allocated while f runs.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestHostileBodies: the bodies of the attack run, through the decoders the HTTP handlers
// use — refused, naming the key, for a few bytes per byte of body.
func TestHostileBodies(t *testing.T) {
	spec := kserve.TensorSpec{Name: "input", Datatype: "FP32", Shape: []int64{-1, -1}}
	tensor := `{"name":"input","shape":[1,1],"datatype":"FP32","data":[1]}`
	nested := strings.Repeat("[", 120_000) + strings.Repeat("]", 120_000) // 240 KB
	for _, c := range []struct {
		name, body string
		decode     func([]byte) error
		want       string
	}{
		{"infer: 240 KB of nesting", `{"id":"a","inputs":[{"name":"input","shape":[1,1],"datatype":"FP32","data":` + nested + `}]}`, infer(spec),
			"nested deeper than 64 levels"},
		{"infer: duplicate key", `{"id":"a","id":"b","inputs":[` + tensor + `]}`, infer(spec), `duplicate key "id"`},
		{"infer: case variant", `{"id":"a","ID":"b","inputs":[` + tensor + `]}`, infer(spec), `key "ID" at byte 10 differs only in case from field "id"`},
		{"infer: null shape entry", `{"inputs":[{"name":"input","shape":[1,null],"datatype":"FP32","data":[1]}]}`, infer(spec), "inputs[0].shape[1]: null"},
		{"openai: MAX_TOKENS beside max_tokens", `{"model":"m","prompt":"x","max_tokens":5,"MAX_TOKENS":100000}`, chat(false),
			`key "MAX_TOKENS" at byte 41 differs only in case from field "max_tokens"`},
		{"openai: MAX_TOKENS alone", `{"model":"m","prompt":"x","MAX_TOKENS":100000}`, chat(false), `key "MAX_TOKENS"`},
		{"openai: duplicate max_tokens", `{"model":"m","prompt":"x","max_tokens":5,"max_tokens":100000}`, chat(false), `duplicate key "max_tokens"`},
		{"openai: 240 KB of nesting", `{"model":"m","messages":` + nested + `}`, chat(true), "nested deeper than 64 levels"},
		{"infer: 200 KB unknown key cut", `{"` + strings.Repeat("k", 200_000) + `":1,"inputs":[` + tensor + `]}`, infer(spec),
			`unknown field "` + strings.Repeat("k", 200) + `"… (200000 bytes)`},
		{"infer: 200 KB number literal cut", `{"inputs":[{"name":"input","shape":[1,` + strings.Repeat("1", 200_000) + `],"datatype":"FP32","data":[1]}]}`, infer(spec),
			`… (200007 bytes)`},
		// Fields vLLM accepts and ignores stay open (a sampling field and an unknown one);
		// ones that would change the answer, such as logit_bias, are refused by name.
		{"openai: unknown fields stay open", `{"model":"m","prompt":"x","user":"u","temperature":0.7,"x_client_tag":{"a":1}}`, chat(false), ""},
		{"openai: logit_bias refused", `{"model":"m","prompt":"x","logit_bias":{"1":2}}`, chat(false), "logit_bias"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			n := allocated(func() { err = c.decode([]byte(c.body)) })
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %.800v\nwant %q", err, c.want)
			}
			if len(err.Error()) > 1000 {
				t.Errorf("the error echoes %d bytes", len(err.Error()))
			}
			// The echo cases are refused by encoding/json after the gate passed them (an
			// unknown field, a number out of range: its wording is kept), and its decoding
			// allocates what it reads.
			anyMemory := strings.HasSuffix(c.name, " cut")
			if limit := uint64(jsonx.MemoryFactor*len(c.body) + 64<<10); n > limit && !anyMemory {
				t.Errorf("%d bytes of body: %d bytes allocated, over %d", len(c.body), n, limit)
			}
		})
	}
}

func infer(spec kserve.TensorSpec) func([]byte) error {
	return func(b []byte) error {
		_, err := kserve.DecodeInferRequest(b, spec)
		return err
	}
}

func chat(isChat bool) func([]byte) error {
	return func(b []byte) error {
		if _, e := openai.Decode(b, isChat); e != nil {
			return errors.New(e.Message)
		}
		return nil
	}
}
