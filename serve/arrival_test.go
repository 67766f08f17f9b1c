package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/plan-dev/plan/serve/kserve"
)

// stampedServer is testServer with Serve's connection stamping (socket-read arrivals).
func stampedServer(t *testing.T, opts Options) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(withSystems(opts))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(s)
	ts.Listener = stampListener{Listener: ts.Listener, clk: s.clk}
	ts.Config.ConnContext = connContext
	ts.Start()
	t.Cleanup(func() {
		_ = s.Shutdown(context.Background())
		ts.Close()
	})
	return s, ts
}

// TestArrivalAtSocketRead: a request whose headers trickle in is as old as its first byte
// (its latency and the door's deadline count from there), and on a keep-alive connection the
// next request's age does not include the idle time between the two.
func TestArrivalAtSocketRead(t *testing.T) {
	p := loadPlan(t, "demo-plan.json")
	_, ts := stampedServer(t, Options{Plan: p})
	c, br := rawConn(t, ts)
	body := inferBody(1, 2)
	const trickle = 300 * time.Millisecond
	send := func(split bool) kserve.Timing {
		t.Helper()
		req := fmt.Sprintf("POST /v2/models/demo/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		if split {
			fmt.Fprint(c, req[:1])
			time.Sleep(trickle)
			req = req[1:]
		}
		fmt.Fprint(c, req)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, b := readResponse(t, br)
		var out struct {
			Timing kserve.Timing `json:"timing"`
		}
		if err := json.Unmarshal([]byte(b), &out); err != nil {
			t.Fatalf("%d %s: %v", resp.StatusCode, b, err)
		}
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		return out.Timing
	}
	// The server reads the first byte some scheduling delay after it was written (ms under
	// -race on a loaded machine), so the stamp may trail the trickle's start by that much;
	// a stamp taken at the body's end would put both figures near zero instead.
	const slack = 50 * time.Millisecond
	if tm := send(true); tm.LatencyUs < (trickle-slack).Microseconds() || tm.IntakeUs < (trickle-slack).Microseconds() {
		t.Errorf("trickled request: latency %d µs, intake %d µs; its first byte came %d µs before the rest", tm.LatencyUs, tm.IntakeUs, trickle.Microseconds())
	}
	const idle = time.Second
	time.Sleep(idle)
	if tm := send(false); tm.IntakeUs >= idle.Microseconds() {
		t.Errorf("second request on the connection: intake %d µs includes the %s the connection sat idle", tm.IntakeUs, idle)
	}
}
