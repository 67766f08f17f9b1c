package serve

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	dpppipe "github.com/plan-dev/plan/dataplane/ppipe"
	"github.com/plan-dev/plan/internal/promcheck"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/serve")

// TestMetricsGolden renders a fixed sequence of events in the Prometheus text format and
// compares it with testdata/serve/metrics.golden (go test ./serve -run MetricsGolden -update).
func TestMetricsGolden(t *testing.T) {
	dep, err := dpppipe.FromPlan(loadPlan(t, "nic.json"))
	if err != nil {
		t.Fatal(err)
	}
	m := newMetrics()
	m.setPlan(&generation{digest: "sha256:abc", dep: dep, plan: loadPlan(t, "nic.json")})
	for i := 0; i < 5; i++ {
		m.arrived(m.model("m2"))
	}
	m.finished(m.model("m2"), "completed", 12000)
	m.finished(m.model("m2"), "completed", 31000)
	m.finished(m.model("m2"), "late", 45000)
	m.drop("m2", "queue", "deadline")
	m.finished(m.model("m2"), "dropped", 300)
	m.reject(400, "bad-request")
	m.reject(404, "unknown-model")
	m.busy(dep.Topo.Workers[0].Name, dep.Stages[0].Name, 6000)
	m.busy(dep.Topo.Workers[0].Name, dep.Stages[0].Name, 6100)
	m.workerQueue(dep.Topo.Workers[1].Name, dep.Stages[0].Name, 2, true)
	m.queueDepth("m2", 1)
	m.latenessUs(40)
	m.latenessUs(700)
	m.latenessUs(250000)
	m.intake(30)
	m.intake(4000)
	var b bytes.Buffer
	if err := m.write(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "testdata", "serve", "metrics.golden")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("metrics differ from %s (run with -update if intended):\n%s", path, b.String())
	}
	// Every plan_* family passes promtool's lint rules.
	probs, err := promcheck.Lint(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Errorf("lint: %s", p)
	}
}
