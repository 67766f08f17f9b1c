package cascade

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/cascadesec"
)

// candidateTable writes the cascades of up to two stages that task t's records enumerate as
// a candidates table, as a team that evaluated its cascades elsewhere would give them.
func candidateTable(t *Task) []cascadesec.CascadeCandidate {
	var out []cascadesec.CascadeCandidate
	for _, c := range t.Enumerate(SearchOptions{MaxLen: 2, Levels: 20}) {
		cd := cascadesec.CascadeCandidate{Accuracy: c.Acc, Reach: slices.Clone(c.Reach), Thresholds: slices.Clone(c.Thr)}
		for _, m := range c.Models {
			cd.Models = append(cd.Models, t.Models[m].Name)
		}
		out = append(out, cd)
	}
	return out
}

type gearView struct {
	models string
	thr    []float64
	b1     int
	share  [][]float64
}

func viewGears(t *Task, res *Result) []gearView {
	var out []gearView
	for _, g := range res.Gears {
		out = append(out, gearView{models: t.Names(&Cascade{Models: g.C.Models, Thr: make([]float64, len(g.C.Thr))}), thr: g.C.Thr, b1: g.B1, share: g.Share})
	}
	return out
}

// TestCandidatesPlanLikeRecords: a 2-stage candidates table plans the same gears (cascades,
// thresholds, triggers, shares) as the per-sample records it was evaluated from, under both
// SLOs: the table is a lossless summary of the records for planning.
func TestCandidatesPlanLikeRecords(t *testing.T) {
	tests := []struct {
		name string
		lat  time.Duration
		acc  float64
		gpus int
	}{
		{"accuracy slo", 0, 0.84, 2},
		{"latency slo", 400 * time.Millisecond, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := benchWorkload(BERT, 3000, 6, tc.lat, tc.acc)
			prof := []*formats.Profile{BERT.Profile()}
			tr, probs := NewTask(rec, "records", prof, BERT.GPU, BERT.GPUMem)
			if probs != nil {
				t.Fatal(probs)
			}
			cand := *rec
			cand.Validation, cand.Candidates = nil, candidateTable(tr)
			tcand, probs := NewTask(&cand, "candidates", prof, BERT.GPU, BERT.GPUMem)
			if probs != nil {
				t.Fatal(probs)
			}
			hw := Hardware{GPU: BERT.GPU, N: tc.gpus, PerServer: 2, Mem: BERT.GPUMem}
			r1, err := Plan(context.Background(), tr, rec, hw, Options{Search: SearchOptions{MaxLen: 2}})
			if err != nil {
				t.Fatal(err)
			}
			r2, err := Plan(context.Background(), tcand, &cand, hw, Options{})
			if err != nil {
				t.Fatal(err)
			}
			g1, g2 := viewGears(tr, r1), viewGears(tcand, r2)
			if len(g1) != len(g2) {
				t.Fatalf("%d gears from records, %d from candidates", len(g1), len(g2))
			}
			for i := range g1 {
				a, b := g1[i], g2[i]
				if a.models != b.models || !slices.Equal(a.thr, b.thr) || a.b1 != b.b1 || !slices.EqualFunc(a.share, b.share, func(x, y []float64) bool { return slices.Equal(x, y) }) {
					t.Errorf("gear %d: records plan %s %v b1=%d shares %v; candidates plan %s %v b1=%d shares %v", i, a.models, a.thr, a.b1, a.share, b.models, b.thr, b.b1, b.share)
				}
			}
			if math.Abs(r1.Acc-r2.Acc) > 1e-12 {
				t.Errorf("plan accuracy %.6f from records, %.6f from candidates", r1.Acc, r2.Acc)
			}
		})
	}
}

// TestScoreCertainties: certainties on another real scale (logit gaps, negative included)
// plan the same cascades with the thresholds mapped through the same monotone function:
// the threshold grid sits on quantiles of the scores.
func TestScoreCertainties(t *testing.T) {
	rec := benchWorkload(BERT, 3000, 6, 0, 0.84)
	logit := func(c float64) float64 { c = math.Min(math.Max(c, 1e-9), 1-1e-9); return math.Log(c / (1 - c)) }
	sc := *rec
	sc.Certainty = "score"
	sc.Validation = slices.Clone(rec.Validation)
	for i := range sc.Validation {
		sc.Validation[i].Cert = logit(sc.Validation[i].Cert)
	}
	prof := []*formats.Profile{BERT.Profile()}
	tr, probs := NewTask(rec, "records", prof, BERT.GPU, BERT.GPUMem)
	if probs != nil {
		t.Fatal(probs)
	}
	ts, probs := NewTask(&sc, "scores", prof, BERT.GPU, BERT.GPUMem)
	if probs != nil {
		t.Fatal(probs)
	}
	hw := Hardware{GPU: BERT.GPU, N: 2, PerServer: 2, Mem: BERT.GPUMem}
	r1, err := Plan(context.Background(), tr, rec, hw, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Plan(context.Background(), ts, &sc, hw, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r1.Gears) != len(r2.Gears) {
		t.Fatalf("%d gears from probabilities, %d from scores", len(r1.Gears), len(r2.Gears))
	}
	negative := false
	for i := range r1.Gears {
		a, b := r1.Gears[i].C, r2.Gears[i].C
		ok := slices.Equal(a.Models, b.Models) && a.Acc == b.Acc && len(a.Thr) == len(b.Thr)
		for j := range a.Thr {
			ok = ok && math.Abs(logit(a.Thr[j])-b.Thr[j]) < 1e-9
			negative = negative || b.Thr[j] < 0
		}
		if !ok {
			t.Errorf("gear %d: %s from probabilities, %s from scores", i, tr.Names(&a), ts.Names(&b))
		}
	}
	if !negative {
		t.Log("no negative threshold planned (the test still checks the mapping)")
	}
}
