package systems

import (
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/internal/systems/toysys"
)

// Every system answers the extension points shared code asks through (formats.RateTargeter,
// formats.GPUCounter): a system whose workload section were no RateTargeter would plan every
// trace window, rate margin and frontier point at its workload's own rates and be predicted
// at its plan's stated rate; one whose plan section were no GPUCounter would get an empty
// fleet under --objective cost and pass `plan check`'s fleet check with any count. The toy
// proves a sixth system answers them as the five do.
func TestSystemsAnswerTheExtensionPoints(t *testing.T) {
	for _, s := range append(InTree(), toysys.System()) {
		for _, w := range s.Sections.Workload {
			if _, ok := w.(formats.RateTargeter); !ok {
				t.Errorf("%s: workload section %q (%T) is no formats.RateTargeter", s.Name, w.Key(), w)
			}
		}
		if _, ok := s.Sections.Plan.(formats.GPUCounter); !ok {
			t.Errorf("%s: plan section %q (%T) is no formats.GPUCounter", s.Name, s.Sections.Plan.Key(), s.Sections.Plan)
		}
	}
}

// Each golden plan counts its GPUs through its section (formats.Plan.GPUsUsed), and a cost
// plan's count is the fleet it records, type by type.
func TestGoldenPlansCountTheirGPUs(t *testing.T) {
	reg := Default()
	for _, name := range []string{"cascade-sentiment", "demo-ppipe", "dyorc-small", "pard-4apps", "ppipe-2models", "qlm-3classes", "qlm-cost"} {
		p, err := formats.ReadInto[*formats.Plan]("../../testdata/golden/"+name+".json", reg.Sections())
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
