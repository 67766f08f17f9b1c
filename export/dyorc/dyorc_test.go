package dyorc

import (
	"flag"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/export/exporttest"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/dyorcsec"
	"github.com/plan-dev/plan/formats/sections/intree"
)

var update = flag.Bool("update", false, "rewrite testdata/export/dyorc golden files")

// planFile is the bundled small example's plan (plan solve of testdata/dyorc/small.json on
// cluster-small.json: GILL and the image pipeline on 4 A800s).
const (
	planFile  = "../../testdata/export/dyorc/plan.json"
	goldenDir = "../../testdata/export/dyorc"
)

func readPlan(t testing.TB) *formats.Plan {
	t.Helper()
	return exporttest.ReadPlan(t, planFile)
}

func exporter(t testing.TB, target string) export.Exporter {
	return exporttest.Exporter(t, Exporters(), target)
}

// check compares a read-back plan with p: the deployments, placement, policy and
// parameters, and every workflow of the embedded workload.
func check(t *testing.T, got *Exported, p *formats.Plan) {
	t.Helper()
	want := *dyorcsec.PlanOf(p)
	if !reflect.DeepEqual(got.Plan, &want) {
		t.Errorf("read back:\n%+v\nplan:\n%+v", got.Plan, &want)
	}
	if !reflect.DeepEqual(got.Apps, dyorcsec.WorkflowsOf(p.Provenance.Embedded.Workload).Apps) {
		t.Errorf("workflows read back:\n%+v\nplan:\n%+v", got.Apps, dyorcsec.WorkflowsOf(p.Provenance.Embedded.Workload).Apps)
	}
}

// TestGolden compares every target's files with testdata/export/dyorc/<target>/ after
// checking them against the targets' schemas, then reads them back into the plan's section
// and workflows.
func TestGolden(t *testing.T) {
	p := readPlan(t)
	for _, target := range export.Targets {
		t.Run(target, func(t *testing.T) {
			files, err := exporter(t, target).Export(p, export.Options{Name: "dyorc-small"})
			if err != nil {
				t.Fatal(err)
			}
			if err := export.Validate(files); err != nil {
				t.Fatal(err)
			}
			exporttest.Golden(t, filepath.Join(goldenDir, target), files, *update, "./export/dyorc")
			got, err := ReadBack(target, files)
			if err != nil {
				t.Fatal(err)
			}
			check(t, got, p)
		})
	}
}

