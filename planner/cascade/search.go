package cascade

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Cascade is an ordered list of models with the certainty thresholds between them
// (CascadeServe §2.1): after stage i a request moves on iff cert_i < Thr[i] (strictly); the
// last stage always answers.
type Cascade struct {
	Models []int
	Thr    []float64
	// Acc is the validation accuracy; Reach[i] the fraction of requests reaching stage i
	// (Reach[0] = 1); Work = Σ Reach[i]·rt(m_i) in GPU-seconds per request.
	Acc   float64
	Reach []float64
	Work  float64
}

// Key identifies the cascade (models and thresholds).
func (c *Cascade) Key() string {
	var b strings.Builder
	for i, m := range c.Models {
		if i > 0 {
			fmt.Fprintf(&b, "<%.6g>", c.Thr[i-1])
		}
		fmt.Fprintf(&b, "%d", m)
	}
	return b.String()
}

// Names renders the cascade with model names: "bert-tiny <0.31> bert-base".
func (t *Task) Names(c *Cascade) string {
	var b strings.Builder
	for i, m := range c.Models {
		if i > 0 {
			fmt.Fprintf(&b, " <%.3g> ", c.Thr[i-1])
		}
		b.WriteString(t.Models[m].Name)
	}
	return b.String()
}

// SearchOptions bound the cascade space the planner enumerates before Pareto filtering:
// the longest cascade, the threshold grid per model and its ordering (CascadeServe §4.2).
type SearchOptions struct {
	// MaxLen is the longest cascade K: 1..3 over validation records (artifact 3; 0 = 3);
	// over a candidates table any length (0 = every listed cascade).
	MaxLen int
	// Levels is the threshold grid size T (artifact 20).
	Levels int
	// Monotone keeps only cost-ascending cascades, as the paper implies (default: any order,
	// as the authors' artifact samples).
	Monotone bool
	// Linspace uses linspace(0, TMax, Levels) thresholds instead of per-model certainty
	// quantiles (our default: a fixed linspace depends on each model's certainty scale).
	Linspace bool
	TMax     float64
	// Singles restricts the space to single-model cascades (the no-cascade ablation).
	Singles bool
}

// thresholds returns model m's threshold grid: 0 (a cut), then Levels−1 ascending values
// at certainty quantiles j/Levels (evenly spaced forward fractions), deduplicated.
func (t *Task) thresholds(m int, o SearchOptions) []float64 {
	out := []float64{0}
	if t.Score && !o.Linspace {
		// scores may be negative (logit gaps): the cut is below every score, so that
		// level() counts every sample at level ≥ 1
		out[0] = math.Inf(-1)
	}
	if o.Linspace {
		for j := 1; j < o.Levels; j++ {
			out = append(out, o.TMax*float64(j)/float64(o.Levels-1))
		}
		return out
	}
	cs := slices.Clone(t.Cert[m])
	sort.Float64s(cs)
	for j := 1; j < o.Levels; j++ {
		q := cs[min(len(cs)-1, j*len(cs)/o.Levels)]
		if q > out[len(out)-1] {
			out = append(out, q)
		}
	}
	return out
}

// level returns the number of thresholds ≤ x (≥ 1, since thr[0] = 0 ≤ x): sample s
// moves on under threshold index j iff level ≤ j.
func level(thr []float64, x float64) int {
	return sort.Search(len(thr), func(i int) bool { return thr[i] > x })
}

