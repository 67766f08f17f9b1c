package cascade

// This file turns a candidates table (cascades evaluated elsewhere: models, thresholds,
// measured accuracy, per-stage reach; CascadeServe §2) into a Task. The planner searches
// the listed cascades themselves; the simulators, which forward requests on per-sample
// certainties (App. C.1), replay a synthetic realization of the table instead of records.

import (
	"fmt"
	"math"
	"math/rand"
	"sort"

	"github.com/plan-dev/plan/formats/sections/cascadesec"
)

// Candidate is one cascade of a candidates table, with model indices into Task.Models.
type Candidate struct {
	Models []int
	Thr    []float64
	Acc    float64
	Reach  []float64
}

// CandidateSamples is the size of a candidates table's synthetic realization.
const CandidateSamples = 2000

// fromCandidates fills t from c's candidates table: the candidates, then a synthetic
// per-sample realization for the simulators. Model m's certainty on sample s is placed so
// that, for every threshold τ some candidate applies after m, cert < τ holds on the
// fraction of samples the table says that stage forwards (Reach[i+1]/Reach[i]), reading
// the fractions as a monotone function of τ (running maximum where the table disagrees
// with itself). Correctness draws model m's single-model accuracy: its one-model
// candidate's. A model some candidate uses without a one-model candidate is an error naming
// it: no number in the table stands for its accuracy (the mean of the cascades it ends
// mixes in every earlier stage's answers), and an invented one would move every simulated
// accuracy. Samples are a seeded
// permutation per model, so stages forward independently [ours: the table says nothing
// about how stages correlate]; accuracy reported for a candidates plan is the table's.
func (t *Task) fromCandidates(c *cascadesec.Cascade, p string, index map[string]int) []string {
	var probs []string
	type point struct{ thr, frac float64 }
	pts := make([][]point, len(t.Models))
	used := make([]bool, len(t.Models))
	single := make([]float64, len(t.Models))
	for i := range single {
		single[i] = -1
	}
	for j, cd := range c.Candidates {
		var ms []int
		for k, name := range cd.Models {
			m, ok := index[name]
			if !ok {
				probs = append(probs, fmt.Sprintf("%s.candidates[%d].models[%d]: %q: not in %s.models", p, j, k, name, p))
				continue
			}
			ms = append(ms, m)
		}
		if len(ms) != len(cd.Models) || len(ms) == 0 || len(cd.Thresholds) != len(ms)-1 || len(cd.Reach) != len(ms) {
			probs = append(probs, fmt.Sprintf("%s.candidates[%d]: models, thresholds and reach do not line up", p, j))
			continue
		}
		t.Candidates = append(t.Candidates, Candidate{Models: ms, Thr: cd.Thresholds, Acc: cd.Accuracy, Reach: cd.Reach})
		for _, m := range ms {
			used[m] = true
		}
		if len(ms) == 1 {
			single[ms[0]] = cd.Accuracy
		}
		for i := 0; i+1 < len(ms); i++ {
			if cd.Reach[i] > 0 {
				pts[ms[i]] = append(pts[ms[i]], point{cd.Thresholds[i], cd.Reach[i+1] / cd.Reach[i]})
			}
		}
	}
	for m, u := range used {
		if u && single[m] < 0 {
			probs = append(probs, fmt.Sprintf("%s.candidates: model %q: no single-model candidate (models: [%s], accuracy: its measured accuracy, reach: [1]): its accuracy is needed to simulate the cascades that use it",
				p, t.Models[m].Name, t.Models[m].Name))
		}
	}
	if len(probs) > 0 {
		return probs
	}
	N := CandidateSamples
	t.N = N
	t.Cert = make([][]float64, len(t.Models))
	t.Correct = make([][]bool, len(t.Models))
	for m := range t.Models {
		ps := pts[m]
		sort.Slice(ps, func(a, b int) bool { return ps[a].thr < ps[b].thr })
		// merge equal thresholds (largest fraction), then a running maximum: monotone
		var thr, frac []float64
		for _, x := range ps {
			f := x.frac
			if len(frac) > 0 {
				f = math.Max(f, frac[len(frac)-1])
			}
			if len(thr) > 0 && thr[len(thr)-1] == x.thr {
				frac[len(frac)-1] = f
				continue
			}
			thr, frac = append(thr, x.thr), append(frac, f)
		}
		acc := single[m] // -1 for a model no candidate uses: never answers
		rng := rand.New(rand.NewSource(int64(m) + 1))
		perm, perm2 := rng.Perm(N), rng.Perm(N)
		t.Cert[m] = make([]float64, N)
		t.Correct[m] = make([]bool, N)
		for s := 0; s < N; s++ {
			u := (float64(perm[s]) + 0.5) / float64(N)
			t.Cert[m][s] = certAt(thr, frac, u, t.Score)
			t.Correct[m][s] = (float64(perm2[s])+0.5)/float64(N) < acc
		}
	}
	return nil
}

// certAt is the certainty of a sample at uniform position u: below thr[j] exactly when
// u < frac[j] (frac non-decreasing in thr), placed midway between thresholds so float32
// rounding in the data plane cannot move it across one.
func certAt(thr, frac []float64, u float64, score bool) float64 {
	if len(thr) == 0 {
		return 0
	}
	j := sort.Search(len(frac), func(i int) bool { return frac[i] > u })
	switch {
	case j == len(thr):
		if !score && thr[j-1] < 1 {
			return (thr[j-1] + 1) / 2
		}
		return thr[j-1] + 1
	case j == 0:
		if !score {
			return thr[0] / 2
		}
		return thr[0] - 1
	}
	return (thr[j-1] + thr[j]) / 2
}
