package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		{"load non-loopback", []string{"load", "http://10.1.2.3:8080"}, "only loopback"},
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
	var sout, serr bytes.Buffer
	done := make(chan int)
	go func() {
		done <- Run([]string{"serve", demoPlanPath, "--addr", "127.0.0.1:0", "--jitter", "0.02"}, Streams{In: strings.NewReader(""), Out: &sout, Err: &serr})
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
	if rep.Kind != sim.ReportKind || p.Requests == 0 || p.Completed+p.Late+p.Dropped != p.Requests || rep.Plan != "ppipe" {
		t.Errorf("report %+v", rep)
	}
	code, out, _ = rootRun(t, "load", "http://"+addr, "--load", "0.05", "--max-requests", "5", "-q")
	if code != ExitOK || !strings.Contains(out, "attainment") || !strings.Contains(out, "0.05") {
		t.Errorf("table report: exit %d\n%s", code, out)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != ExitOK {
		t.Errorf("serve exited %d: %s", code, serr.String())
	}
	if !strings.Contains(serr.String(), "serving") {
		t.Errorf("serve log: %s", serr.String())
	}
}
