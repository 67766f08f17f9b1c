package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plan-dev/plan/serve/kserve"
)

// bodyFrontend is a front end whose route reads its body as the OpenAI and workflow
// handlers do (its own limit, 400 on any read error): the server's guard must still answer
// 408 and 413.
type bodyFrontend struct{}

func (bodyFrontend) Routes(_ *Server, mux *http.ServeMux) {
	mux.HandleFunc("DELETE /v1/echo", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, map[string]bool{"deleted": true}) })
	mux.HandleFunc("POST /v1/echo", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			writeJSON(w, 400, kserve.ErrorResponse{Error: "reading: " + err.Error()})
			return
		}
		writeJSON(w, 200, map[string]int{"bytes": len(b)})
	})
}

func (bodyFrontend) BodyLimits() map[string]int64 { return map[string]int64{"POST /v1/echo": 1 << 10} }

// AdminRoutes makes the echo route's DELETE an admin route (AdminRouter).
func (bodyFrontend) AdminRoutes() []string { return []string{"DELETE /v1/echo"} }

// bodyRoutes are the routes with a body besides infer.
var bodyRoutes = []string{"PUT /v1/plan", "POST /v1/workers/state", "POST /v1/echo"}

// TestSlowBodyEveryRoute: a body trickled slower than --body-timeout is cut off with 408 on
// every route, not only infer.
func TestSlowBodyEveryRoute(t *testing.T) {
	_, ts := testServer(t, Options{Plan: loadPlan(t, "demo-plan.json"), BodyTimeout: 300 * time.Millisecond, Frontends: []Frontend{bodyFrontend{}}})
	for _, route := range bodyRoutes {
		method, path, _ := strings.Cut(route, " ")
		c, br := rawConn(t, ts)
		fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", method, path)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, body := readResponse(t, br)
		if resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
			t.Errorf("%s with a slow body: %d (close %v) %s", route, resp.StatusCode, resp.Close, body)
		}
	}
}

// TestEarly413EveryRoute: a declared body over a route's limit is refused with 413 before
// any of it is read (PUT /v1/plan no longer reads 64 MiB first), and an undeclared one with
// 413 when the limit trips, whatever the handler answers.
func TestEarly413EveryRoute(t *testing.T) {
	_, ts := testServer(t, Options{Plan: loadPlan(t, "demo-plan.json"), Frontends: []Frontend{bodyFrontend{}}})
	for _, route := range bodyRoutes {
		method, path, _ := strings.Cut(route, " ")
		c, br := rawConn(t, ts)
		fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: 104857600\r\n\r\n", method, path)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, body := readResponse(t, br)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, "larger than") {
			t.Errorf("%s declaring 100 MB: %d %s", route, resp.StatusCode, body)
		}
	}
	// Chunked, over the front end's own limit (1 KiB): the handler says 400, the guard 413.
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/echo", io.MultiReader(strings.NewReader(strings.Repeat("x", 4<<10))))
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked 4 KiB to a 1 KiB route: %d", resp.StatusCode)
	}
}

// TestAdminEndpoints: the state-changing endpoints answer on a loopback data listener while
// there is no admin listener; once there is one, only there or with the token; never to a
// non-loopback listener without the token.
func TestAdminEndpoints(t *testing.T) {
	s, ts := testServer(t, Options{Plan: loadPlan(t, "demo-plan.json"), AdminToken: "s3cret", Frontends: []Frontend{bodyFrontend{}}})
	put := func(url, token string) int {
		req, _ := http.NewRequest(http.MethodPut, url+"/v1/plan", strings.NewReader("{}"))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// Admitted: the empty plan is then a 400 from the handler.
	if code := put(ts.URL, ""); code != 400 {
		t.Errorf("loopback data listener, no admin listener: %d", code)
	}
	// A data listener on a public address (a recorder with its local address).
	for _, tc := range []struct {
		token        string
		code         int
		method, path string
	}{{"", 401, "POST", "/v1/workers/state"}, {"wrong", 401, "POST", "/v1/workers/state"}, {"s3cret", 400, "POST", "/v1/workers/state"},
		{"", 401, "DELETE", "/v1/echo"}, {"s3cret", 200, "DELETE", "/v1/echo"}, {"", 200, "POST", "/v1/echo"}} {
		r := httptest.NewRequest(tc.method, tc.path, strings.NewReader("{}"))
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 80}))
		if tc.token != "" {
			r.Header.Set("Authorization", "Bearer "+tc.token)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != tc.code {
			t.Errorf("public listener, %s %s, token %q: %d %s", tc.method, tc.path, tc.token, w.Code, w.Body)
		}
	}
	// With an admin listener, the data listener refuses without the token.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeAdmin(ctx, ln) }()
	defer func() { cancel(); <-done }()
	admin := "http://" + ln.Addr().String()
	for _, tc := range []struct {
		url, token string
		code       int
	}{{ts.URL, "", 401}, {ts.URL, "s3cret", 400}, {admin, "", 400}} {
		if code := put(tc.url, tc.token); code != tc.code {
			t.Errorf("PUT %s token %q: %d, want %d", tc.url, tc.token, code, tc.code)
		}
	}
}

