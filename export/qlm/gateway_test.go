package qlm

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/plan-dev/plan/export"
	"github.com/plan-dev/plan/export/exporttest"
	"github.com/plan-dev/plan/export/gateway"
	"github.com/plan-dev/plan/export/targets"
)

// TestGoldenGateway compares the inference-gateway export of the bundled aggregated and
// disaggregated plans with testdata/export/<plan>/inference-gateway/ after the registry's
// schema check and rules, then reads the files back: every instance with its engine, role,
// GPUs and pool, as the plan's fleet view (fleet) has them.
func TestGoldenGateway(t *testing.T) {
	for _, c := range []struct{ plan, name, golden string }{
		{planFile, "qlm-demo", goldenDir},
		{disaggPlanFile, "disagg", disaggGoldenDir},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := exporttest.ReadPlan(t, c.plan)
			files, err := exporter(t, gateway.Name).Export(p, export.Options{Name: c.name})
			if err != nil {
				t.Fatal(err)
			}
			if err := targets.Registry().Validate(files, true); err != nil {
				t.Fatal(err)
			}
			exporttest.Golden(t, filepath.Join(c.golden, gateway.Name), files, *update, "./export/qlm")
			got, err := gateway.ReadBack(files)
			if err != nil {
				t.Fatal(err)
			}
			l, err := build(p, export.Options{Name: c.name}.Defaults())
			if err != nil {
				t.Fatal(err)
			}
			want, err := fleet(l)
			if err != nil {
				t.Fatal(err)
			}
			if got.System != want.System || len(got.Instances) != len(want.Instances) {
				t.Fatalf("read back %s with %d instance(s), want %s with %d", got.System, len(got.Instances), want.System, len(want.Instances))
			}
			byName := map[string]int{}
			for i, in := range got.Instances {
				byName[in.Name] = i
			}
			for _, w := range want.Instances {
				g := got.Instances[byName[w.Name]]
				w.Served, w.KVCapacityTokens = nil, 0 // the pool's names; the KV capacity sizes the picker's index only
				g.Served = nil
				if !reflect.DeepEqual(g, w) {
					t.Errorf("instance %s: read back %+v\nwant %+v", w.Name, g, w)
				}
				if got.Pools[w.Model] == "" {
					t.Errorf("instance %s: model %s has no pool", w.Name, w.Model)
				}
			}
			for _, cl := range want.Classes {
				if o, ok := got.Objectives[cl.Name]; !ok || o.Pool != got.Pools[cl.Model] {
					t.Errorf("class %s: objective %+v, want one on pool %s", cl.Name, o, got.Pools[cl.Model])
				}
			}
		})
	}
}
