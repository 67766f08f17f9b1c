package openai

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/serve"
)

// streamed is what a client saw of one streamed completion: the time to its first token and
// the tokens each content chunk carried.
type streamed struct {
	ttft   time.Duration
	chunks []string
	at     []time.Duration // each content chunk's arrival, from just before the request left
}

// streamCompletion posts a streamed completion for maxTokens and reads it to [DONE], timing
// the first content chunk from just before the request left.
func streamCompletion(t *testing.T, url string, maxTokens int) streamed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body := fmt.Sprintf(`{"model":"mistral-chat","prompt":"x","prompt_tokens":100,"max_tokens":%d,"stream":true}`, maxTokens)
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("max_tokens %d: status %d", maxTokens, resp.StatusCode)
	}
	var s streamed
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || d == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Text         string
				FinishReason *string `json:"finish_reason"`
			}
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("%q: %v", d, err)
		}
		if len(c.Choices) == 0 || c.Choices[0].Text == "" {
			continue // the finish chunk
		}
		at := time.Since(t0)
		if len(s.chunks) == 0 {
			s.ttft = at
		}
		s.chunks = append(s.chunks, c.Choices[0].Text)
		s.at = append(s.at, at)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStreamTTFTIndependentOfMaxTokens: a streamed request's first token reaches the client
// when the engine's output step delivers it (LLM engine digest §2.5), whatever max_tokens
// is, and every token comes in a chunk of its own. The same prompt, alone on the server,
// asked for 1, 2, 3 and 256 tokens: the client's TTFT (the least of up to three tries,
// against the loaded machine's wake-up jitter) and the server's TTFT histogram agree within
// 1 ms, and the client gets one chunk per token. A decode step is about 5.5 ms here (the
// plan's Mistral curves halved, to keep 256 tokens near 1.5 s), so a token a step late fails.
func TestStreamTTFTIndependentOfMaxTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 1.5 s of tokens per try, up to three tries")
	}
	_, url := qlmServerPlan(t, memFrontend(), serve.Options{}, func(p *formats.Plan) {
		it := p.Provenance.Embedded.Profiles[0].LLMs[0].Iteration
		for _, c := range [][]formats.PWLPoint{it.Prefill, it.Decode} {
			for i := range c {
				c[i].Us /= 2
			}
		}
	})
	const (
		tries = 3
		tol   = time.Millisecond
	)
	sizes := []int{1, 2, 3, 256}
	client := map[int]time.Duration{}
	server := map[int]float64{} // seconds, the histogram's observation
	const sum, count = `vllm:time_to_first_token_seconds_sum{engine="0",model_name="mistral-chat"}`, `vllm:time_to_first_token_seconds_count{engine="0",model_name="mistral-chat"}`
	spread := func(m map[int]time.Duration) time.Duration {
		lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
		for _, v := range m {
			lo, hi = min(lo, v), max(hi, v)
		}
		return hi - lo
	}
	for try := 0; try < tries && (try == 0 || (!raceEnabled && spread(client) > tol)); try++ {
		for _, n := range sizes {
			before, seen := metricValue(t, url, sum), metricValue(t, url, count)
			s := streamCompletion(t, url, n)
			if len(s.chunks) != n {
				t.Fatalf("max_tokens %d: %d content chunks, want one per token", n, len(s.chunks))
			}
			for i, c := range s.chunks {
				if c != Filler(i, i+1) {
					t.Fatalf("max_tokens %d: chunk %d is %q, want the one token %q", n, i, c, Filler(i, i+1))
				}
			}
			if v, ok := client[n]; !ok || s.ttft < v {
				client[n] = s.ttft
			}
			// The answer is recorded on the driver loop: wait (bounded) for its observation.
			for i := 0; i < 100 && metricValue(t, url, count) == seen; i++ {
				time.Sleep(10 * time.Millisecond)
			}
			if got := metricValue(t, url, count); got != seen+1 {
				t.Fatalf("max_tokens %d: the TTFT histogram counted %v answers, want %v", n, got, seen+1)
			}
			server[n] = metricValue(t, url, sum) - before
		}
	}
	for _, n := range sizes[1:] {
		// Under the race detector both clocks measure the detector (the server's stamps come
		// from its wall-clock timers too: 13.2 against 11.3 ms seen in CI); the chunks are
		// still checked. CI checks the timings without it (make agreement).
		if d := client[n] - client[1]; !raceEnabled && (d < -tol || d > tol) {
			t.Errorf("client TTFT: max_tokens %d %v, max_tokens 1 %v (want within %v)", n, client[n], client[1], tol)
		}
		if d := time.Duration((server[n] - server[1]) * 1e9); !raceEnabled && (d < -tol || d > tol) {
			t.Errorf("server TTFT histogram: max_tokens %d %.6f s, max_tokens 1 %.6f s (want within %v)", n, server[n], server[1], tol)
		}
	}
	t.Logf("client TTFT %v, server %v", client, server)
}

// TestStreamOutputDelayTwo: with output_delay_steps 2 an idle engine ends two output-only
// steps after its last real one (dataplane/llm's outputstep.go), each delivering one more
// token: the client gets every token in a chunk of its own, and the server shows the one
// before last a decode step after the one before it, not together with the last at the
// completion.
//
// The step is timed on the server's clock (HopEvent.EndUs), where each timer counts at its
// own time however late its wakeup: on a loaded machine the client's reads, and the driver's
// wakeups, can come a step late and show two tokens together though the engine showed them
// a step apart.
func TestStreamOutputDelayTwo(t *testing.T) {
	if testing.Short() {
		t.Skip("streams a completion")
	}
	const delay = 2
	s, url := qlmServerPlan(t, memFrontend(), serve.Options{}, func(p *formats.Plan) {
		d := delay
		p.Provenance.Embedded.Profiles[0].LLMs[0].Engine = &formats.LLMEngine{OutputDelaySteps: &d}
	})
	const n = 4
	st := streamCompletion(t, url, n)
	if len(st.chunks) != n {
		t.Fatalf("%d content chunks %q, want one per token", len(st.chunks), st.chunks)
	}
	for i, c := range st.chunks {
		if c != Filler(i, i+1) {
			t.Fatalf("chunk %d is %q, want the one token %q", i, c, Filler(i, i+1))
		}
	}
	t.Logf("chunks at %v", st.at)

	// The same completion through Server.Submit: when the engine showed each token.
	shown := make([]int64, n+1) // shown[k]: server time (µs) at which k tokens were visible
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := s.Submit(ctx, serve.Request{Model: "mistral-chat", ID: "delay-two",
		Attrs: dataplane.Attrs{InTokens: 100, OutTokens: n},
		OnHop: func(h serve.HopEvent) {
			if h.HasTokens && h.Tokens >= 1 && h.Tokens <= n && shown[h.Tokens] == 0 {
				shown[h.Tokens] = h.EndUs
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != 200 {
		t.Fatalf("answer %d (%s), want 200", a.Status, a.Err)
	}
	// Each token but the last, which the completion delivers, is shown by a hop of its own (the
	// third by the first output-only step's timer), a decode step after the one before: about
	// 11 ms on the plan's Mistral curves. Held to the completion, the third would be shown by
	// no hop.
	for k := 1; k < n; k++ {
		if shown[k] == 0 {
			t.Fatalf("no hop showed %d tokens (tokens 1..%d shown at %v µs)", k, n, shown[1:])
		}
		if gap := shown[k] - shown[k-1]; k > 1 && gap < 4000 {
			t.Errorf("tokens %d and %d were shown %d µs apart (at %v µs), want about a decode step", k-1, k, gap, shown[1:])
		}
	}
}
