package simscale

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/sim"
)

// secs stand in for the system registry's sections (simscale's callers hand theirs down).
var secs = intree.Sections()

func readTestdata(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCasesScale builds every system's case at 1× and 2× for a short window and checks N
// doubles, the case runs and runs again (a fresh policy each time) to the same event count.
func TestCasesScale(t *testing.T) {
	ppipePlan, cascadePlan, dyorcWL := readTestdata(t, "sim/hc1-100.json"), readTestdata(t, "cascade/golden-plan.json"), readTestdata(t, "dyorc/workload.json")
	const dur = dataplane.Second / 2
	cases := []struct {
		name  string
		build func(k int) (*Case, error)
		units int // at 1×
		unit  string
	}{
		{"ppipe", func(k int) (*Case, error) { return PPipe(secs, ppipePlan, ModeBusyUntil, k, dur) }, 100, "gpus"},
		{"ppipe-interval", func(k int) (*Case, error) { return PPipe(secs, ppipePlan, ModeInterval, k, dur) }, 100, "gpus"},
		{"ppipe-retain", func(k int) (*Case, error) { return PPipe(secs, ppipePlan, ModeBusyUntilRetain, k, dur) }, 100, "gpus"},
		{"pard", func(k int) (*Case, error) { return PARD("pard", k, dur) }, 16, "workers"},
		{"qlm", func(k int) (*Case, error) { return QLM("qlm", k, dur) }, QLMBase, "instances"},
		{"cascade", func(k int) (*Case, error) { return Cascade(secs, cascadePlan, "cascadeserve", k, dur) }, 2 * CascadeBase, "gpus"},
		{"dyorc", func(k int) (*Case, error) { return DyOrc(secs, dyorcWL, "dyorc", k, dur) }, 8, "gpus"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []int{1, 2} {
				cs, err := c.build(k)
				if err != nil {
					t.Fatal(err)
				}
				if cs.Units != k*c.units || cs.Unit != c.unit {
					t.Errorf("k=%d: %d %s, want %d %s", k, cs.Units, cs.Unit, k*c.units, c.unit)
				}
				s1, err := cs.Run()
				if err != nil {
					t.Fatal(err)
				}
				s2, err := cs.Run()
				if err != nil {
					t.Fatal(err)
				}
				if e1, e2 := s1.Engine.Events(), s2.Engine.Events(); e1 <= 0 || e1 != e2 {
					t.Errorf("k=%d: events %d then %d, want the same positive count", k, e1, e2)
				}
			}
		})
	}
}

// TestRetainSameOutcome: the cases compact the engine as sweeps do; retaining every request
// instead changes nothing the run decides (the same events and the same metrics).
func TestRetainSameOutcome(t *testing.T) {
	plan := readTestdata(t, "sim/hc1-100.json")
	var runs []*sim.Sim
	var ms []any
	for _, mode := range []string{ModeBusyUntil, ModeBusyUntilRetain} {
		c, err := PPipe(secs, plan, mode, 1, 5*dataplane.Second)
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.Build()
		if err != nil {
			t.Fatal(err)
		}
		m, err := s.Run()
		if err != nil {
			t.Fatal(err)
		}
		runs, ms = append(runs, s), append(ms, m)
	}
	if !reflect.DeepEqual(ms[0], ms[1]) {
		t.Errorf("the metrics differ between compacting and retaining")
	}
	a, b := runs[0].Engine, runs[1].Engine
	if a.Events() != b.Events() || a.Finished() != b.Finished() {
		t.Errorf("compacting: %d events, %d finished; retaining: %d, %d", a.Events(), a.Finished(), b.Events(), b.Finished())
	}
	if a.RequestBase() == 0 {
		t.Errorf("the compacting run forgot no request (request base 0)")
	}
	if b.RequestBase() != 0 {
		t.Errorf("the retaining run forgot requests (request base %d)", b.RequestBase())
	}
}

func TestCasesBadInput(t *testing.T) {
	ppipePlan, dyorcWL := readTestdata(t, "sim/hc1-100.json"), readTestdata(t, "dyorc/workload.json")
	cases := []struct {
		name  string
		build func() (*Case, error)
		want  string
	}{
		{"ppipe mode", func() (*Case, error) { return PPipe(secs, ppipePlan, "fast", 1, 0) }, `mode "fast"`},
		{"ppipe factor", func() (*Case, error) { return PPipe(secs, ppipePlan, ModeBusyUntil, 0, 0) }, "factor 0"},
		{"ppipe not a plan", func() (*Case, error) { return PPipe(secs, dyorcWL, ModeBusyUntil, 1, 0) }, "hc1-100.json"},
		{"cascade not cascade", func() (*Case, error) { return Cascade(secs, ppipePlan, "cascadeserve", 1, 0) }, "cascade"},
		{"dyorc policy", func() (*Case, error) { return DyOrc(secs, dyorcWL, "nope", 1, 0) }, `"nope"`},
	}
	for _, c := range cases {
		if _, err := c.build(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}