// Enumerate evaluates every cascade of up to MaxLen (≤ 3 over records) distinct models on the threshold
// grid. The artifact samples S = 50,000 random cascades, or enumerates when the space is
// smaller (both paper set-ups are); per-level histograms make exhaustive evaluation cost
// O(N + T²) per ordered model triple, so we always enumerate.
func (t *Task) Enumerate(o SearchOptions) []Cascade {
	if o.Levels < 2 {
		o.Levels = 20
	}
	if len(t.Candidates) > 0 {
		// A candidates table is searched whole by default: its cascades were evaluated
		// elsewhere, at any length (cascadesys refuses a --max-len that would cut one).
		if o.MaxLen < 1 {
			o.MaxLen = math.MaxInt
		}
		if o.Singles {
			o.MaxLen = 1
		}
		return t.listed(o)
	}
	if o.MaxLen < 1 {
		o.MaxLen = 3
	}
	// The histograms below cover up to 3 stages (the artifact's K = 3); cascadesys refuses a
	// longer --max-len over records rather than cutting it here.
	if o.MaxLen > 3 {
		o.MaxLen = 3
	}
	if o.Singles {
		o.MaxLen = 1
	}
	M := len(t.Models)
	rt := make([]float64, M)
	for m := range t.Models {
		rt[m] = t.Models[m].RtOpt
	}
	thr := make([][]float64, M)
	lvl := make([][]int, M)
	for m := 0; m < M; m++ {
		thr[m] = t.thresholds(m, o)
		lvl[m] = make([]int, t.N)
		for s := 0; s < t.N; s++ {
			lvl[m][s] = level(thr[m], t.Cert[m][s])
		}
	}
	N := float64(t.N)
	ok := func(a, b int) bool { return !o.Monotone || rt[a] < rt[b] || (rt[a] == rt[b] && a < b) }
	var out []Cascade
	for a := 0; a < M; a++ {
		out = append(out, Cascade{Models: []int{a}, Acc: t.Accuracy(a), Reach: []float64{1}, Work: rt[a]})
	}
	if o.MaxLen >= 2 {
		for a := 0; a < M; a++ {
			La := len(thr[a])
			for b := 0; b < M; b++ {
				if a == b || !ok(a, b) {
					continue
				}
				cnt, ca, cb := make([]float64, La+1), make([]float64, La+1), make([]float64, La+1)
				for s := 0; s < t.N; s++ {
					l := lvl[a][s]
					cnt[l]++
					if t.Correct[a][s] {
						ca[l]++
					}
					if t.Correct[b][s] {
						cb[l]++
					}
				}
				var totA float64
				for _, x := range ca {
					totA += x
				}
				var fw, fa, fb float64 // Σ_{l≤j} cnt, ca, cb
				for j := 1; j < La; j++ {
					fw += cnt[j]
					fa += ca[j]
					fb += cb[j]
					if fw == 0 {
						continue
					}
					f := fw / N
					out = append(out, Cascade{Models: []int{a, b}, Thr: []float64{thr[a][j]},
						Acc: (totA - fa + fb) / N, Reach: []float64{1, f}, Work: rt[a] + f*rt[b]})
				}
			}
		}
	}
	if o.MaxLen >= 3 {
		for a := 0; a < M; a++ {
			La := len(thr[a])
			for b := 0; b < M; b++ {
				if b == a || !ok(a, b) {
					continue
				}
				Lb := len(thr[b])
				for c := 0; c < M; c++ {
					if c == a || c == b || !ok(b, c) {
						continue
					}
					// H[la][lb] = (count, correct a, correct b, correct c).
					H := make([][4]float64, (La+1)*(Lb+1))
					var totA float64
					for s := 0; s < t.N; s++ {
						h := &H[lvl[a][s]*(Lb+1)+lvl[b][s]]
						h[0]++
						if t.Correct[a][s] {
							h[1]++
							totA++
						}
						if t.Correct[b][s] {
							h[2]++
						}
						if t.Correct[c][s] {
							h[3]++
						}
					}
					rows := make([][4]float64, Lb+1) // Σ_{la≤j2} H[la][lb]
					var fa float64
					for j2 := 1; j2 < La; j2++ {
						for lb := 0; lb <= Lb; lb++ {
							h := H[j2*(Lb+1)+lb]
							for k := 0; k < 4; k++ {
								rows[lb][k] += h[k]
							}
							fa += h[1]
						}
						var reach2, allB float64
						for lb := 0; lb <= Lb; lb++ {
							reach2 += rows[lb][0]
							allB += rows[lb][2]
						}
						if reach2 == 0 {
							continue
						}
						var r3, fb, fc float64
						for j3 := 1; j3 < Lb; j3++ {
							r3 += rows[j3][0]
							fb += rows[j3][2]
							fc += rows[j3][3]
							if r3 == 0 {
								continue
							}
							f2, f3 := reach2/N, r3/N
							out = append(out, Cascade{Models: []int{a, b, c}, Thr: []float64{thr[a][j2], thr[b][j3]},
								Acc:   (totA - fa + (allB - fb) + fc) / N,
								Reach: []float64{1, f2, f3}, Work: rt[a] + f2*rt[b] + f3*rt[c]})
						}
					}
				}
			}
		}
	}
	return out
}

