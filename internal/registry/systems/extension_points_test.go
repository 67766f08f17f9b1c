package systems

import (
	"testing"

	"github.com/plan-dev/plan/formats"
)

// Each golden plan counts its GPUs through its section (formats.Plan.GPUsUsed), and a cost
// plan's count is the fleet it records, type by type.
func TestGoldenPlansCountTheirGPUs(t *testing.T) {
	reg := Default()
	for _, name := range []string{"cascade-sentiment", "demo-ppipe", "dyorc-small", "pard-4apps", "ppipe-2models", "qlm-3classes", "qlm-cost"} {
		p, err := formats.ReadInto[*formats.Plan]("../../../testdata/golden/"+name+".json", reg.Sections())
		if err != nil {
			t.Fatal(err)
		}
		used := p.GPUsUsed()
		total := 0
		for _, n := range used {
			total += n
		}
		if total == 0 {
			t.Errorf("%s: GPUsUsed = %v, want the GPUs it deploys", name, used)
		}
		if p.Fleet == nil {
			continue
		}
		for _, g := range p.Fleet.GPUsUsed {
			if used[g.GPU] != g.Count {
				t.Errorf("%s: %s: GPUsUsed %d, the fleet records %d", name, g.GPU, used[g.GPU], g.Count)
			}
		}
	}
}
