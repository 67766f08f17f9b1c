package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/sim"
)

const demoPlanPath = "../../../../testdata/serve/demo-plan.json"

func TestServeBadInput(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(broken, []byte(`{"apiVersion": "plan/v1", "kind": "Plan"`), 0o644); err != nil {
		t.Fatal(err)
	}
	// An endpoint that does not answer: a port nobody listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	eps := filepath.Join(dir, "endpoints.yaml")
	if err := os.WriteFile(eps, []byte("apiVersion: plan/v1\nkind: Endpoints\nstages:\n  - stage: \"*\"\n    urls: ["+dead+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badEps := filepath.Join(dir, "bad-endpoints.yaml")
	if err := os.WriteFile(badEps, []byte("apiVersion: plan/v1\nkind: Endpoints\nstages:\n  - stage: \"*\"\n    urls: [ftp://x]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"broken plan", []string{"serve", broken}, "broken.json"},
		{"missing plan", []string{"serve", filepath.Join(dir, "nope.json")}, "nope.json"},
		{"endpoint down", []string{"serve", demoPlanPath, "--workers", "remote", "--endpoints", eps, "--addr", "127.0.0.1:0"}, dead},
		{"bad endpoints file", []string{"serve", demoPlanPath, "--workers", "remote", "--endpoints", badEps}, "stages[0].urls[0]: ftp://x"},
		{"remote without endpoints", []string{"serve", demoPlanPath, "--workers", "remote"}, "--endpoints"},
		{"unknown workers", []string{"serve", demoPlanPath, "--workers", "gpu"}, "must be emulated, onnx or remote"},
		{"bad max-body", []string{"serve", demoPlanPath, "--max-body", "lots"}, "--max-body"},
		{"bad input shape", []string{"serve", demoPlanPath, "--input-shape", "3,x"}, "--input-shape"},
		// A --queue-url that is not a NATS URL, a negative result TTL.
		{"queue url not NATS", []string{"serve", demoPlanPath, "--queue-url", "http://127.0.0.1:4222"}, `--queue-url "http://127.0.0.1:4222": not a NATS URL`},
		{"queue url no scheme", []string{"serve", demoPlanPath, "--queue-url", "127.0.0.1:4222"}, "--queue-url"},
		{"queue result ttl", []string{"serve", demoPlanPath, "--queue-result-ttl", "-1h"}, "--queue-result-ttl"},
		{"load not http", []string{"load", "ws://10.1.2.3:8080"}, "must be an http:// or https:// URL"},
		{"load rate and load", []string{"load", "http://127.0.0.1:1", "--rate", "5", "--load", "0.5"}, "exclusive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := rootRun(t, c.args...)
			if code != ExitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 mentioning %q", code, stderr, c.want)
			}
		})
	}
}

// TestServeAndLoad runs `plan serve` and `plan load` in-process against each other, then
// stops the server as SIGTERM would.
func TestServeAndLoad(t *testing.T) {
	ready := make(chan struct{})
	var srv *serve.Server
	var addr string
	serveHook = func(s *serve.Server, a string) {
		srv, addr = s, a
		close(ready)
	}
	defer func() { serveHook = nil }()
	// A copy of the plan that the test rewrites before SIGHUP.
	planData, err := os.ReadFile(demoPlanPath)
	if err != nil {
		t.Fatal(err)
	}
	planPath := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(planPath, planData, 0o644); err != nil {
		t.Fatal(err)
	}
	var sout bytes.Buffer
	serr := &syncBuffer{}
	done := make(chan int)
	go func() {
		done <- Run([]string{"serve", planPath, "--addr", "127.0.0.1:0", "--jitter", "0.02"}, Streams{In: strings.NewReader(""), Out: &sout, Err: serr})
	}()
	select {
	case <-ready:
	case code := <-done:
		t.Fatalf("serve exited %d: %s", code, serr.String())
	}
	code, out, stderr := rootRun(t, "load", "http://"+addr, "--rate", "200", "--duration", "300ms", "--seed", "3", "-O", "json", "-q")
	if code != ExitOK {
		t.Fatalf("load: exit %d: %s", code, stderr)
	}
	var rep sim.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("load report: %v\n%s", err, out)
	}
	p := rep.Points[0].Total
	if rep.Kind != sim.ReportKind || p.Requests == 0 || p.Completed+p.Late+p.Dropped+p.Cancelled != p.Requests || rep.Plan != "ppipe" {
		t.Errorf("report %+v", rep)
	}
	code, out, _ = rootRun(t, "load", "http://"+addr, "--load", "0.05", "--max-requests", "5", "-q")
	if code != ExitOK || !strings.Contains(out, "attainment") || !strings.Contains(out, "0.05") {
		t.Errorf("table report: exit %d\n%s", code, out)
	}
	// SIGHUP re-reads the plan file and migrates to it.
	old := srv.ActiveDigest()
	renamed := strings.Replace(string(planData), `"name": "ppipe"`, `"name": "ppipe-v2"`, 1)
	if err := os.WriteFile(planPath, []byte(renamed), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// Wait for the reload's log line, not only the new digest: the plan switches before
	// Reload returns and logs, and a shutdown in between would race with that line.
	deadline := time.Now().Add(10 * time.Second)
	for (srv.ActiveDigest() == old || !strings.Contains(serr.String(), "SIGHUP: plan reloaded")) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if srv.ActiveDigest() == old {
		t.Errorf("SIGHUP did not reload the plan: %s", serr.String())
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != ExitOK {
		t.Errorf("serve exited %d: %s", code, serr.String())
	}
	if log := serr.String(); !strings.Contains(log, "serving") || !strings.Contains(log, "SIGHUP: plan reloaded") {
		t.Errorf("serve log: %s", log)
	}
}

// syncBuffer is a bytes.Buffer safe for the server's concurrent log writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestCheckLoopback: load's --url must be a loopback base URL.
func TestCheckLoopback(t *testing.T) {
	urls := []struct {
		in, want string
		ok       bool
	}{
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080", true},
		{"http://localhost:8080/", "http://localhost:8080", true},
		{"http://[::1]:9000", "http://[::1]:9000", true},
		{"http://127.3.4.5:1", "http://127.3.4.5:1", true},
		{"http://10.0.0.1:8080", "", false},
		{"http://example.com", "", false},
		{"http://127.0.0.1:8080/v2/models/demo/infer", "", false},
		{"ftp://127.0.0.1", "", false},
		{"127.0.0.1:8080", "", false},
	}
	for _, c := range urls {
		got, err := checkLoopback(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("checkLoopback(%q) = %q, %v", c.in, got, err)
		}
	}
}

func TestServeONNXBadModel(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.onnx")
	code, _, stderr := rootRun(t, "serve", demoPlanPath, "--workers", "onnx", "--model", missing, "--addr", "127.0.0.1:0")
	// Without ONNX Runtime (or cgo) the error names the library instead of the model.
	if code != ExitUsage || (!strings.Contains(stderr, "missing.onnx") && !strings.Contains(stderr, "ONNX Runtime") && !strings.Contains(stderr, "cgo")) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = rootRun(t, "serve", demoPlanPath, "--workers", "onnx")
	if code != ExitUsage || !strings.Contains(stderr, "--model") {
		t.Errorf("no --model: exit %d, stderr %q", code, stderr)
	}
}
