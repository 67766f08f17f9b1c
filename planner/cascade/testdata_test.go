package cascade

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/planner"
)

var update = flag.Bool("update", false, "rewrite testdata/cascade (the bundled example) and golden files")

const exampleDir = "../../testdata/cascade"

// demoFamily is the bundled example's family: three BERT stand-ins.
func demoFamily() Family {
	f := BERT
	f.Models = []StandinModel{BERT.Models[0], BERT.Models[2], BERT.Models[4]}
	f.MaxBatch = 64
	return f
}

// exampleWorkload renders the bundled example's workload as YAML (records one per line).
func exampleWorkload() []byte {
	f := demoFamily()
	var b bytes.Buffer
	b.WriteString(`# CascadeServe bundled example: three BERT stand-ins on a 2-GPU cluster.
# Validation records come from the seeded latent-difficulty generator (planner/cascade
# standin.go, seed 12); regenerate with: go test ./planner/cascade -run TestExample -update
apiVersion: plan/v1
kind: Workload
metadata:
  name: cascade-demo
  description: sentiment cascade over bert-tiny, bert-small and bert-base stand-ins
cascades:
  - name: sentiment
    models: [bert-tiny, bert-small, bert-base]
    latency_slo: {percentile: 0.95, latency: 400ms}
    qps_max: 14000
    qps_ranges: 8
    validation:
`)
	for _, r := range f.Generate(600, 12) {
		fmt.Fprintf(&b, "      - {sample: %d, model: %s, pred: %q, cert: %g, label: %q}\n", r.Sample, r.Model, r.Pred, r.Cert, r.Label)
	}
	return b.Bytes()
}

func exampleInputs(t testing.TB) planner.Inputs {
	t.Helper()
	w, err := formats.ReadInto[*formats.Workload](filepath.Join(exampleDir, "workload.yaml"), intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	p, err := formats.ReadInto[*formats.Profile](filepath.Join(exampleDir, "profile.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := formats.ReadInto[*formats.Cluster](filepath.Join(exampleDir, "cluster.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return planner.Inputs{Workload: w, Profiles: []*formats.Profile{p}, Cluster: c}
}

// TestExample keeps the bundled example in sync with the generator and plans it.
func TestExample(t *testing.T) {
	if *update {
		f := demoFamily()
		if err := os.MkdirAll(exampleDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(exampleDir, "workload.yaml"), exampleWorkload(), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := formats.WriteFile(filepath.Join(exampleDir, "profile.json"), f.Profile(), intree.Sections()); err != nil {
			t.Fatal(err)
		}
		cl := f.Cluster(2, 2)
		cl.Metadata.Description = "two V100-32GB GPUs in one server"
		if err := formats.WriteFile(filepath.Join(exampleDir, "cluster.yaml"), cl, intree.Sections()); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(filepath.Join(exampleDir, "workload.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, exampleWorkload()) {
		t.Fatalf("testdata/cascade/workload.yaml is stale: run go test ./planner/cascade -run TestExample -update")
	}
	in := exampleInputs(t)
	plan, res, err := Solve(context.Background(), in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v := Verify(plan); len(v) > 0 {
		t.Fatalf("the example's plan fails verification: %v", v)
	}
	if errs := plan.Validate(intree.Sections()); len(errs) > 0 {
		t.Fatalf("the example's plan is invalid: %v", errs)
	}
	t.Logf("accuracy %.4f on %d GPUs, %d gears, %v", res.Acc, res.GPUsUsed, len(res.Gears), res.Elapsed)
}

// TestVerifyCatches breaks a valid plan in each way Verify checks.
func TestVerifyCatches(t *testing.T) {
	in := exampleInputs(t)
	plan, _, err := Solve(context.Background(), in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		break_ func(p *formats.Plan)
		want   string
	}{
		{"unplaced model", func(p *formats.Plan) {
			g := &cascadesec.PlanOf(p).Gears[0]
			keep := cascadesec.PlanOf(p).Placement[:0]
			for _, r := range cascadesec.PlanOf(p).Placement {
				if r.Model != g.Models[0] {
					keep = append(keep, r)
				}
			}
			cascadesec.PlanOf(p).Placement = keep
		}, "not placed"},
		{"accuracy", func(p *formats.Plan) { cascadesec.PlanOf(p).Gears[0].ExpAcc = 0.99 }, "replaying the validation records"},
		{"latency", func(p *formats.Plan) { cascadesec.PlanOf(p).Gears[0].ExpPLat = 5000 }, "above the p95 latency SLO"},
		{"memory", func(p *formats.Plan) {
			for i := 0; i < 200; i++ {
				cascadesec.PlanOf(p).Placement = append(cascadesec.PlanOf(p).Placement, cascadesec.Replica{Model: "bert-base", GPUs: []int{0}})
			}
		}, "GPU 0: replicas need"},
		{"coverage", func(p *formats.Plan) { cascadesec.PlanOf(p).Gears = cascadesec.PlanOf(p).Gears[:1] }, "below qps_max"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := formats.Marshal(plan)
			cp, err := formats.DecodeInto[*formats.Plan]("plan.json", b, intree.Sections())
			if err != nil {
				t.Fatal(err)
			}
			tc.break_(cp)
			v := Verify(cp)
			found := false
			for _, x := range v {
				found = found || bytes.Contains([]byte(x), []byte(tc.want))
			}
			if !found {
				t.Fatalf("violations %q lack %q", v, tc.want)
			}
		})
	}
}
