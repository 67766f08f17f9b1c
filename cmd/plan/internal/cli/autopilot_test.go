package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	runap "github.com/plan-dev/plan/internal/run/autopilot"
	"github.com/plan-dev/plan/serve"
	serveap "github.com/plan-dev/plan/serve/autopilot"
	"github.com/plan-dev/plan/sim"
)

// The reports `plan simulate --autopilot` writes (internal/run/autopilot), as the tests
// here decode them.
type (
	autopilotSimReport      = runap.SimReport
	autopilotReportDoc      = runap.ReportDoc
	autopilotDecisionReport = runap.DecisionReport
)

// TestBadInputAutopilot: the autopilot's flags are checked before anything runs: exit 2
// naming the flag.
func TestBadInputAutopilot(t *testing.T) {
	base := []string{"simulate", "testdata/serve/demo-plan.json", "--trace", "testdata/autopilot/day.json"}
	with := func(extra ...string) []string { return append(append([]string{}, base...), extra...) }
	runBadInput(t, []badInputCase{
		{name: "period longer than the history", args: with("--autopilot", "--autopilot-period", "90", "--autopilot-history", "60"), code: ExitUsage,
			want: []string{"--autopilot-period 90: the forecaster's period is longer than the window history (--autopilot-history 60 windows)"}},
		{name: "period of one window", args: with("--autopilot", "--autopilot-period", "1"), code: ExitUsage, want: []string{"--autopilot-period 1"}},
		{name: "cost objective on a throughput plan", args: with("--autopilot", "--autopilot-objective", "cost"), code: ExitUsage,
			want: []string{"--autopilot-objective cost conflicts with the plan's objective throughput"}},
		{name: "throughput objective on a cost plan", args: []string{"simulate", "testdata/autopilot/cost-plan.json", "--trace", "testdata/autopilot/day.json", "--autopilot", "--autopilot-objective", "throughput"}, code: ExitUsage,
			want: []string{"--autopilot-objective throughput conflicts with the plan's objective cost"}},
		{name: "unknown objective", args: with("--autopilot", "--autopilot-objective", "latency"), code: ExitUsage, want: []string{`--autopilot-objective "latency": want throughput or cost`}},
		{name: "unknown mode", args: with("--autopilot=sometimes"), code: ExitUsage, want: []string{`--autopilot "sometimes": want on or advise`}},
		{name: "negative budget", args: with("--autopilot", "--autopilot-gpu-budget", "-1"), code: ExitUsage, want: []string{"--autopilot-gpu-budget -1"}},
		{name: "load range", args: with("--autopilot", "--load", "0.1,0.2"), code: ExitUsage, want: []string{"--load \"0.1,0.2\": with --autopilot, one load factor"}},
		{name: "autopilot flag without --autopilot", args: with("--autopilot-window", "5s", "--load", "1", "--duration", "1s"), code: ExitUsage, want: []string{"--autopilot-window needs --autopilot"}},
		{name: "serve: load time", args: []string{"serve", "testdata/serve/demo-plan.json", "--addr", "127.0.0.1:0", "--autopilot", "--autopilot-load-time", "1s"}, code: ExitUsage,
			want: []string{"--autopilot-load-time applies to plan simulate"}},
		{name: "serve: resolve delay", args: []string{"serve", "testdata/serve/demo-plan.json", "--addr", "127.0.0.1:0", "--autopilot", "--autopilot-resolve-delay", "1s"}, code: ExitUsage,
			want: []string{"--autopilot-resolve-delay applies to plan simulate"}},
		{name: "bad resolve delay", args: with("--autopilot", "--autopilot-resolve-delay", "soon"), code: ExitUsage,
			want: []string{`--autopilot-resolve-delay "soon": want a duration ≥ 0 (e.g. 800ms) or measured`}},
		{name: "negative resolve delay", args: with("--autopilot", "--autopilot-resolve-delay", "-1s"), code: ExitUsage, want: []string{`--autopilot-resolve-delay "-1s"`}},
		{name: "sweep flag", args: with("--autopilot", "--find-limit"), code: ExitUsage, want: []string{"--find-limit does not apply with --autopilot"}},
		{name: "report in a missing directory", args: with("--autopilot", "--report", "$TMP/missing/out"), code: ExitUsage, out: "missing",
			want: []string{`--report: "`, `missing/out"`}},
		{name: "zero window", args: with("--autopilot", "--autopilot-window", "0s"), code: ExitUsage, want: []string{"--autopilot-window 0s"}},
		{name: "serve: period longer than the history", args: []string{"serve", "testdata/serve/demo-plan.json", "--addr", "127.0.0.1:0", "--autopilot", "--autopilot-period", "61"}, code: ExitUsage,
			want: []string{"--autopilot-period 61: the forecaster's period is longer than the window history (--autopilot-history 60 windows)"}},
		{name: "serve: cost objective on a throughput plan", args: []string{"serve", "testdata/serve/demo-plan.json", "--addr", "127.0.0.1:0", "--autopilot=advise", "--autopilot-objective", "cost"}, code: ExitUsage,
			want: []string{"--autopilot-objective cost conflicts with the plan's objective throughput"}},
	})
}

