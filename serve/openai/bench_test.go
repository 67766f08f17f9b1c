package openai

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/serve"
)

// BenchmarkDecode: the request decoder's cost per chat request.
func BenchmarkDecode(b *testing.B) {
	body := []byte(`{"model":"mistral-chat","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"` +
		strings.Repeat("Explain request groups and virtual queues. ", 20) + `"}],"max_tokens":64,"priority":1,"stream":true,"stream_options":{"include_usage":true}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, e := Decode(body, true); e != nil {
			b.Fatal(e)
		}
	}
}

// BenchmarkRoundTrip: a one-token completion through the OpenAI API over HTTP, against the
// same request through Server.Submit directly (the baseline: the engine and emulated instance
// alone). The difference is the front end's cost (decoding, HTTP, encoding).
func BenchmarkRoundTrip(b *testing.B) {
	for _, mode := range []string{"submit", "openai-http"} {
		b.Run(mode, func(b *testing.B) {
			s, url := qlmServerB(b)
			body := `{"model":"mistral-chat","prompt":"hi","max_tokens":1,"prompt_tokens":8}`
			for b.Loop() {
				if mode == "submit" {
					a, err := s.Submit(context.Background(), serve.Request{Model: "mistral-chat", Attrs: dataplane.Attrs{InTokens: 8, OutTokens: 1}})
					if err != nil || a.Status != 200 {
						b.Fatal(err, a)
					}
					continue
				}
				resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatal(resp.Status)
				}
			}
		})
	}
}
