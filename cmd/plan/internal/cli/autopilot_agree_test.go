package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	ap "github.com/plan-dev/plan/dataplane/autopilot"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/sim"
)

// agreeArgs are the autopilot flags both sides run with: 2 s windows, so the step trace
// (testdata/autopilot/step.json: 10 s at 400 rps, then 10 s at 80 rps) spans ten of them,
// and serve's re-solve (wall time) and migration are small beside one.
var agreeArgs = []string{"--autopilot", "--autopilot-window", "2s", "--autopilot-min-interval", "2s"}

// switchesOf returns the switch decisions of a decision log, times relative to t0.
func switchesOf(ds []ap.Decision, t0 dataplane.Time) []ap.Decision {
	var out []ap.Decision
	for _, d := range ds {
		if d.Action == "switch" {
			d.At -= t0
			out = append(out, d)
		}
	}
	return out
}

// TestAutopilotServeSimulateAgree checks that serve and simulate agree on the same trace
// with the autopilot on: the step trace through `plan simulate --autopilot` and,
// with the same seed (plan load replays the simulator's arrivals), through
// `plan serve --autopilot` driven by `plan load --trace`. Both switch to the same GPU counts
// in the same order, each switch within one window of the other's time (serve's windows
// start at its own clock, not at the load's first arrival), and attainment is within 2
// points.
//
// The demo plan (16 GPUs, 2267 rps) under the step shrinks twice: to the 6-GPU rung of the
// ladder (998 rps) once the 400 rps have held two windows, then to the 2-GPU rung (413 rps)
// after the step down: the forecasts sit well inside those rungs (demand 1.15 × forecast),
// so the sequence does not hang on one Poisson slice.
func TestAutopilotServeSimulateAgree(t *testing.T) {
	agree(t, "testdata/autopilot/step.json", 20*time.Second)
}

// TestAutopilotServeSimulateAgreeStepUp is the same target on a step up
// (testdata/autopilot/step-up.json: 12 s at 80 rps, then 12 s at 360 rps): the demo plan
// shrinks to the 2-GPU rung (413 rps) at 6 s, then, once the 360 rps (peaks near 510 over a
// tenth of a window) have held two windows, grows to the 6-GPU rung (998 rps): any forecast
// from 415 to 868 rps asks for it (the rungs between serve 477 rps), and simulate's is 556.
// The shrunk
// plan is overloaded until the switch lands, so serve agrees only if its re-solve is as
// quick as simulate's zero-time one: serve pre-solves the rungs next to the one it serves
// (planner/autopilot.Ladder.Prefetch) and the step up finds them cached.
func TestAutopilotServeSimulateAgreeStepUp(t *testing.T) {
	agree(t, "testdata/autopilot/step-up.json", 24*time.Second)
}

