package load

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/sim"
)

// TestSoak runs 3× overload, slow clients and plan reloads (a corrupt one, an invalid one and
// a valid one) together, briefly and on loopback only, and checks what must hold whatever the
// machine's speed: every request of the load gets exactly one answer (200 or 503; no
// transport error, no timeout), the slow clients get 408, the bad plans are refused and the
// good one is served, and the server's counters balance (every request accepted by the
// driver answered once, none left in flight).
func TestSoak(t *testing.T) {
	dur := 2 * time.Second
	if raceEnabled {
		dur = time.Second
	}
	plan := readPlan(t, "one-gpu.json")
	s, err := serve.New(serve.Options{Plan: plan, Deploy: testDeploy, Sections: testSections, Policies: testPolicies, BodyTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Shutdown(context.Background())
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1024, MaxIdleConnsPerHost: 1024}}
	defer client.CloseIdleConnections()

	var wg sync.WaitGroup
	stop := make(chan struct{})
	// Slow clients: a body trickled one byte every 50 ms, reconnecting after each 408.
	slow := make(chan string, 1024)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				slow <- trickle(ts.Listener.Addr().String())
			}
		}()
	}
	// Reloads: garbage, a plan that does not fit its cluster, then a valid new plan.
	reloads := make(chan string, 3)
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(dur / 4)
		bad := readPlan(t, "one-gpu.json")
		ppipesec.PlanOf(bad).Models[0].Pipelines[0].Partitions[0].Count = 1000
		badBody, _ := formats.Marshal(bad)
		good := readPlan(t, "one-gpu.json")
		good.Metadata.Name = "one-gpu-v2"
		goodBody, _ := formats.Marshal(good)
		for _, body := range [][]byte{[]byte(`{"apiVersion":"plan/v1","kind":"Plan",`), badBody, goodBody} {
			req, _ := http.NewRequest(http.MethodPut, ts.URL+"/v1/plan", bytes.NewReader(body))
			resp, err := client.Do(req)
			if err != nil {
				reloads <- err.Error()
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			reloads <- fmt.Sprint(resp.StatusCode)
			time.Sleep(dur / 4)
		}
	}()
	spec, _ := sim.ParseArrival("poisson")
	res, err := Run(context.Background(), Options{Deploy: testDeploy, URL: ts.URL, Sections: testSections, Load: 3, Duration: dur, Arrival: spec, Seed: 11,
		MaxConns: 1024, Timeout: 30 * time.Second})
	close(stop)
	wg.Wait()
	close(slow)
	close(reloads)
	if err != nil {
		t.Fatal(err)
	}
	oc := res.Outcomes
	t.Logf("%d requests: %d on time, %d late, drops %v, errors %v, %d cancelled, %d client errors",
		len(res.Samples), oc.Completed, oc.Late, oc.ServerDrops, oc.ServerErrors, oc.Cancelled, oc.ClientErrors)
	for _, x := range res.Samples {
		if x.Status != 200 && x.Status != 503 {
			t.Errorf("request at %v: status %d (%s at %s): not answered exactly once", x.Arrival, x.Status, x.Reason, x.Stage)
			break
		}
	}
	var got []string
	for r := range reloads {
		got = append(got, r)
	}
	if strings.Join(got, ",") != "400,400,200" {
		t.Errorf("reloads (corrupt, invalid, valid): %v, want 400,400,200", got)
	}
	// A slow client is answered once: 408 when its body is too slow, or 503 when the door
	// refused it before reading the body (overload).
	var n408, n503 int64
	for r := range slow {
		switch r {
		case "408":
			n408++
		case "503":
			n503++
		case "closed":
		default:
			t.Errorf("slow client: %s", r)
		}
	}
	if n408+n503 == 0 {
		t.Error("no slow client was answered")
	}
	t.Logf("slow clients: %d got 408, %d refused at the door", n408, n503)
	resp, err := client.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mbody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	checkBalance(t, string(mbody), int64(len(res.Samples))+n503)
}

// trickle sends an infer request whose body comes one byte every 50 ms and returns the
// status it got ("closed" if the server closed first, which a shutting-down test may do).
func trickle(addr string) string {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "closed"
	}
	defer c.Close()
	body := `{"inputs":[{"name":"input","shape":[1,2],"datatype":"FP32","data":[1,2]}]}`
	if _, err := fmt.Fprintf(c, "POST /v2/models/m1/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(body)); err != nil {
		return "closed"
	}
	done := make(chan string, 1)
	go func() {
		resp, err := http.ReadResponse(bufioReader(c), nil)
		if err != nil {
			done <- "closed"
			return
		}
		resp.Body.Close()
		done <- fmt.Sprint(resp.StatusCode)
	}()
	for i := 0; i < len(body); i++ {
		select {
		case r := <-done:
			return r
		case <-time.After(50 * time.Millisecond):
		}
		if _, err := c.Write([]byte{body[i]}); err != nil {
			break
		}
	}
	select {
	case r := <-done:
		return r
	case <-time.After(5 * time.Second):
		return "no answer"
	}
}

func bufioReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }
