package cascade

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
)

// longTable is a candidates table over BERT's five stand-ins with cascades of 1 to 4 models:
// the 4-model cascade is the most accurate.
func longTable() *cascadesec.Cascade {
	c := &cascadesec.Cascade{Name: "long", Models: BERT.Names(), QPSMax: 2000, QPSRanges: 4,
		LatencySLO: &cascadesec.LatencySLO{Percentile: 0.95, Latency: formats.Duration(400 * time.Millisecond)}}
	for i, m := range BERT.Models {
		c.Candidates = append(c.Candidates, cascadesec.CascadeCandidate{Models: []string{m.Name}, Accuracy: 0.80 + 0.01*float64(i), Reach: []float64{1}})
	}
	c.Candidates = append(c.Candidates,
		cascadesec.CascadeCandidate{Models: []string{"bert-tiny", "bert-base"}, Thresholds: []float64{0.5}, Accuracy: 0.845, Reach: []float64{1, 0.4}},
		cascadesec.CascadeCandidate{Models: []string{"bert-tiny", "bert-small", "bert-base"}, Thresholds: []float64{0.5, 0.4}, Accuracy: 0.850, Reach: []float64{1, 0.4, 0.2}},
		cascadesec.CascadeCandidate{Models: []string{"bert-tiny", "bert-mini", "bert-small", "bert-base"}, Thresholds: []float64{0.5, 0.4, 0.3}, Accuracy: 0.855, Reach: []float64{1, 0.4, 0.25, 0.15}})
	return c
}

// TestCandidatesAnyLength: a candidates table's cascades are searched whatever their length
// (a 4-model cascade was dropped by the records search's K = 3); MaxLen, when given, bounds
// them; over records the search stays at 3 stages.
func TestCandidatesAnyLength(t *testing.T) {
	c := longTable()
	tk, probs := NewTask(c, "workload: cascades[0]", []*formats.Profile{BERT.Profile()}, BERT.GPU, BERT.GPUMem)
	if probs != nil {
		t.Fatal(probs)
	}
	longest := func(cs []Cascade) int {
		n := 0
		for _, x := range cs {
			n = max(n, len(x.Models))
		}
		return n
	}
	tests := []struct {
		name string
		o    SearchOptions
		n    int // cascades listed
		want int // longest
	}{
		{"default: the whole table", SearchOptions{}, 8, 4},
		{"max-len 4", SearchOptions{MaxLen: 4}, 8, 4},
		{"max-len 3", SearchOptions{MaxLen: 3}, 7, 3},
		{"singles", SearchOptions{Singles: true}, 5, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := tk.Enumerate(tc.o)
			if len(cs) != tc.n || longest(cs) != tc.want {
				t.Errorf("%d cascades, longest %d; want %d, longest %d", len(cs), longest(cs), tc.n, tc.want)
			}
		})
	}
	res, err := Plan(context.Background(), tk, c, Hardware{GPU: BERT.GPU, N: 2, PerServer: 2, Mem: BERT.GPUMem}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.Names(&res.Pareto[0]); got != "bert-tiny <0.5> bert-mini <0.4> bert-small <0.3> bert-base" {
		t.Errorf("most accurate Pareto cascade %q: want the 4-model candidate", got)
	}
	rec := benchWorkload(BERT, 2000, 4, 400*time.Millisecond, 0)
	tr, probs := NewTask(rec, "records", []*formats.Profile{BERT.Profile()}, BERT.GPU, BERT.GPUMem)
	if probs != nil {
		t.Fatal(probs)
	}
	if n := longest(tr.Enumerate(SearchOptions{Levels: 4})); n != 3 {
		t.Errorf("records: longest enumerated cascade %d, want 3", n)
	}
}

// TestCandidatesNeedSingleAccuracy: a model a candidate uses without a one-model candidate is
// an error naming the model and the field (its accuracy used to be invented from the cascades
// it ends).
func TestCandidatesNeedSingleAccuracy(t *testing.T) {
	tests := []struct {
		name string
		drop []string // single-model candidates removed
		want []string
	}{
		{"every single given", nil, nil},
		{"bert-mini missing", []string{"bert-mini"}, []string{`workload: cascades[0].candidates: model "bert-mini": no single-model candidate (models: [bert-mini]`}},
		{"two missing", []string{"bert-tiny", "bert-base"}, []string{`model "bert-tiny": no single-model candidate`, `model "bert-base": no single-model candidate`}},
		{"unused model needs none", []string{"bert-medium"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := longTable()
			var keep []cascadesec.CascadeCandidate
			for _, cd := range c.Candidates {
				if len(cd.Models) == 1 && strings.Contains(strings.Join(tc.drop, ","), cd.Models[0]) {
					continue
				}
				keep = append(keep, cd)
			}
			c.Candidates = keep
			_, probs := NewTask(c, "workload: cascades[0]", []*formats.Profile{BERT.Profile()}, BERT.GPU, BERT.GPUMem)
			if len(probs) != len(tc.want) {
				t.Fatalf("problems %q, want %d", probs, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(probs[i], w) {
					t.Errorf("problem %q, want %q", probs[i], w)
				}
			}
		})
	}
}
