package serve

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	dpppipe "github.com/plan-dev/plan/dataplane/ppipe"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/internal/base/promcheck"
	"github.com/plan-dev/plan/serve/kserve"
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
	m.pipelines(dep)[0][0].Add(4)
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

// TestPipelineRequests: plan_pipeline_requests_total counts each request once, in the
// pipeline the dispatcher sent it into — the pipeline of the first stage its answer reports
// (timing.stages, from the engine's batch records) — under PPipe's reservation dispatcher
// and under the per-pool baseline, which dispatches every hop anew. A burst of simultaneous
// requests overflows pipeline 0 of the demo plan (two L4 slices) into pipeline 1, so both
// pipelines count. On a loaded machine (CI under -race) a burst's requests can arrive spread
// out enough for pipeline 0 to take them all: the test then sends another burst, up to
// maxBursts, and compares the counter with every answer of every burst.
func TestPipelineRequests(t *testing.T) {
	const n, maxBursts = 96, 5
	for _, policy := range []string{"", "reactive"} {
		t.Run("policy="+policy, func(t *testing.T) {
			p := loadPlan(t, "demo-plan.json")
			_, ts := testServer(t, Options{Plan: p, Policy: dataplane.Config{Policy: policy}})
			want := make([]float64, len(ppipesec.PlanOf(p).Models[0].Pipelines))
			for burst := 0; burst < maxBursts && slices.Contains(want, 0); burst++ {
				bodies := make([][]byte, n)
				var wg sync.WaitGroup
				for i := range bodies {
					wg.Add(1)
					go func() {
						defer wg.Done()
						resp, err := http.Post(ts.URL+"/v2/models/demo/infer", "application/json", strings.NewReader(inferBody(float32(i))))
						if err != nil {
							return
						}
						bodies[i], _ = io.ReadAll(resp.Body)
						resp.Body.Close()
					}()
				}
				wg.Wait()
				for i, b := range bodies {
					var r struct {
						Timing kserve.Timing `json:"timing"`
					}
					if err := json.Unmarshal(b, &r); err != nil {
						t.Fatalf("request %d: %v: %s", i, err, b)
					}
					if len(r.Timing.Stages) == 0 {
						continue // refused or dropped before its dispatch
					}
					var pi, d int
					if _, err := fmt.Sscanf(r.Timing.Stages[0].Stage, "demo/p%d/s%d", &pi, &d); err != nil || d != 0 || pi >= len(want) {
						t.Fatalf("request %d: first stage %q is no pipeline's head", i, r.Timing.Stages[0].Stage)
					}
					want[pi]++
				}
			}
			_, mt := get(t, ts.URL+"/metrics")
			for pi, w := range want {
				series := fmt.Sprintf(`plan_pipeline_requests_total{model="demo",pipeline="%d"}`, pi)
				if !strings.Contains(string(mt), series+" ") {
					t.Errorf("/metrics lacks %s", series)
				}
				if got := metricValue(string(mt), series); got != w || w == 0 {
					t.Errorf("%s = %g; the answers report %g requests entering pipeline %d (want > 0)", series, got, w, pi)
				}
			}
		})
	}
}
