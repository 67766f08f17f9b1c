package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/sim"
)

// TestServeAndLoadGRPC: `plan serve --grpc-addr` answers `plan load --grpc` (typed and raw
// tensors); bad gRPC addresses are bad input.
func TestServeAndLoadGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gaddr := ln.Addr().String()
	ln.Close()
	ready := make(chan struct{})
	var srv *serve.Server
	var addr string
	serveHook = func(s *serve.Server, a string) {
		srv, addr = s, a
		close(ready)
	}
	defer func() { serveHook = nil }()
	serr := &syncBuffer{}
	done := make(chan int)
	go func() {
		var sout bytes.Buffer
		done <- Run([]string{"serve", demoPlanPath, "--addr", "127.0.0.1:0", "--grpc-addr", gaddr}, Streams{In: strings.NewReader(""), Out: &sout, Err: serr})
	}()
	select {
	case <-ready:
	case code := <-done:
		t.Fatalf("serve exited %d: %s", code, serr.String())
	}
	for _, raw := range []string{"--grpc-raw=false", "--grpc-raw"} {
		code, out, stderr := rootRun(t, "load", "http://"+addr, "--grpc", gaddr, raw, "--rate", "200", "--duration", "300ms", "-O", "json", "-q")
		if code != ExitOK {
			t.Fatalf("load --grpc %s: exit %d: %s", raw, code, stderr)
		}
		var rep sim.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("load report: %v\n%s", err, out)
		}
		// Answered is what the gRPC path must do; on time is the machine's business (a
		// loaded machine answers late, and a late answer is still an answer).
		if p := rep.Points[0].Total; p.Requests == 0 || p.Completed+p.Late == 0 || p.Completed+p.Late+p.Dropped+p.Cancelled != p.Requests {
			t.Errorf("load --grpc %s: %+v", raw, p)
		}
	}
	// Any host may be loaded now; a value that is no HOST:PORT is refused before anything is
	// sent (tests send traffic to loopback only).
	if code, _, stderr := rootRun(t, "load", "http://"+addr, "--grpc", "no-port-here", "--max-requests", "1"); code != ExitUsage || !strings.Contains(stderr, "--grpc") {
		t.Errorf("--grpc without a port: exit %d: %s", code, stderr)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != ExitOK {
		t.Errorf("serve exited %d: %s", code, serr.String())
	}
	if code, _, stderr := rootRun(t, "serve", demoPlanPath, "--addr", "127.0.0.1:0", "--grpc-addr", "256.1.1.1:1"); code != ExitUsage || !strings.Contains(stderr, "--grpc-addr") {
		t.Errorf("bad --grpc-addr: exit %d: %s", code, stderr)
	}
}