// TestSimulateAutopilotDay is the autopilot's goal on the PPipe demo plan: over a diurnal day
// (testdata/autopilot/day.json) at a mean of 0.4 of the plan's rate (its peak window near
// 0.76), the autopilot's attainment is within 1 point of the plan solved for the peak at
// ≤ 70% of its GPU-hours, and the plan solved for the mean falls below both.
func TestSimulateAutopilotDay(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates a million requests three times")
	}
	repoRoot(t)
	code, stdout, stderr := rootRun(t, "simulate", "testdata/serve/demo-plan.json", "--autopilot", "--trace", "testdata/autopilot/day.json", "--load", "0.4", "-O", "json")
	skipWithoutHiGHS(t, stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep autopilotSimReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	a, p, m := rep.Autopilot, rep.Peak, rep.Mean
	t.Logf("autopilot %.4f %.3f GPU-h %d switches; peak %.4f %.3f GPU-h; mean %.4f %.3f GPU-h", a.Attainment, a.GPUHours, a.Switches, p.Attainment, p.GPUHours, m.Attainment, m.GPUHours)
	if a.Requests != p.Requests || a.Requests != m.Requests || a.Requests == 0 {
		t.Fatalf("requests: autopilot %d, peak %d, mean %d", a.Requests, p.Requests, m.Requests)
	}
	if a.Attainment < p.Attainment-0.01 {
		t.Errorf("autopilot attainment %.4f more than 1 point below the peak plan's %.4f", a.Attainment, p.Attainment)
	}
	if a.GPUHours > 0.7*p.GPUHours {
		t.Errorf("autopilot %.3f GPU-hours > 70%% of the peak plan's %.3f", a.GPUHours, p.GPUHours)
	}
	if m.Attainment >= a.Attainment || a.Switches == 0 {
		t.Errorf("the mean plan (%.4f) does not fall below the autopilot (%.4f, %d switches)", m.Attainment, a.Attainment, a.Switches)
	}
}

// TestServeAutopilot: `plan serve --autopilot` on the PPipe demo plan (16 GPUs) under a
// tenth of its rate re-solves in the background with the plan's own planner and switches
// to a smaller plan through the reload path; every request of the load is answered;
// /v1/autopilot and the metrics say what happened.
func TestServeAutopilot(t *testing.T) {
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
		done <- Run([]string{"serve", demoPlanPath, "--addr", "127.0.0.1:0", "--autopilot", "--autopilot-window", "200ms", "--autopilot-min-interval", "1s"},
			Streams{In: strings.NewReader(""), Out: io.Discard, Err: serr})
	}()
	select {
	case <-ready:
	case code := <-done:
		t.Fatalf("serve exited %d: %s", code, serr.String())
	}
	old := srv.ActiveDigest()
	code, out, stderr := rootRun(t, "load", "http://"+addr, "--load", "0.1", "--duration", "2s", "-O", "json", "-q")
	if code != ExitOK {
		t.Fatalf("load: exit %d: %s", code, stderr)
	}
	var rep sim.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if p := rep.Points[0].Total; p.Requests == 0 || p.Completed+p.Late+p.Dropped+p.Cancelled != p.Requests {
		t.Errorf("load: %+v", p)
	}
	deadline := time.Now().Add(20 * time.Second)
	for srv.ActiveDigest() == old && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	log := serr.String()
	skipWithoutHiGHS(t, log)
	if srv.ActiveDigest() == old {
		t.Fatalf("no switch: %s", log)
	}
	st, log := awaitRecordedSwitch(t, addr, serr, deadline)
	if st.Switches < 1 || st.Current.GPUs >= 16 || len(st.Decisions) == 0 {
		t.Errorf("GET /v1/autopilot: %+v", st)
	}
	if !strings.Contains(log, "action=switch") || !strings.Contains(log, "plan switched") {
		t.Errorf("serve log: %s", log)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != ExitOK {
		t.Errorf("serve exited %d: %s", code, serr.String())
	}
}

// awaitRecordedSwitch polls /v1/autopilot and the serve log until both record a switch, or
// until the deadline, and returns the last of each. The server's active plan changes first:
// the autopilot loop records the switch once the reload returns (dataplane/autopilot
// Resolved runs the installer without its lock) and the re-solve logs its decision after
// that, a moment later (seconds under -race on a loaded machine).
func awaitRecordedSwitch(t *testing.T, addr string, serr *syncBuffer, deadline time.Time) (serveap.Status, string) {
	t.Helper()
	for {
		st := autopilotStatus(t, addr)
		log := serr.String()
		if (st.Switches >= 1 && strings.Contains(log, "action=switch") && strings.Contains(log, "plan switched")) || !time.Now().Before(deadline) {
			return st, log
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// autopilotStatus is the serving autopilot's status, GET /v1/autopilot.
func autopilotStatus(t *testing.T, addr string) serveap.Status {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/v1/autopilot")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st serveap.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("GET /v1/autopilot: %v", err)
	}
	return st
}