// agree runs trace (at 0.1059 of the demo plan's rate, duration long) through simulate and
// through serve driven by plan load, and compares their switches and attainment.
func agree(t *testing.T, trace string, duration time.Duration) {
	// Wall-clock runs compare serve's timers with simulate's virtual clock: they run in
	// `make agreement`, after the unit tests have freed the cores, as serve/load's do.
	if testing.Short() || os.Getenv("PLAN_AGREEMENT") != "1" {
		t.Skip("set PLAN_AGREEMENT=1 to run (wall-clock serve vs simulate; make agreement runs it on idle cores)")
	}
	repoRoot(t)
	window := 2 * dataplane.Second
	simArgs := append([]string{"simulate", "testdata/serve/demo-plan.json", "--trace", trace, "--load", "0.1059",
		"--autopilot-load-time", "0s", "-O", "json"}, agreeArgs...)
	code, stdout, stderr := rootRun(t, simArgs...)
	skipWithoutHiGHS(t, stderr)
	if code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, stderr)
	}
	var rep autopilotSimReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	want := switchesOf(rep.Autopilot.Decisions, 0)
	if len(want) < 2 {
		t.Fatalf("simulate switched %d times, want two: %+v", len(want), rep.Autopilot.Decisions)
	}

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
		done <- Run(append([]string{"serve", "testdata/serve/demo-plan.json", "--addr", "127.0.0.1:0"}, agreeArgs...),
			Streams{In: strings.NewReader(""), Out: io.Discard, Err: serr})
	}()
	select {
	case <-ready:
	case code := <-done:
		t.Fatalf("serve exited %d: %s", code, serr.String())
	}
	t0 := srv.Clock().Now()
	code, out, lerr := rootRun(t, "load", "http://"+addr, "--trace", trace, "--load", "0.1059", "--duration", duration.String(), "--warmup", "0s", "-O", "json", "-q")
	if code != ExitOK {
		t.Fatalf("load: exit %d: %s", code, lerr)
	}
	var lrep sim.Report
	if err := json.Unmarshal([]byte(out), &lrep); err != nil {
		t.Fatal(err)
	}
	st := autopilotStatus(t, addr)
	got := switchesOf(st.Decisions, t0)
	late, late99 := srv.TimerLateness(0.95), srv.TimerLateness(0.99)
	// serve ticks its loop on the machine's timers: where they fire a quarter of a window late
	// or more (a CI machine running every package's tests at once), its windows are not the
	// trace's and the switches measure the machine; they are logged, not compared.
	report := t.Errorf
	if late99 > time.Duration(window)*time.Microsecond/4 {
		report = t.Logf
		t.Logf("the driver's timers fired up to %v late at p99: switch times logged, not compared", late99)
	}
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			report("switch %d: simulate to %d GPUs at %.2f s, serve none", i, want[i].GPUs, float64(want[i].At)/1e6)
		case i >= len(want):
			report("switch %d: serve to %d GPUs at %.2f s, simulate none", i, got[i].GPUs, float64(got[i].At)/1e6)
		case got[i].GPUs != want[i].GPUs || math.Abs(float64(got[i].At-want[i].At)) > float64(window):
			report("switch %d: serve to %d GPUs at %.2f s, simulate to %d GPUs at %.2f s (want the same GPUs within one window, %v)",
				i, got[i].GPUs, float64(got[i].At)/1e6, want[i].GPUs, float64(want[i].At)/1e6, time.Duration(window)*time.Microsecond)
		}
	}
	la, sa := lrep.Points[0].Total.Attainment, rep.Autopilot.Attainment
	if d := math.Abs(la - sa); d > 0.02 {
		// The demo plan's SLO is 14 ms: on a machine whose timers fire late, serve's
		// attainment measures the machine, not the loop (serve/load's TestAgreement, same
		// bound). The switch decisions above are compared regardless.
		if late > 500*time.Microsecond || late99 > time.Millisecond {
			t.Logf("attainment: serve %.4f, simulate %.4f: %.2f points apart, but the driver's timers fired up to %v late at p95, %v at p99: not compared", la, sa, 100*d, late, late99)
		} else {
			t.Errorf("attainment: serve %.4f, simulate %.4f: more than 2 points apart (timer lateness p95 %v, p99 %v)", la, sa, late, late99)
		}
	}
	brief := func(ds []ap.Decision) string {
		var b strings.Builder
		for _, d := range ds {
			fmt.Fprintf(&b, " %.2fs→%d GPUs (forecast %.0f rps)", float64(d.At)/1e6, d.GPUs, d.Forecast)
		}
		return b.String()
	}
	t.Logf("simulate: %d requests, attainment %.4f, switches%s", rep.Autopilot.Requests, sa, brief(want))
	t.Logf("serve:    %d requests, attainment %.4f, switches%s; timer lateness p95 %v, p99 %v", lrep.Points[0].Total.Requests, la, brief(got), late, late99)
	for _, l := range strings.Split(serr.String(), "\n") {
		if strings.Contains(l, "plan switched") {
			t.Log(l)
		}
	}
	if t.Failed() {
		t.Logf("serve decisions %+v\nserve log: %s", st.Decisions, serr.String())
	}
	if err := srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != ExitOK {
		t.Errorf("serve exited %d: %s", code, serr.String())
	}
}
