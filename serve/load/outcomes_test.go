package load

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
)

// TestOutcomes: a late answer is charged to the server only when the server's own latency
// was over the SLO too; the server's p99 comes from the latencies it reported.
func TestOutcomes(t *testing.T) {
	ms := time.Millisecond
	targets := []target{{name: "m", slo: 100 * dataplane.Millisecond}}
	for _, tc := range []struct {
		name            string
		samples         []Sample
		completed, late int64
		serverLate      int64
		serverP99       time.Duration
		drops, timeouts int64
	}{
		{"on time", []Sample{{Status: 200, Latency: 90 * ms, ServerLatency: 80 * ms}}, 1, 0, 0, 80 * ms, 0, 0},
		{"late on the way", []Sample{{Status: 200, Latency: 120 * ms, ServerLatency: 95 * ms}}, 0, 1, 0, 95 * ms, 0, 0},
		{"late at the server", []Sample{{Status: 200, Latency: 130 * ms, ServerLatency: 110 * ms}}, 0, 1, 1, 110 * ms, 0, 0},
		{"no server timing", []Sample{{Status: 200, Latency: 130 * ms}}, 0, 1, 0, 0, 0, 0},
		{"mixed", []Sample{
			{Status: 200, Latency: 50 * ms, ServerLatency: 40 * ms},
			{Status: 200, Latency: 150 * ms, ServerLatency: 60 * ms},
			{Status: 503, Reason: "admission", Stage: "intake"},
			{Reason: ReasonCancelled},
		}, 1, 1, 0, 59800 * time.Microsecond, 1, 1}, // p99 of {40, 60} ms, linearly interpolated (internal/base/quantile)
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := outcomes(tc.samples, targets)
			var drops int64
			for _, d := range o.ServerDrops {
				drops += d.Count
			}
			if o.Completed != tc.completed || o.Late != tc.late || o.ServerLate != tc.serverLate || o.ServerP99 != tc.serverP99 ||
				drops != tc.drops || o.Cancelled != tc.timeouts {
				t.Errorf("outcomes %+v, want completed %d late %d server-late %d p99 %s drops %d timeouts %d",
					o, tc.completed, tc.late, tc.serverLate, tc.serverP99, tc.drops, tc.timeouts)
			}
		})
	}
}

// TestReportLabel: a server that does not name its policy gets the run labelled with the
// plan's system, not "ppipe".
func TestReportLabel(t *testing.T) {
	for _, tc := range []struct{ file, policy, want string }{
		{"pard-4apps.json", "", "pard"},
		{"dyorc-small.json", "", "dyorc"},
		{"demo-ppipe.json", "", "ppipe"},
		{"pard-4apps.json", "pard-ga", "pard-ga"},
	} {
		p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "golden", tc.file), intree.Sections())
		if err != nil {
			t.Fatal(err)
		}
		rep := report(p, tc.policy, Options{Duration: time.Second}, []target{{name: "m", slo: dataplane.Millisecond}}, 1, nil)
		if rep.Policy != tc.want {
			t.Errorf("%s: policy %q, want %q", tc.file, rep.Policy, tc.want)
		}
	}
}

// TestReportCancelled: a request the client gave up on is counted as cancelled in the
// report, apart from completed, late and dropped.
func TestReportCancelled(t *testing.T) {
	p, err := formats.ReadInto[*formats.Plan](filepath.Join("..", "..", "testdata", "golden", "demo-ppipe.json"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	targets := []target{{name: "m", slo: 100 * dataplane.Millisecond}}
	samples := []Sample{
		{Status: 200, Latency: time.Millisecond},
		{Status: 503, Reason: "deadline", Stage: "queue"},
		{Stage: "client", Reason: ReasonCancelled, Latency: time.Second},
	}
	m := report(p, "ppipe", Options{Duration: time.Second}, targets, 1, samples).Points[0].Total
	if m.Requests != 3 || m.Completed != 1 || m.Dropped != 1 || m.Cancelled != 1 || len(m.Drops) != 1 {
		t.Errorf("%+v", m)
	}
}
