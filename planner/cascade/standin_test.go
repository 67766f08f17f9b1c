package cascade

import (
	"math"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
)

func standinTask(t testing.TB, f Family, n int, seed uint64) *Task {
	t.Helper()
	c := &cascadesec.Cascade{Name: f.Name, Models: f.Names(), Validation: f.Generate(n, seed)}
	tk, probs := NewTask(c, "workload: cascades[0]", []*formats.Profile{f.Profile()}, f.GPU, f.GPUMem)
	if probs != nil {
		t.Fatal(probs)
	}
	return tk
}

// TestStandinCalibration is the stand-ins' acceptance test: single-model accuracies near the
// paper's, some 2-stage cascade matching the top model at ≥ 3× less work, and the best
// cascade slightly above the top model.
func TestStandinCalibration(t *testing.T) {
	for _, f := range []Family{BERT, Llama} {
		t.Run(f.Name, func(t *testing.T) {
			tk := standinTask(t, f, 10000, 1)
			for m, sm := range f.Models {
				if got := tk.Accuracy(m); math.Abs(got-sm.Accuracy) > 0.012 {
					t.Errorf("%s: accuracy %.4f, want %.4f ± 0.012", sm.Name, got, sm.Accuracy)
				}
			}
			top := len(f.Models) - 1
			topAcc, topWork := tk.Accuracy(top), tk.Models[top].RtOpt
			all := tk.Enumerate(SearchOptions{})
			par := Pareto(all)
			best := par[0]
			t.Logf("%d cascades, %d Pareto; top model %.4f; best %s %.4f (work %.3g vs %.3g)", len(all), len(par), topAcc, tk.Names(&best), best.Acc, best.Work, topWork)
			if best.Acc <= topAcc {
				t.Errorf("best cascade %.4f does not exceed the top model %.4f", best.Acc, topAcc)
			}
			// [ours] acceptance bar: some cascade matches the top model at ≥ minRatio less
			// work (the paper reports 3.8× for BERT, §1 Fig. 1; our σ keeps the best cascade
			// within +0.3 pt of the top model, which caps the saving; see the report).
			minRatio := map[string]float64{"bert": 3, "llama": 2}[f.Name]
			ratio := 0.0
			for _, c := range par {
				if c.Acc >= topAcc-0.0005 && topWork/c.Work > ratio {
					ratio = topWork / c.Work
				}
			}
			t.Logf("best work saving at the top model's accuracy: %.2f×", ratio)
			if ratio < minRatio {
				t.Errorf("no cascade matches the top model at >= %.2fx less work (best %.2fx)", minRatio, ratio)
			}
			if best.Acc-topAcc > 0.01 {
				t.Errorf("best cascade %.4f exceeds the top model %.4f by more than 1 pt", best.Acc, topAcc)
			}
		})
	}
}

// TestEnumerateMatchesEvaluate checks the histogram enumeration against direct replay.
func TestEnumerateMatchesEvaluate(t *testing.T) {
	tk := standinTask(t, BERT, 2000, 7)
	all := tk.Enumerate(SearchOptions{Levels: 8})
	for i := 0; i < len(all); i += 37 {
		c := all[i]
		d := tk.Evaluate(c.Models, c.Thr)
		if math.Abs(c.Acc-d.Acc) > 1e-9 || math.Abs(c.Work-d.Work) > 1e-12 {
			t.Fatalf("%s: enumerate acc %.6f work %.6g, replay %.6f %.6g", tk.Names(&c), c.Acc, c.Work, d.Acc, d.Work)
		}
	}
}