// TestConnectionCaps: slow-body connections from one client address fill its cap, and the
// server still answers health checks and normal requests from other addresses; at the total
// cap, the reserve still answers health checks. Loopback only: 127.0.0.x
// are distinct client addresses.
func TestConnectionCaps(t *testing.T) {
	for _, tc := range []struct {
		name               string
		total, perIP, slow int
		inferCode          int
	}{
		{"per address", 64, 8, 12, 200},
		// 8 slow connections fill the 12 less the reserve of 4.
		{"total", 12, 64, 8, 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(withSystems(Options{Plan: loadPlan(t, "demo-plan.json"), MaxConns: tc.total, MaxConnsPerIP: tc.perIP, BodyTimeout: time.Minute}))
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Serve(ctx, ln) }()
			defer func() { cancel(); <-done }()
			addr := ln.Addr().String()
			var held []net.Conn
			defer func() {
				for _, c := range held {
					c.Close()
				}
			}()
			for i := 0; i < tc.slow; i++ {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, c)
				fmt.Fprintf(c, "POST /v2/models/demo/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
			}
			// Every slow connection was accepted (or closed) before the probes.
			waitFor(t, "the slow connections", func() bool {
				lc := s.lastLimiter.Load()
				if lc == nil {
					return false
				}
				return lc.Open()+int(lc.Refused()+lc.Evicted()) >= tc.slow
			})
			other := func(ip string) *http.Client {
				d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
				return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
			}
			resp, err := other("127.0.0.2").Get("http://" + addr + "/v2/health/ready")
			if err != nil {
				t.Fatalf("health: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("health: %d", resp.StatusCode)
			}
			resp, err = other("127.0.0.3").Post("http://"+addr+"/v2/models/demo/infer", "application/json", strings.NewReader(inferBody(1)))
			if err != nil {
				t.Fatalf("infer: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.inferCode {
				t.Errorf("infer: %d, want %d", resp.StatusCode, tc.inferCode)
			}
			// The slow client's connections past its cap were closed at once: the newcomers,
			// or the slow connections that waited longest, whose slots newcomers took.
			lc := s.lastLimiter.Load()
			if got, want := lc.Refused()+lc.Evicted(), int64(max(tc.slow-tc.perIP, 0)); got != want {
				t.Errorf("connections refused or evicted: %d, want %d", got, want)
			}
		})
	}
}

// TestReserveFreedFromSlowBodies: slow clients whose connections land in the reserve, with a
// body small enough that net/http would drain it at their pace, are refused and their
// connections closed at once, so the reserve answers health checks (before,
// the refused connections were held until the clients sent their bodies).
func TestReserveFreedFromSlowBodies(t *testing.T) {
	const total, slow = 12, 16 // 8 normal slots, a reserve of 4, 4 over the cap
	s, err := New(withSystems(Options{Plan: loadPlan(t, "demo-plan.json"), MaxConns: total, MaxConnsPerIP: 64, BodyTimeout: time.Minute}))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	addr := ln.Addr().String()
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for i := 0; i < slow; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		fmt.Fprintf(c, "POST /v2/models/demo/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{")
		if i == total-5 {
			// The first 8 hold the normal slots (their bodies are being read).
			waitFor(t, "the normal slots", func() bool {
				lc := s.lastLimiter.Load()
				if lc == nil {
					return false
				}
				return lc.Open() >= total-4
			})
		}
	}
	// Every connection past the normal slots costs one connection its slot: refused in the
	// reserve (503, closed), or over the cap, where it takes the slot of the slow connection
	// waiting longest (closed) — so 8 of the 16 end, whichever they are.
	// (Read at once, each: a read past its deadline fails without looking at the socket.)
	deadline := time.Now().Add(2 * time.Second)
	var closed atomic.Int32
	var wg sync.WaitGroup
	for _, c := range held {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(deadline)
			// A reset counts as closed: the server closes with the client's body unread,
			// and the kernel answers that with RST rather than FIN. Only a read that times
			// out means the connection was still held.
			if _, err := io.ReadAll(c); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					return
				}
			}
			closed.Add(1)
		}()
	}
	wg.Wait()
	if n := int(closed.Load()); n != slow-(total-4) {
		t.Fatalf("%d of %d slow connections closed, want %d", n, slow, slow-(total-4))
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	resp, err := cl.Get("http://" + addr + "/v2/health/ready")
	if err != nil {
		t.Fatalf("health: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("health: %d", resp.StatusCode)
	}
}
