package openai

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestStreamDisconnectFreesSequence (issue 29 "done when"): a real HTTP client streams a
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
