package openai

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/qlmsec"
	"github.com/plan-dev/plan/serve"
)

// admitted is what one client of TestAdmissionUnderOverload saw.
type admitted struct {
	status     int
	retryAfter string
	errType    string
	errCode    string
	latency    time.Duration // to [DONE], for a 200
}

// TestAdmissionUnderOverload: 150 streamed chat requests (500 prompt tokens, 60 output
// tokens) at 50/s offered to the bundled plan's one mistral instance (its step times
// doubled), whose chat class gets a 5 s SLO here: several times what the instance serves in
// time. Every request is answered
// 200 or 429; each 429 is an OpenAI error (rate_limit_error, code would_finish_late) with an
// integer Retry-After ≥ 1; at least 95% of the admitted requests finish, as their client
// measures, within the SLO; and some are refused (the load must overload). Wall-clock: it
// skips under the race detector (raceEnabled), like the other timing tests.
func TestAdmissionUnderOverload(t *testing.T) {
	if raceEnabled {
		t.Skip("wall-clock admission: the race detector slows the HTTP path past the SLO")
	}
	if testing.Short() {
		t.Skip("about 8 s of load")
	}
	const (
		slo  = 5 * time.Second
		n    = 150
		rate = 50.0
	)
	_, url := qlmServerPlan(t, memFrontend(), serve.Options{Policy: dataplane.Config{Params: map[string]string{"admit": "predict"}}}, func(p *formats.Plan) {
		// Steps twice the plan's (22 ms to 0.76 s): a loaded machine's scheduling delays
		// are then small beside them.
		for _, l := range p.Provenance.Embedded.Profiles[0].LLMs {
			for _, c := range [][]formats.PWLPoint{l.Iteration.Prefill, l.Iteration.Decode} {
				for i := range c {
					c[i].Us *= 2
				}
			}
		}
		for i := range qlmsec.ClassesOf(p.Provenance.Embedded.Workload) {
			if c := &qlmsec.ClassesOf(p.Provenance.Embedded.Workload)[i]; c.Name == "mistral-chat" {
				c.SLO = formats.Duration(slo)
			}
		}
	})
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: n, MaxIdleConnsPerHost: n}}
	body := `{"model":"mistral-chat","messages":[{"role":"user","content":"x"}],"prompt_tokens":500,"max_tokens":60,"stream":true}`
	res := make([]admitted, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		// Open loop at a constant rate: each request leaves at its own time.
		time.Sleep(time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = chatOnce(t, client, url, body)
		}()
	}
	wg.Wait()
	var ok, onTime, refused int
	retries := map[string]int{}
	for i, r := range res {
		switch r.status {
		case 200:
			ok++
			if r.latency <= slo {
				onTime++
			}
		case 429:
			refused++
			retries[r.retryAfter]++
			if s, err := strconv.Atoi(r.retryAfter); err != nil || s < 1 {
				t.Errorf("request %d: 429 with Retry-After %q, want whole seconds >= 1", i, r.retryAfter)
			}
			if r.errType != "rate_limit_error" || r.errCode != "would_finish_late" {
				t.Errorf("request %d: 429 error type %q code %q, want rate_limit_error would_finish_late", i, r.errType, r.errCode)
			}
		default:
			t.Errorf("request %d: status %d, want 200 or 429", i, r.status)
		}
	}
	t.Logf("%d requests at %.0f/s: %d admitted (%d within %v), %d refused with 429, Retry-After (s: count) %v, %v in all",
		n, rate, ok, onTime, slo, refused, retries, time.Since(start).Round(time.Millisecond))
	var lat []time.Duration
	for _, r := range res {
		if r.status == 200 {
			lat = append(lat, r.latency.Round(time.Millisecond))
		}
	}
	t.Logf("latencies %v", lat)
	// The server's own count, by each request's true deadline (its arrival at the handler).
	srvOK := metricValue(t, url, `plan_responses_total{model="mistral-chat",outcome="completed"}`)
	srvLate := metricValue(t, url, `plan_responses_total{model="mistral-chat",outcome="late"}`)
	t.Logf("server: %v completed on time, %v late", srvOK, srvLate)
	// The engine plans in its own time; its driver keeps that time only while the machine
	// gives it the CPU. A timer that fired more than 50 ms late (a starved, loaded machine:
	// other jobs on its cores) delays every answer due then past what any prediction made
	// earlier can know, so attainment is judged only when the driver kept time.
	timers := metricValue(t, url, "plan_timer_lateness_seconds_count")
	timely := metricValue(t, url, `plan_timer_lateness_seconds_bucket{le="0.05"}`)
	t.Logf("driver timers: %v, %v of them within 50 ms", timers, timely)
	if refused == 0 {
		t.Error("nothing refused: the load does not overload the instance")
	}
	if timers > timely {
		t.Skipf("%v of %v driver timers fired more than 50 ms late: the machine starved the server; attainment (%d of %d admitted within the SLO) not judged", timers-timely, timers, onTime, ok)
	}
	if ok == 0 || float64(onTime) < 0.95*float64(ok) {
		t.Errorf("%d of %d admitted within the SLO, want >= 95%%", onTime, ok)
	}
}

// chatOnce posts one streamed chat completion and reads it to its end.
func chatOnce(t *testing.T, client *http.Client, url, body string) admitted {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return admitted{}
	}
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Error(err)
		return admitted{}
	}
	defer resp.Body.Close()
	a := admitted{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
	if resp.StatusCode != 200 {
		var e struct {
			Error struct {
				Type string
				Code string
			}
		}
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &e); err != nil {
			t.Errorf("status %d: body %q: %v", resp.StatusCode, b, err)
		}
		a.errType, a.errCode = e.Error.Type, e.Error.Code
		return a
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == "data: [DONE]" {
			a.latency = time.Since(t0)
			return a
		}
	}
	t.Errorf("a 200 stream ended without [DONE]: %v", sc.Err())
	return a
}
