package cli

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/internal/base/testmode"
	"github.com/plan-dev/plan/serve"
	"github.com/plan-dev/plan/sim"
)

// TestSimulateAutopilotQLM: the autopilot's goals for a QLM plan (testdata/autopilot/qlm-*.json,
// two Mistral-7B classes of Azure-trace-shaped tokens on 16 A100s) on the synthetic day, for
// both objectives: the autopilot, sizing the plan by QLM's capacity model, stays within 1
// point of the plan solved for the trace's peak at ≤ 70% of its GPU-hours; on the
// throughput plan the plan solved for the trace's mean falls below both (on the cost plan
// it does not: serve/README.md says why).
func TestSimulateAutopilotQLM(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 30k LLM requests four times per plan")
	}
	repoRoot(t)
	for _, tc := range []struct {
		plan      string
		meanBelow bool
		heavy     bool // make test-full only (23 s on 2 cores): the cost plan stands for it in CI
	}{
		{"testdata/autopilot/qlm-plan.json", true, true},
		{"testdata/autopilot/qlm-cost-plan.json", false, false},
	} {
		t.Run(tc.plan, func(t *testing.T) {
			if tc.heavy {
				testmode.Heavy(t, "TestSimulateAutopilotQLM/testdata/autopilot/qlm-cost-plan.json")
			}
			code, stdout, stderr := rootRun(t, "simulate", tc.plan, "--autopilot", "--trace", "testdata/autopilot/day.json", "--load", "0.4", "-O", "json")
			skipWithoutHiGHS(t, stderr)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var rep autopilotSimReport
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatal(err)
			}
			a, p, m := rep.Autopilot, rep.Peak, rep.Mean
			t.Logf("autopilot %.4f %.3f GPU-h %d switches; peak %.4f %.3f GPU-h (%d GPUs); mean %.4f %.3f GPU-h (%d GPUs)",
				a.Attainment, a.GPUHours, a.Switches, p.Attainment, p.GPUHours, rep.PeakGPUs, m.Attainment, m.GPUHours, rep.MeanGPUs)
			if a.Requests != p.Requests || a.Requests != m.Requests || a.Requests == 0 {
				t.Fatalf("requests: autopilot %d, peak %d, mean %d", a.Requests, p.Requests, m.Requests)
			}
			if a.Attainment < p.Attainment-0.01 {
				t.Errorf("autopilot attainment %.4f more than 1 point below the peak plan's %.4f", a.Attainment, p.Attainment)
			}
			if a.GPUHours > 0.7*p.GPUHours || a.Switches == 0 {
				t.Errorf("autopilot %.3f GPU-hours (%d switches) > 70%% of the peak plan's %.3f", a.GPUHours, a.Switches, p.GPUHours)
			}
			if tc.meanBelow && m.Attainment >= a.Attainment {
				t.Errorf("the mean plan (%.4f) does not fall below the autopilot (%.4f)", m.Attainment, a.Attainment)
			}
		})
	}
}

// TestServeAutopilotQLM: `plan serve --autopilot` on the QLM fixture (16 A100s) under a
// tenth of its classes' rates sizes the plan by QLM's capacity model, re-solves a smaller
// cluster in the background and switches to it through the reload path (the new instances
// load their model first); every request of the load is answered.
func TestServeAutopilotQLM(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // the OpenAI front end's batch queue
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
		done <- Run([]string{"serve", "../../../../testdata/autopilot/qlm-plan.json", "--addr", "127.0.0.1:0", "--autopilot", "--autopilot-window", "500ms", "--autopilot-min-interval", "1s"},
			Streams{In: strings.NewReader(""), Out: io.Discard, Err: serr})
	}()
	select {
	case <-ready:
	case code := <-done:
		t.Fatalf("serve exited %d: %s", code, serr.String())
	}
	old := srv.ActiveDigest()
	code, out, stderr := rootRun(t, "load", "http://"+addr, "--load", "0.1", "--duration", "3s", "-O", "json", "-q")
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
	deadline := time.Now().Add(30 * time.Second)
	for srv.ActiveDigest() == old && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	log := serr.String()
	skipWithoutHiGHS(t, log)
	if srv.ActiveDigest() == old {
		testmode.SkipIfLate(t, "no switch within 30 s")
		t.Fatalf("no switch: %s", log)
	}
	st, log := awaitRecordedSwitch(t, addr, serr, time.Now().Add(15*time.Second))
	if st.Switches < 1 || st.Current.GPUs >= 16 || len(st.Current.Capacity) != 2 || st.Current.Capacity[0] <= 0 {
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
