package ppipe

import (
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// TestPipelineAutoscale reads the Triton export's ScaledObjects back (export's KEDA decoder):
// every Triton server's object queries the rate of exactly the pipelines whose pools it
// loads (plan.dev/key of its models) and carries, over its replicas, those pipelines'
// share of the model's predicted sustained rate — for the two pipelines of demo-ppipe, and
// for a server shared by both under stage rounding.
func TestPipelineAutoscale(t *testing.T) {
	for _, tc := range []struct {
		name string
		plan func(t *testing.T) *formats.Plan
		// shared is how many servers hold pools of more than one pipeline.
		shared int
	}{
		{"demo-ppipe", func(t *testing.T) *formats.Plan { return readPlan(t, "demo-ppipe") }, 0},
		{"stage rounding", func(t *testing.T) *formats.Plan { return stagePlan(t, [][2]int{{3, 2}, {1, 2}}) }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.plan(t)
			files, err := exporter(t, export.Triton).Export(p, export.Options{})
			if err != nil {
				t.Fatal(err)
			}
			m := ppipesec.PlanOf(p).Models[0]
			total := 0.0
			for _, pl := range m.Pipelines {
				total += pl.ThroughputRPS
			}
			sustained := p.Prediction.Apps[0].SustainedRPS
			pipes := map[string][]int{} // server → its pools' pipelines
			for _, f := range files.Names() {
				if path.Base(f) != "config.pbtxt" {
					continue
				}
				c, err := export.ParseTriton(files[f])
				if err != nil {
					t.Fatal(err)
				}
				if c.Platform == "ensemble" {
					continue
				}
				_, pod, _, _, _ := tritonRecord(c)
				var pi, d int
				if _, err := fmt.Sscanf(export.TritonParams(c)[export.ParamKey], m.Model+"/p%d/s%d", &pi, &d); err != nil {
					t.Fatalf("%s: key %q", f, export.TritonParams(c)[export.ParamKey])
				}
				if !slices.Contains(pipes[export.DNSLabel(pod)], pi) {
					pipes[export.DNSLabel(pod)] = append(pipes[export.DNSLabel(pod)], pi)
				}
			}
			shared := 0
			for pod, pis := range pipes {
				slices.Sort(pis)
				f := export.DeployDir + "/autoscale/scaledobject-" + pod + ".yaml"
				r, err := export.DecodeScaledObject(f, files[f])
				if err != nil {
					t.Fatal(err)
				}
				var idx []string
				want := 0.0
				for _, pi := range pis {
					idx = append(idx, strconv.Itoa(pi))
					want += sustained * m.Pipelines[pi].ThroughputRPS / total
				}
				sel := fmt.Sprintf("pipeline=%q", idx[0])
				if len(pis) > 1 {
					sel = fmt.Sprintf("pipeline=~%q", strings.Join(idx, "|"))
					shared++
				}
				wantQ := fmt.Sprintf("sum(rate(plan_pipeline_requests_total{model=%q,%s}[1m]))", m.Model, sel)
				// The threshold is written with 3 decimals, rounded down.
				if r.Query != wantQ || math.Abs(r.Threshold*float64(r.Max)-want) > 0.001*float64(r.Max) || !r.PerPod {
					t.Errorf("%s: query %s, %g rps on %d replica(s); want %s, %g rps in all", f, r.Query, r.Threshold, r.Max, wantQ, want)
				}
			}
			if shared != tc.shared || len(pipes) == 0 {
				t.Errorf("%d servers, %d of them shared by pipelines; want %d shared", len(pipes), shared, tc.shared)
			}
		})
	}
}
