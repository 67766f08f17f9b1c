package openai

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestStreamDisconnectFreesSequence: a real HTTP client streams a
// long completion, reads a few chunks and goes away; the server cancels the request in the
// engine (Server.Submit on the request's context), QLM drops its sequence as cancelled at the
// end of the iteration in flight and frees its KV, and the instance stops generating for it:
// nothing is in flight, no worker is busy, and the drop's reason is cancelled — long before
// the 1,000 tokens the client asked for (~11 s of decode) could have been generated.
func TestStreamDisconnectFreesSequence(t *testing.T) {
	_, url := qlmServer(t, memFrontend())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/completions",
		strings.NewReader(`{"model":"mistral-chat","prompt":"a long answer","max_tokens":1000,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	rd := bufio.NewReader(resp.Body)
	for chunks := 0; chunks < 3; {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("after %d chunks: %v", chunks, err)
		}
		if strings.HasPrefix(line, "data: {") {
			chunks++
		}
	}
	cancel()
	resp.Body.Close()
	const cancelled = `plan_drops_total{model="mistral-chat",reason="cancelled",stage=`
	var inflight, busy, drops float64
	for range 100 { // 5 s at most: a tenth of what the generation takes
		inflight = metricValue(t, url, `plan_requests_in_flight{model="mistral-chat"}`)
		busy = metricSum(t, url, `plan_worker_busy{`)
		drops = metricSum(t, url, cancelled)
		if inflight == 0 && busy == 0 && drops == 1 {
			// It left while decoding (3 chunks seen), and the tokens it received count as
			// generated (vLLM counts an aborted request's output); its finish is an abort.
			if d := metricValue(t, url, `plan_drops_total{model="mistral-chat",reason="cancelled",stage="decode"}`); d != 1 {
				t.Errorf("cancelled at stage decode: %v, want 1", d)
			}
			if g := metricSum(t, url, `vllm:generation_tokens_total{engine="0",model_name="mistral-chat"}`); g < 3 {
				t.Errorf("vllm:generation_tokens_total %v, want at least the 3 tokens streamed", g)
			}
			if a := metricValue(t, url, `vllm:request_success_total{engine="0",finished_reason="abort",model_name="mistral-chat"}`); a != 1 {
				t.Errorf("vllm:request_success_total{finished_reason=abort} %v, want 1", a)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("after the client left: %v in flight, %v workers busy, %v dropped as cancelled; want 0, 0, 1", inflight, busy, drops)
}

// metricSum adds the samples of /metrics whose line starts with prefix.
func metricSum(t *testing.T, url, prefix string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		var v float64
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			if _, err := fmt.Sscan(line[i+1:], &v); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
		}
		sum += v
	}
	return sum
}

// TestRemoteClientLeavesCancelsCopy: with --llm-endpoints, a client that leaves
// before its remote engine answers takes the remote request with it (the engine aborts it)
// and the request's emulated copy too: QLM drops it as cancelled instead of modelling the
// instance as busy for the whole generation.
func TestRemoteClientLeavesCancelsCopy(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			v := &fakeVLLM{name: "mistral", fail: func(*fakeVLLM) failMode { return hang }}
			es := httptest.NewServer(v.handler())
			defer es.Close()
			fe := memFrontend()
			if err := fe.Endpoints.Set("llm-0=" + es.URL + ",llm-1=" + es.URL); err != nil {
				t.Fatal(err)
			}
			_, url := qlmServer(t, fe)
			ctx, cancel := context.WithCancel(context.Background())
			body := fmt.Sprintf(`{"model":"mistral-chat","prompt":"a long answer","max_tokens":1000,"stream":%v}`, stream)
			req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/completions", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			errc := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				errc <- err
			}()
			for v.received() == 0 { // the request reached its engine
				time.Sleep(5 * time.Millisecond)
			}
			cancel()
			<-errc
			var drops float64
			for range 100 {
				if drops = metricSum(t, url, `plan_drops_total{model="mistral-chat",reason="cancelled",stage=`); drops == 1 {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Errorf("%v requests dropped as cancelled after the client left, want 1", drops)
		})
	}
}

// TestCompletionDisconnectFreesSequence: the same for a whole (non-streaming)
// completion and chat completion: the client gives up while the request generates, and the
// request is dropped as cancelled with nothing left in flight or running.
func TestCompletionDisconnectFreesSequence(t *testing.T) {
	for _, tc := range []struct{ path, body string }{
		{"/v1/completions", `{"model":"mistral-chat","prompt":"a long answer","max_tokens":1000}`},
		{"/v1/chat/completions", `{"model":"mistral-chat","messages":[{"role":"user","content":"a long answer"}],"max_tokens":1000}`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			_, url := qlmServer(t, memFrontend())
			ctx, cancel := context.WithCancel(context.Background())
			req, err := http.NewRequestWithContext(ctx, "POST", url+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			errc := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				errc <- err
			}()
			const inflight = `plan_requests_in_flight{model="mistral-chat"}`
			for metricValue(t, url, inflight) != 1 || metricSum(t, url, `plan_worker_busy{`) == 0 { // generating
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
			if err := <-errc; err == nil {
				t.Fatal("the request ended before the client left")
			}
			var n, busy, drops float64
			for range 100 {
				n, busy = metricValue(t, url, inflight), metricSum(t, url, `plan_worker_busy{`)
				drops = metricSum(t, url, `plan_drops_total{model="mistral-chat",reason="cancelled",stage=`)
				if n == 0 && busy == 0 && drops == 1 {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Errorf("after the client left: %v in flight, %v workers busy, %v dropped as cancelled; want 0, 0, 1", n, busy, drops)
		})
	}
}
