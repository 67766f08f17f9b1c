package cascade

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
	"github.com/plan-dev/plan/formats/sections/cascadesec"
)

var update = flag.Bool("update", false, "rewrite testdata/export/cascade golden files")

// planFile is the bundled example's gear plan (8 gears, 3 BERT models × 2 V100s).
const (
	planFile  = "../../testdata/cascade/golden-plan.json"
	goldenDir = "../../testdata/export/cascade"
)

func readPlan(t testing.TB) *formats.Plan {
	t.Helper()
	return exporttest.ReadPlan(t, planFile)
}

func exporter(t testing.TB, target string) export.Exporter {
	return exporttest.Exporter(t, Exporters(), target)
}

// TestGolden compares every target's files with testdata/export/cascade/<target>/ after
// checking them against the targets' schemas, then reads them back: the placement (models
// and GPUs in plan order), every gear (cascade, thresholds, shares, triggers) and the
// switching constants equal the plan's.
func TestGolden(t *testing.T) {
	p := readPlan(t)
	for _, target := range export.Targets {
		t.Run(target, func(t *testing.T) {
			files, err := exporter(t, target).Export(p, export.Options{Name: "cascade-demo"})
			if err != nil {
				t.Fatal(err)
			}
			if err := export.Validate(files); err != nil {
				t.Fatal(err)
			}
			exporttest.Golden(t, filepath.Join(goldenDir, target), files, *update, "./export/cascade")
			got, gpu, err := ReadBack(target, files)
			if err != nil {
				t.Fatal(err)
			}
			if gpu != "V100" {
				t.Errorf("GPU type %q, want V100", gpu)
			}
			if !reflect.DeepEqual(got, cascadesec.PlanOf(p)) {
				t.Errorf("read back:\n%+v\nplan:\n%+v", got, cascadesec.PlanOf(p))
			}
		})
	}
}

// TestShapes: a multi-GPU, interleaved placement (a 2-GPU replica, models placed out of
// order) round-trips through every target, and each target models the cascade as it can:
// per-replica Triton instance groups with their GPUs, one KServe graph per gear with
// certainty conditions, a Ray router carrying the gear table; every target documents that it
// cannot switch gears.
func TestShapes(t *testing.T) {
	p := readPlan(t)
	cp := *cascadesec.PlanOf(p)
	cp.Placement = []cascadesec.Replica{{Model: "bert-base", GPUs: []int{0, 1}}, {Model: "bert-tiny", GPUs: []int{1}}, {Model: "bert-small", GPUs: []int{0}}, {Model: "bert-tiny", GPUs: []int{0}}}
	cp.Gears = append([]cascadesec.Gear(nil), cp.Gears[:2]...)
	for i := range cp.Gears {
		g := cp.Gears[i]
		g.Share = map[string][]float64{"bert-base": {1}, "bert-small": {1}, "bert-tiny": {0.25, 0.75}}
		cp.Gears[i] = g
	}
	cascadesec.SetPlan(p, &cp)
	for _, target := range export.Targets {
		t.Run(target, func(t *testing.T) {
			files, err := exporter(t, target).Export(p, export.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := export.Validate(files); err != nil {
				t.Fatal(err)
			}
			got, _, err := ReadBack(target, files)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, &cp) {
				t.Errorf("read back:\n%+v\nplan:\n%+v", got, &cp)
			}
			all := ""
			for _, n := range files.Names() {
				all += string(files[n])
			}
			if !strings.Contains(all, "gear switching") {
				t.Error("the export must say that gear switching is not expressible")
			}
			switch target {
			case export.Triton:
				c, err := export.ParseTriton(files["plan-bert-base/config.pbtxt"])
				if err != nil || len(c.InstanceGroup) != 1 || len(c.InstanceGroup[0].Gpus) != 2 || c.InstanceGroup[0].Name != "r0" {
					t.Errorf("bert-base: want one instance group r0 on GPUs [0 1]: %v %v", c, err)
				}
				r, err := export.ParseTriton(files["plan/config.pbtxt"])
				if err != nil || r.Backend != "python" || r.Parameters[ParamTable] == nil {
					t.Errorf("coordinator: %v %v", r, err)
				}
			case export.KServe:
				y := string(files["inferencegraph-plan-gear-0.yaml"])
				if !strings.Contains(y, `condition: outputs.#(name=="certainty").data.#(<0.158577)`) {
					t.Errorf("gear 0 graph: want a certainty condition on stage 1:\n%s", y)
				}
				if _, ok := files["inferencegraph-plan-gear-2.yaml"]; ok {
					t.Error("two gears: two graphs")
				}
				if !strings.Contains(string(files["inferenceservice-plan-bert-base.yaml"]), `nvidia.com/gpu: "2"`) {
					t.Error("bert-base replicas span 2 GPUs")
				}
			case export.Ray:
				if !strings.Contains(string(files[export.RayConfigFile]), "name: plan-router") {
					t.Error("no router deployment")
				}
			}
		})
	}
}

