package systems

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/internal/registry/system"
)

// A system's section is read only through the registry's set: with the in-tree registry a
// broken section is refused with its system's message, byte for byte; without a set the read is refused
// (formats.ErrNoSections), never structural only. The case fails if a system forgets to register
// its Section, which would otherwise let bad files through every production reader.
func TestSectionsRunFromTheRegistry(t *testing.T) {
	cases := []struct {
		name, file string
		kind       string
		from, to   string
		want       string
	}{
		{"dyorc plan", "../../../testdata/golden/dyorc-small.json", formats.KindPlan,
			`"replicas": 1`, `"replicas": 0`,
			`dyorc.deployments[0].replicas: 0: must be >= 1`},
		{"dyorc workflows", "../../../testdata/dyorc/workload.json", formats.KindWorkload,
			`"max_batch": 64`, `"max_batch": 0`,
			`workflows.services.vit.max_batch: 0: must be >= 1`},
		{"qlm plan", "../../../testdata/golden/qlm-3classes.json", formats.KindPlan,
			`"name": "llm-0",
        "gpu": "A100",
        "gpu_count": 1`, `"name": "llm-0",
        "gpu": "A100",
        "gpu_count": 0`,
			`qlm.instances[0].gpu_count: 0: must be >= 1`},
		{"qlm llm_classes", "../../../testdata/qlm/workload.yaml", formats.KindWorkload,
			`input_tokens: {mean: 150`, `input_tokens: {mean: 0`,
			`llm_classes[0].input_tokens.mean: 0: must be > 0`},
		{"cascade plan", "../../../testdata/golden/cascade-sentiment.json", formats.KindPlan,
			`"alpha": 8,`, `"alpha": -8,`,
			`cascade.alpha: -8: must be >= 0`},
		{"cascade cascades", "../../../testdata/cascade/workload-small.yaml", formats.KindWorkload,
			`qps_ranges: 8`, `qps_ranges: -8`,
			`cascades[0].qps_ranges: -8: must be >= 1 (or omitted)`},
		{"pard plan", "../../../testdata/golden/pard-4apps.json", formats.KindPlan,
			`"model": "face-recognition",
            "gpu": "2080Ti",
            "batch": 11,`, `"model": "face-recognition",
            "gpu": "2080Ti",
            "batch": 0,`,
			`pard.apps[0].modules[1].batch: 0: must be >= 1`},
		{"pard pipelines", "../../../testdata/pard/workload.json", formats.KindWorkload,
			`"rate_rps": 150,`, `"rate_rps": -150,`,
			`pipelines[0].rate_rps: -150: must be >= 0`},
		{"ppipe plan", "../../../testdata/golden/ppipe-2models.json", formats.KindPlan,
			`"strategy": "ppipe",
    "slo_margin"`, `"strategy": "ppipf",
    "slo_margin"`,
			`ppipe.strategy: "ppipf": must be one of ppipe, np, dart-r`},
		{"ppipe models", "../../../testdata/ppipe/workload.yaml", formats.KindWorkload,
			`slo: 60ms`, `slo: -60ms`,
			`models[1].slo: -60ms: must be >= 0 (0 = slo_scale x the fastest batch-1 latency)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := "f" + filepath.Ext(c.file)
			data, err := os.ReadFile(c.file)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := formats.Decode(name, data, Default().Sections()); err != nil {
				t.Fatalf("good file refused: %v", err)
			}
			bad := []byte(strings.Replace(string(data), c.from, c.to, 1))
			if string(bad) == string(data) {
				t.Fatalf("fixture has no %s", c.from)
			}
			_, err = formats.Decode(name, bad, Default().Sections())
			if err == nil || !strings.Contains(err.Error(), name+": "+c.want) {
				t.Errorf("with the registry: %v, want %s", err, c.want)
			}
			if _, err := formats.Decode(name, bad, nil); !errors.Is(err, formats.ErrNoSections) {
				t.Errorf("without a set: %v, want ErrNoSections (no structural-only read)", err)
			}
			doc, err := formats.Parse(name, bad, intree.Sections())
			if err != nil {
				t.Fatal(err)
			}
			if errs := formats.Validate(doc, nil); len(errs) != 1 || !strings.Contains(errs[0].Error(), "registered systems' sections: none were given") {
				t.Errorf("Validate without a set = %v, want the one no-sections problem", errs)
			}
			if got := formats.Validate(doc, Default().Sections()); len(got) != 1 || got[0].Error() != c.want {
				t.Errorf("Validate = %v, want %s", got, c.want)
			}
		})
	}
}

// Every in-tree system registers the Sections of its plan and workload sections (the keys
// its lookups go by), and every policy it registers serves deployments of its plan section:
// a deployer's Deployment.Kind is the plan section's key, so a policy serving another kind
// would never be offered for its plans.
func TestInTreeSystemsRegisterTheirSections(t *testing.T) {
	for _, s := range Default().Systems() {
		secs := s.Sections()
		if secs.Plan == nil || len(secs.WorkloadKeys()) == 0 {
			t.Errorf("%s: plan Section %v, workload Sections %v: want both", s.Name(), secs.Plan, secs.Workload)
			continue
		}
		d, ok := s.(system.Deploying)
		if !ok {
			t.Errorf("%s: no deployer", s.Name())
			continue
		}
		for _, pol := range d.Policies() {
			if !slices.Contains(pol.Serves, secs.PlanKey()) {
				t.Errorf("%s: policy %s serves %v, not its plan section %q", s.Name(), pol.Name, pol.Serves, secs.PlanKey())
			}
		}
	}
}

// formats/sections/intree is the in-tree registry's sections for the tests of packages
// below the registry: it must be exactly what Default registers, in the same order, or a
// plan read there would be checked by other rules than in production.
func TestInTreeSectionsMatchTheRegistry(t *testing.T) {
	got, want := intree.Sections(), Default().Sections()
	if !reflect.DeepEqual(got.Systems, want.Systems) {
		t.Errorf("intree systems %v, registry %v", got.Systems, want.Systems)
	}
	for _, kind := range []struct {
		name      string
		got, want []formats.Section
	}{{"plan", got.Plan, want.Plan}, {"workload", got.Workload, want.Workload}} {
		if len(kind.got) != len(kind.want) {
			t.Fatalf("%s sections: intree %d, registry %d", kind.name, len(kind.got), len(kind.want))
		}
		for i := range kind.got {
			if reflect.TypeOf(kind.got[i]) != reflect.TypeOf(kind.want[i]) || kind.got[i].Key() != kind.want[i].Key() {
				t.Errorf("%s section %d: intree %T %q, registry %T %q", kind.name, i, kind.got[i], kind.got[i].Key(), kind.want[i], kind.want[i].Key())
			}
		}
	}
}
