package pard

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/export/exporttest"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/pardsec"
)

var update = flag.Bool("update", false, "rewrite testdata/export/pard golden files")

// planFile is a PARD plan solved from testdata/pard (`plan solve --deterministic --profile
// testdata/pard/profile.json --cluster testdata/pard/cluster.json --workload
// testdata/pard/workload.json`): three chains (tm, lv, ga) and one DAG (da).
const (
	planFile  = "../../testdata/export/pard/plan.json"
	goldenDir = "../../testdata/export/pard"
)

func readPlan(t testing.TB) *formats.Plan {
	t.Helper()
	return exporttest.ReadPlan(t, planFile)
}

func exporter(t testing.TB, target string) export.Exporter {
	return exporttest.Exporter(t, Exporters(), target)
}

// TestGolden compares every target's files with testdata/export/pard/<target>/ (`go test
// ./export/pard -update` rewrites them) after checking them against the schemas, and reads
// them back: the modules' GPU types, workers and batch sizes equal the plan's.
func TestGolden(t *testing.T) {
	p := readPlan(t)
	for _, target := range export.Targets {
		t.Run(target, func(t *testing.T) {
			files, err := exporter(t, target).Export(p, export.Options{Name: "pard"})
			if err != nil {
				t.Fatal(err)
			}
			if err := export.Validate(files); err != nil {
				t.Fatal(err)
			}
			exporttest.Golden(t, filepath.Join(goldenDir, target), files, *update, "./export/pard")
			got, err := export.ReadBack(target, files)
			if err != nil {
				t.Fatal(err)
			}
			if w := Placements(p); !reflect.DeepEqual(got, w) {
				t.Errorf("read back:\n%v\nplan:\n%v", got, w)
			}
		})
	}
}

// TestChains: chains get an ensemble and a Sequence graph, the DAG application (da) neither;
// its Ray deployments name both successors of the fan-out.
func TestChains(t *testing.T) {
	p := readPlan(t)
	tri, _ := exporter(t, export.Triton).Export(p, export.Options{})
	for _, app := range []string{"tm", "lv", "ga"} {
		c, err := export.ParseTriton(tri["plan-"+app+"/config.pbtxt"])
		if err != nil || c.Platform != "ensemble" {
			t.Errorf("%s: ensemble %v %v", app, c, err)
		}
	}
	if _, ok := tri["plan-da/config.pbtxt"]; ok {
		t.Error("da is a DAG: no ensemble")
	}
	ks, _ := exporter(t, export.KServe).Export(p, export.Options{})
	// A DAG is exported as a Sequence over its levels, parallel modules in an Ensemble node.
	if g := string(ks["inferencegraph-plan-da.yaml"]); !strings.Contains(g, "routerType: Ensemble") || !strings.Contains(g, "nodeName: level-") {
		t.Errorf("da is a DAG: want a graph of its levels with an Ensemble node:\n%s", g)
	}
	if _, ok := ks["inferencegraph-plan-tm.yaml"]; !ok {
		t.Error("tm: no Sequence graph")
	}
	ray, _ := exporter(t, export.Ray).Export(p, export.Options{})
	if y := string(ray[export.RayConfigFile]); !strings.Contains(y, "- plan-da-face-recognition\n      - plan-da-pose-recognition") {
		t.Errorf("da's person-detection must fan out to face- and pose-recognition:\n%s", y)
	}
	if _, err := exporter(t, export.Triton).Export(&formats.Plan{}, export.Options{}); err == nil {
		t.Error("a plan without a pard section must fail")
	}
}

// BenchmarkExport exports the PARD plan to all three targets, validation included.
func BenchmarkExport(b *testing.B) {
	p := readPlan(b)
	for b.Loop() {
		for _, target := range export.Targets {
			files, err := exporter(b, target).Export(p, export.Options{})
			if err != nil {
				b.Fatal(err)
			}
			if err := export.Validate(files); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestRoundTripGolden exports every golden PARD plan of testdata/golden to every target and
// reads the placements back.
func TestRoundTripGolden(t *testing.T) {
	ents, err := os.ReadDir("../../testdata/golden")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		p, err := formats.ReadInto[*formats.Plan](filepath.Join("../../testdata/golden", e.Name()), intree.Sections())
		if err != nil {
			t.Fatal(err)
		}
		if pardsec.PlanOf(p) == nil {
			continue
		}
		for _, target := range export.Targets {
			t.Run(name+"/"+target, func(t *testing.T) {
				files, err := exporter(t, target).Export(p, export.Options{Name: name})
				if err != nil {
					t.Fatal(err)
				}
				if err := export.Validate(files); err != nil {
					t.Fatal(err)
				}
				got, err := export.ReadBack(target, files)
				if err != nil {
					t.Fatal(err)
				}
				if w := Placements(p); !reflect.DeepEqual(got, w) {
					t.Errorf("read back:\n%v\nplan:\n%v", got, w)
				}
			})
		}
	}
}