// mixPlan is the bundled four-application example's plan with a hand-made placement: the
// debate loop (fan-out 3, 4 rounds), KnowledgeCard's 25-way choice, GILL's guards.
func mixPlan(t *testing.T) *formats.Plan {
	t.Helper()
	w, err := formats.ReadInto[*formats.Workload]("../../testdata/dyorc/workload.json", intree.Sections())
	if err != nil {
		t.Fatal(err)
	}
	c, err := formats.ReadInto[*formats.Cluster]("../../testdata/dyorc/cluster.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(dyorcsec.WorkflowsOf(w).Services))
	for n := range dyorcsec.WorkflowsOf(w).Services {
		names = append(names, n)
	}
	slices.Sort(names)
	dp := &dyorcsec.DyOrcPlan{Policy: "dyorc-greedy", Params: map[string]float64{"beam": 4}}
	held := map[int][]string{}
	for i, n := range names {
		reps := 1
		if n == "llm7b" {
			reps = 3
		}
		for k := 0; k < reps; k++ {
			g := (i + 3*k) % 8
			held[g] = append(held[g], n)
		}
		dp.Deployments = append(dp.Deployments, dyorcsec.ServiceDeployment{Service: n, GPU: "A800", Replicas: reps, MaxBatch: dyorcsec.WorkflowsOf(w).Services[n].MaxBatch})
	}
	for g := 0; g < 8; g++ {
		if s := held[g]; len(s) > 0 {
			slices.Sort(s)
			dp.Placement = append(dp.Placement, dyorcsec.GPUServices{GPU: g, Services: s})
		}
	}
	return dyorcsec.SetPlan(&formats.Plan{Cluster: c, Provenance: formats.Provenance{Embedded: &formats.EmbeddedInputs{Workload: w}}}, dp)
}

// TestShapes: the four applications round-trip through every target, and each target models
// the workflows as it can: per-GPU Triton instance groups and a BLS model per app, KServe
// Switch nodes for choices and guards, an Ensemble per fan-out and the debate loop unrolled,
// a Ray driver carrying the workflows; every target says what it cannot express.
func TestShapes(t *testing.T) {
	p := mixPlan(t)
	for _, target := range export.Targets {
		t.Run(target, func(t *testing.T) {
			files, err := exporter(t, target).Export(p, export.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := export.Validate(files); err != nil {
				t.Fatal(err)
			}
			got, err := ReadBack(target, files)
			if err != nil {
				t.Fatal(err)
			}
			check(t, got, p)
			all := ""
			for _, n := range files.Names() {
				all += string(files[n])
			}
			if !strings.Contains(all, "speculative scheduling") {
				t.Error("the export must say that speculative scheduling is not expressible")
			}
			switch target {
			case export.Triton:
				c, err := export.ParseTriton(files["plan-llm7b/config.pbtxt"])
				if err != nil || len(c.InstanceGroup) != 3 {
					t.Fatalf("llm7b: want 3 instance groups: %v %v", c, err)
				}
				// g<plan GPU>, each pinned to its GPU as the service's pod numbers them (0..2).
				for k, g := range c.InstanceGroup {
					if len(g.Gpus) != 1 || g.Gpus[0] != int32(k) || !strings.HasPrefix(g.Name, "g") {
						t.Errorf("llm7b: instance group %s on %v: want g<plan gpu> pinned to pod GPU %d", g.Name, g.Gpus, k)
					}
				}
				r, err := export.ParseTriton(files["plan-debate/config.pbtxt"])
				if err != nil || r.Backend != "python" || r.Parameters[ParamWorkflow] == nil {
					t.Errorf("debate driver: %v %v", r, err)
				}
			case export.KServe:
				y := string(files["inferencegraph-plan-kc.yaml"])
				if !strings.Contains(y, "routerType: Switch") || !strings.Contains(y, `condition: outputs.#(name=="next").data.#(=="card:card07")`) {
					t.Errorf("kc graph: want a Switch on the next node:\n%s", y)
				}
				d := string(files["inferencegraph-plan-debate.yaml"])
				if strings.Count(d, "routerType: Ensemble") != 4 || !strings.Contains(d, "round-4-agent") || strings.Count(d, "name: copy-") != 12 {
					t.Errorf("debate graph: want 4 unrolled rounds of a 3-way Ensemble:\n%s", d)
				}
			case export.Ray:
				y := string(files[export.RayConfigFile])
				if !strings.Contains(y, "name: plan-driver") || !strings.Contains(y, "app: debate") {
					t.Error("no workflow driver deployment")
				}
			}
		})
	}
}

// TestReadBackRejects: files whose native settings disagree with the recorded plan, or that
// lose part of it, are errors.
func TestReadBackRejects(t *testing.T) {
	p := readPlan(t)
	tests := []struct {
		target, file, old, new, want string
	}{
		{export.Triton, "plan-llm7b/config.pbtxt", "gpus: [ 0 ]", "gpus: [ 2 ]", "instance group g3: GPUs [2], the recorded placement holds the service on plan GPU 3: [0] within the pod"},
		{export.Triton, "plan-sd15/config.pbtxt", "max_batch_size: 8", "max_batch_size: 4", "batch 8 recorded"},
		{export.Triton, "plan-gill/config.pbtxt", `backend: "python"`, `backend: "onnxruntime"`, "dyorc.gpus: empty"},
		{export.Triton, "plan-image/config.pbtxt", `\"gpus\":4`, `\"gpus\":5`, "differs from another application's"},
		{export.KServe, "inferenceservice-plan-sd15.yaml", "minReplicas: 4", "minReplicas: 3", "minReplicas = maxReplicas"},
		{export.Ray, export.RayConfigFile, "max_replicas: 4", "max_replicas: 3", "the target's settings say 3 replicas"},
		{export.Ray, export.RayConfigFile, "dyorc.index: \"6\"", "dyorc.index: \"7\"", "the indices are not 0..6"},
	}
	for _, tc := range tests {
		t.Run(tc.target+"/"+tc.want, func(t *testing.T) {
			files, err := exporter(t, tc.target).Export(p, export.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s := string(files[tc.file])
			if !strings.Contains(s, tc.old) {
				t.Fatalf("%s has no %q:\n%s", tc.file, tc.old, s)
			}
			files[tc.file] = []byte(strings.Replace(s, tc.old, tc.new, 1))
			if _, err := ReadBack(tc.target, files); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// TestBadPlans: plans the exporter cannot lay out fail with the field at fault.
func TestBadPlans(t *testing.T) {
	tests := []struct {
		name string
		edit func(p *formats.Plan)
		want string
	}{
		{"no dyorc", func(p *formats.Plan) { dyorcsec.SetPlan(p, nil) }, "no dyorc section"},
		{"no workload", func(p *formats.Plan) { p.Provenance.Embedded = nil }, "provenance.embedded.workload: missing"},
		{"unknown service", func(p *formats.Plan) { dyorcsec.PlanOf(p).Deployments[0].Service = "bert" }, `dyorc.deployments[0].service: "bert": not a workflow service`},
		{"replicas", func(p *formats.Plan) { dyorcsec.PlanOf(p).Deployments[4].Replicas = 3 }, "dyorc.deployments[4].replicas: 3, but dyorc.placement holds sd15 on 4 GPU(s)"},
		{"gpu", func(p *formats.Plan) { dyorcsec.PlanOf(p).Placement[0].GPU = 9 }, "dyorc.placement[0].services[0]: GPU 9: the cluster has 4 GPUs"},
		{"undeployed", func(p *formats.Plan) {
			dyorcsec.PlanOf(p).Deployments = dyorcsec.PlanOf(p).Deployments[1:]
			dyorcsec.PlanOf(p).Placement[2].Services = dyorcsec.PlanOf(p).Placement[2].Services[1:]
		}, `step read: service "cap" has no (single) deployment`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := readPlan(t)
			tc.edit(p)
			for _, e := range Exporters() {
				if _, err := e.Export(p, export.Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: err %v, want %q", e.Target, err, tc.want)
				}
			}
		})
	}
}

// TestSpread: a plan without a placement records the deployer's spread, and reads back
// without one.
func TestSpread(t *testing.T) {
	p := readPlan(t)
	dyorcsec.PlanOf(p).Placement = nil
	for _, e := range Exporters() {
		files, err := e.Export(p, export.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadBack(e.Target, files)
		if err != nil {
			t.Fatal(err)
		}
		check(t, got, p)
	}
}

// FuzzReadBack: the read-back decoders never panic on arbitrary files.
func FuzzReadBack(f *testing.F) {
	p := readPlan(f)
	for _, e := range Exporters() {
		files, err := e.Export(p, export.Options{})
		if err != nil {
			f.Fatal(err)
		}
		for _, n := range files.Names() {
			f.Add(uint8(slices.Index(export.Targets, e.Target)), n, string(files[n]))
		}
	}
	f.Fuzz(func(t *testing.T, target uint8, name, data string) {
		if len(data) > 1<<16 {
			return
		}
		_, _ = ReadBack(export.Targets[int(target)%len(export.Targets)], export.Files{name: []byte(data)})
	})
}

// BenchmarkExport exports the bundled plan to all three targets, validation included.
func BenchmarkExport(b *testing.B) {
	p := readPlan(b)
	for b.Loop() {
		for _, e := range Exporters() {
			files, err := e.Export(p, export.Options{})
			if err != nil {
				b.Fatal(err)
			}
			if err := export.Validate(files); err != nil {
				b.Fatal(err)
			}
		}
	}
}
