package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestSimulateAutopilotReport: --report DIR writes each decision (time, trigger, forecast,
// the chosen plan and its predicted and observed effect) and the GPUs-over-time plot. On
// the step trace the demo plan (16 GPUs) shrinks to the 6-GPU rung once the 400 rps have
// held two windows (as TestAutopilotServeSimulateAgree's simulate side).
func TestSimulateAutopilotReport(t *testing.T) {
	repoRoot(t)
	dir := filepath.Join(t.TempDir(), "rep")
	args := append([]string{"simulate", "testdata/serve/demo-plan.json", "--trace", "testdata/autopilot/step.json", "--load", "0.1059",
		"--autopilot-load-time", "0s", "--report", dir, "-q"}, agreeArgs...)
	code, _, stderr := rootRun(t, args...)
	skipWithoutHiGHS(t, stderr)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, f := range []string{"autopilot-report.json", "autopilot.png", "autopilot.svg"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "autopilot-report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc autopilotReportDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Start.GPUs != 16 || len(doc.Rate) != 10 || doc.WindowS != 2 {
		t.Errorf("start %+v, %d rate windows of %g s; want 16 GPUs, 10 windows of 2 s", doc.Start, len(doc.Rate), doc.WindowS)
	}
	var sw *autopilotDecisionReport
	for i := range doc.Decisions {
		if doc.Decisions[i].Action == "switch" {
			sw = &doc.Decisions[i]
			break
		}
	}
	if sw == nil {
		t.Fatalf("no switch in %+v", doc.Decisions)
	}
	if sw.TimeS <= 0 || sw.Trigger == "" || len(sw.ForecastRPS) != 1 || sw.Chosen == nil || sw.Chosen.Digest == "" || sw.Chosen.GPUs != 6 {
		t.Errorf("switch %+v: want a time, trigger, forecast and the 6-GPU plan", sw)
	}
	if p := sw.Predicted; p == nil || p.GPUDelta != -10 || len(p.Utilization) != 1 || p.ServesForecast == nil || !*p.ServesForecast {
		t.Errorf("predicted %+v: want -10 GPUs, serving the forecast", p)
	} else if want := sw.ForecastRPS[0] / sw.Chosen.CapacityRPS[0]; p.Utilization[0] < want-1e-3 || p.Utilization[0] > want+1e-3 {
		t.Errorf("utilization %g, want forecast/capacity %g", p.Utilization[0], want)
	}
	if o := sw.Observed; o == nil || o.Requests == 0 || o.FromS < sw.TimeS {
		t.Errorf("observed %+v: want the chosen plan's segment after the switch", o)
	}
}