// TestPodGPUIDs: replicas the plan places on GPUs 5, 6 and 7 of an 8-GPU server are
// instance groups on GPUs 0..2 of the model's pod (export.PodGPUs), whose Deployment asks
// for those 3 GPUs, and the placement reads back as the plan's; past a server's GPUs the
// export is refused.
func TestPodGPUIDs(t *testing.T) {
	p := readPlan(t)
	cp := *cascadesec.PlanOf(p)
	cp.Placement = []cascadesec.Replica{{Model: "bert-base", GPUs: []int{5, 6}}, {Model: "bert-small", GPUs: []int{7}}, {Model: "bert-tiny", GPUs: []int{7}}}
	cascadesec.SetPlan(p, &cp)
	files, err := exporter(t, export.Triton).Export(p, export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"plan-bert-base/config.pbtxt": "name: \"r0\"\n  kind: KIND_GPU\n  count: 1\n  gpus: [ 0, 1 ]",
		"plan-bert-small/config.pbtxt":      "name: \"r1\"\n  kind: KIND_GPU\n  count: 1\n  gpus: [ 0 ]",
		"deploy/triton-plan-bert-base.yaml": `nvidia.com/gpu: "2"`, "deploy/triton-plan-bert-small.yaml": `nvidia.com/gpu: "1"`} {
		if !strings.Contains(string(files[name]), want) {
			t.Errorf("%s lacks %q:\n%s", name, want, files[name])
		}
	}
	got, _, err := ReadBack(export.Triton, files)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Placement, cp.Placement) {
		t.Errorf("placement read back %v, plan %v", got.Placement, cp.Placement)
	}
	gpu := p.Provenance.Embedded.Cluster.GPUs[0].Type
	if _, err := exporter(t, export.Triton).Export(p, export.Options{PerServer: map[string]int{gpu: 1}}); err == nil || !strings.Contains(err.Error(), "more than a server's 1 (per_server)") {
		t.Errorf("bert-base on 2 GPUs, 1 per server: %v, want a refusal", err)
	}
}

// TestReadBackRejects: files whose native settings disagree with the recorded plan, or that
// lose part of it, are errors.
func TestReadBackRejects(t *testing.T) {
	p := readPlan(t)
	tests := []struct {
		target, file, old, new, want string
	}{
		{export.Triton, "plan-bert-tiny/config.pbtxt", "gpus: [ 1 ]", "gpus: [ 0 ]", "instance group r1: GPUs [0]"},
		{export.Triton, "plan-bert-tiny/config.pbtxt", "max_batch_size: 1000", "max_batch_size: 10", "batch 1000 recorded"},
		{export.Triton, "plan/config.pbtxt", `backend: "python"`, `backend: "onnxruntime"`, "cascade.replicas: empty"},
		{export.KServe, "inferenceservice-plan-bert-small.yaml", "minReplicas: 2", "minReplicas: 1", "minReplicas = maxReplicas"},
		{export.KServe, "inferencegraph-plan-gear-3.yaml", "plan.dev/cascade.gear_index: \"3\"", "plan.dev/cascade.gear_index: \"2\"", "gear 2 recorded twice"},
		{export.Ray, export.RayConfigFile, "max_replicas: 2", "max_replicas: 3", "the target's settings say 3 replicas"},
		{export.Ray, export.RayConfigFile, "gpu: V100", "gpu: A100", "a gear plan has one GPU type"},
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
			if _, _, err := ReadBack(tc.target, files); err == nil || !strings.Contains(err.Error(), tc.want) {
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
		{"no cascade", func(p *formats.Plan) { cascadesec.SetPlan(p, nil) }, "no cascade section"},
		{"no cluster", func(p *formats.Plan) { p.Provenance.Embedded = nil }, "provenance.embedded.cluster: missing"},
		{"unplaced model", func(p *formats.Plan) { cascadesec.PlanOf(p).Placement = cascadesec.PlanOf(p).Placement[:2] }, `cascade.gears[0].models: "bert-base": model has no replica`},
		{"empty replica", func(p *formats.Plan) { cascadesec.PlanOf(p).Placement[1].GPUs = nil }, "cascade.placement[1].gpus: empty"},
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
		_, _, _ = ReadBack(export.Targets[int(target)%len(export.Targets)], export.Files{name: []byte(data)})
	})
}

// BenchmarkExport exports the bundled gear plan to all three targets, validation included.
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
