package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/planner"
)

// twoModels is a PPipe workload of two models, each with its own SLO, decoded as a file
// would be.
func twoModels(t *testing.T, secs *formats.SectionSet, a, b time.Duration) *formats.Workload {
	t.Helper()
	doc := fmt.Sprintf(`{"apiVersion":%q,"kind":"Workload","metadata":{"name":"w"},"models":[{"name":"a","slo":%q},{"name":"b","slo":%q}]}`,
		formats.APIVersion, a, b)
	w, err := formats.DecodeInto[*formats.Workload]("workload.json", []byte(doc), secs)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestEachSLOAlone: with two SLOs, each is relaxed on its own (the other as given) to the
// smallest factor that succeeds, checked at 95% of it, and one that another target binds
// says so.
func TestEachSLOAlone(t *testing.T) {
	secs := &formats.SectionSet{Systems: []string{"ppipe"}, Workload: []formats.Section{ppipesec.WorkloadSection}}
	ms := time.Millisecond
	cases := []struct {
		name string
		// feasible is the fake solve's rule over the two SLOs.
		feasible func(a, b time.Duration) bool
		// want are each SLO's relaxed value alone ("" = another target binds).
		want [2]string
		all  float64
	}{
		{"one binds", func(a, b time.Duration) bool { return a >= 150*ms && b >= 100*ms }, [2]string{"150ms", ""}, 1.5},
		{"a trade-off", func(a, b time.Duration) bool { return a+b >= 400*ms }, [2]string{"300ms", "300ms"}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			solves := 0
			probe := func(_ context.Context, in planner.Inputs, _ planner.Settings) (Outcome, error) {
				solves++
				m := ppipesec.ModelsOf(in.Workload)
				if c.feasible(m[0].SLO.D(), m[1].SLO.D()) {
					return Outcome{Feasible: true, Plan: &formats.Plan{}}, nil
				}
				return Outcome{Refusal: fmt.Errorf("%w: slo", planner.ErrInfeasible)}, nil
			}
			in := planner.Inputs{Cluster: cluster(4, nil), Workload: twoModels(t, secs, 100*ms, 100*ms)}
			fail, _ := probe(context.Background(), in, planner.Settings{})
			ex, err := Explain(context.Background(), Request{In: in, Secs: secs, Probe: probe, Failure: fail})
			if err != nil || ex == nil {
				t.Fatalf("Explain: %v, %v", ex, err)
			}
			if ex.SLO == nil || !ex.SLO.Found || ex.SLO.Scale < c.all || ex.SLO.Scale > c.all*(1+Tolerance)*1.01 {
				t.Errorf("every SLO: %+v, want ×%g", ex.SLO, c.all)
			}
			if len(ex.EachSLO) != 2 {
				t.Fatalf("each SLO: %+v (%s)", ex.EachSLO, ex.EachSLONote)
			}
			for i, e := range ex.EachSLO {
				r := e.Relax
				if c.want[i] == "" {
					if r.Found || !strings.Contains(r.None, "another target binds") {
						t.Errorf("%s alone: %+v, want another target binds", e.Target.Path, r)
					}
					continue
				}
				if !r.Found || !r.Narrowed || !r.CheckedOK {
					t.Fatalf("%s alone: %+v", e.Target.Path, r)
				}
				want, _ := time.ParseDuration(c.want[i])
				got, _ := time.ParseDuration(r.SLOs[0].Relaxed)
				if got < want || float64(got) > float64(want)*(1+Tolerance)*1.01 {
					t.Errorf("%s alone → %s, threshold %s", e.Target.Path, got, want)
				}
				// Tight: the stated SLO succeeds, 95% of it fails, the other as given.
				for _, k := range []float64{r.Scale, CheckShare * r.Scale} {
					rin, _, err := ScaleSLO(in, planner.Settings{}, secs, e.Target.Path, k)
					if err != nil {
						t.Fatal(err)
					}
					out, _ := probe(context.Background(), rin, planner.Settings{})
					if want := k == r.Scale; out.Feasible != want {
						t.Errorf("%s ×%g: feasible %v, want %v", e.Target.Path, k, out.Feasible, want)
					}
				}
			}
			text := strings.Join(ex.Lines(), "\n")
			if !strings.Contains(text, "each SLO alone, the others as given:") || !strings.Contains(text, "a slo 100ms → ") {
				t.Errorf("text:\n%s", text)
			}
			js, _ := json.Marshal(ex)
			if !strings.Contains(string(js), `"each_slo":[{"target":{"path":"models[0].slo"`) {
				t.Errorf("JSON: %s", js)
			}
		})
	}
}

// TestEachSLOBounded: at most MaxEachSLO SLOs are searched alone, those of the applications
// the failed plan misses first, and the rest are named.
func TestEachSLOBounded(t *testing.T) {
	var slos []SLOTarget
	for i := range MaxEachSLO + 2 {
		slos = append(slos, SLOTarget{Path: fmt.Sprintf("llm_classes[%d].ttft_slo", i), Name: fmt.Sprintf("c%d", i), Value: "1s"})
	}
	fail := Outcome{Plan: &formats.Plan{Prediction: &formats.Prediction{Apps: []formats.AppPrediction{{Name: "c5", Meets: false}, {Name: "c0", Meets: true}}}}}
	order := missedFirst(slos, fail)
	if order[0].Name != "c5" || order[1].Name != "c0" || len(order) != len(slos) {
		t.Errorf("order %v: want c5 (missed) first, then the workload's order", order)
	}
}