// Pareto returns the cascades no other beats on both accuracy (↑) and work (↓), most
// accurate first; ties keep the shorter, then the lexicographically smaller cascade.
func Pareto(cs []Cascade) []Cascade {
	idx := make([]int, len(cs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(x, y int) bool {
		a, b := &cs[idx[x]], &cs[idx[y]]
		if a.Work != b.Work {
			return a.Work < b.Work
		}
		if a.Acc != b.Acc {
			return a.Acc > b.Acc
		}
		if len(a.Models) != len(b.Models) {
			return len(a.Models) < len(b.Models)
		}
		return a.Key() < b.Key()
	})
	var out []Cascade
	best := math.Inf(-1)
	for _, i := range idx {
		if cs[i].Acc > best+tieTol {
			best = cs[i].Acc
			out = append(out, cs[i])
		}
	}
	slices.Reverse(out)
	return out
}

// listed returns the candidates table's cascades (evaluated elsewhere) within the search
// bounds of o: their measured accuracy and reach, and the work of §2 from our profiles.
func (t *Task) listed(o SearchOptions) []Cascade {
	var out []Cascade
	for _, cd := range t.Candidates {
		if len(cd.Models) > o.MaxLen {
			continue
		}
		mono := true
		for i := 1; i < len(cd.Models); i++ {
			a, b := t.Models[cd.Models[i-1]].RtOpt, t.Models[cd.Models[i]].RtOpt
			mono = mono && (a < b || a == b && cd.Models[i-1] < cd.Models[i])
		}
		if o.Monotone && !mono {
			continue
		}
		c := Cascade{Models: slices.Clone(cd.Models), Thr: slices.Clone(cd.Thr), Acc: cd.Acc, Reach: slices.Clone(cd.Reach)}
		if len(c.Thr) == 0 {
			c.Thr = nil
		}
		for i, m := range c.Models {
			c.Work += c.Reach[i] * t.Models[m].RtOpt
		}
		out = append(out, c)
	}
	return out
}

// candidate returns the listed cascade with these models and thresholds.
func (t *Task) candidate(models []int, thr []float64) (Cascade, bool) {
	for _, c := range t.listed(SearchOptions{MaxLen: math.MaxInt}) {
		if slices.Equal(c.Models, models) && len(c.Thr) == len(thr) {
			same := true
			for i := range thr {
				same = same && math.Abs(c.Thr[i]-thr[i]) <= relTol*math.Max(1, math.Abs(thr[i]))
			}
			if same {
				return c, true
			}
		}
	}
	return Cascade{}, false
}

// Evaluate replays cascade c over the validation samples (the direct definition of §2.1;
// Enumerate's histograms must agree with it); from a candidates table it is the listed
// cascade's measured accuracy and reach (the replay of the synthetic realization where the
// table does not list it).
func (t *Task) Evaluate(models []int, thr []float64) Cascade {
	if len(t.Candidates) > 0 {
		if c, ok := t.candidate(models, thr); ok {
			return c
		}
	}
	c := Cascade{Models: slices.Clone(models), Thr: slices.Clone(thr), Reach: make([]float64, len(models))}
	var right int
	for s := 0; s < t.N; s++ {
		for i, m := range models {
			c.Reach[i]++
			if i == len(models)-1 || !(t.Cert[m][s] < thr[i]) {
				if t.Correct[m][s] {
					right++
				}
				break
			}
		}
	}
	for i := range c.Reach {
		c.Reach[i] /= float64(t.N)
		c.Work += c.Reach[i] * t.Models[models[i]].RtOpt
	}
	c.Acc = float64(right) / float64(t.N)
	return c
}
