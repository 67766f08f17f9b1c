package ppipe

import (
	"math"
	"slices"
)

// option is one ω = (v, b, i, j) of a partition (l, d): blocks [i, j) on 1/v slices at batch b.
type option struct {
	v, b, i, j int
	C          float64 // stage latency, µs
	Y          float64 // outgoing transfer of one batch, µs (0 for the last stage)
	Beta       float64 // batch-formation allowance, µs (head stage only)
	X          float64 // throughput of one slice, req/s (compute and NIC caps)
	G          int     // upper bound on useful slices
}

// lat is the option's contribution to the pipeline latency, µs.
func (o *option) lat() float64 { return o.C + o.Y + o.Beta }

// tmpl is a pipeline template: a sequence of GPU types with the surviving options per stage.
type tmpl struct {
	types   []int
	replica int // 0 for the first copy of a type sequence
	stages  [][]option
	xmax    float64 // upper bound on the pipeline's throughput, req/s
	maxLat  float64 // longest chain through surviving options, µs
}

// modelSpace is the pruned option space of one model.
type modelSpace struct {
	md     *modelData
	tmpls  []*tmpl
	minLat float64 // shortest chain of any template at any SLO, µs (+Inf if none exists)
	// raw and kept count options before and after pruning (reported in the plan's extras).
	raw, kept int
}

// spaceConfig restricts the enumeration (NP: P = 1 and whole GPUs; DART-r: whole GPUs).
type spaceConfig struct {
	// cost, when set, is the price per hour of each GPU type (by index): the MILP minimises
	// Σ price·GPUs subject to every model's rate instead of maximising throughput (cost.go).
	cost      []float64
	P         int
	wholeOnly bool
	// counts overrides the GPU counts per type index (DART-r's one-high + one-low cluster).
	counts []int
	// relax builds the LP relaxation (diagnostics and tests of the formulation's strength).
	relax bool
	// contCounts keeps the template and option choices binary but makes slice and GPU counts
	// continuous: the continuous-count relaxation, whose optimum bounds the MILP far more
	// tightly than the LP and which solves in a fraction of its time.
	contCounts bool
	// replicas of every type sequence (Options.Replicas: 0 or 1 = one, the paper's), or
	// K^{P−D} when perLength (Options.ReplicasPerLength, the authors' code).
	replicas  int
	perLength bool
}

// replicaCount is how many copies of a length-D type sequence the space holds.
func (c spaceConfig) replicaCount(K, D int) int {
	switch {
	case c.perLength:
		n := 1
		for range c.P - D {
			n *= K
		}
		return n
	case c.replicas == 0:
		return 1
	}
	return c.replicas
}

func (p *problem) count(cfg spaceConfig, k int) int {
	if cfg.counts != nil {
		return cfg.counts[k]
	}
	return p.types[k].count
}

// wholeCopies bounds how many copies of a template of these types one plan can use at once.
// With whole GPUs only, each partition takes at least one GPU of its type, so a template
// naming type k occ_k times needs occ_k of them per copy: none fits where occ_k exceeds the
// count (DART-r's one-high + one-low cluster cannot run a three-stage pipeline, nor two
// stages on one type), and the copies beyond min_k ⌊count_k / occ_k⌋ only enlarge the MILP.
// With vGPU slices a partition may take a fraction of a GPU: no bound (math.MaxInt).
func (p *problem) wholeCopies(cfg spaceConfig, types []int) int {
	if !cfg.wholeOnly {
		return math.MaxInt
	}
	occ := map[int]int{}
	for _, k := range types {
		occ[k]++
	}
	n := math.MaxInt
	for k, o := range occ {
		n = min(n, p.count(cfg, k)/o)
	}
	return n
}

// templates enumerates every sequence of usable GPU types of length 1..P, shortest first.
func (p *problem) templates(cfg spaceConfig) [][]int {
	var usable []int
	for k := range p.types {
		if p.count(cfg, k) > 0 {
			usable = append(usable, k)
		}
	}
	var out [][]int
	var rec func(prefix []int, D int)
	rec = func(prefix []int, D int) {
		if len(prefix) == D {
			out = append(out, slices.Clone(prefix))
			return
		}
		for _, k := range usable {
			rec(append(prefix, k), D)
		}
	}
	for D := 1; D <= cfg.P; D++ {
		rec(nil, D)
	}
	return out
}

// space builds and prunes the options of one model:
//  1. domain: d=0 ⇒ i=0, last ⇒ j=M, every partition non-empty;
//  2. latency: an option survives only if the shortest chain through it (prefix DP + own
//     C+Y+β + suffix DP, same batch) fits T' — stronger than a per-option C+Y+β ≤ T'
//     and it also removes options that cannot be chained at all (batch not profiled on the
//     neighbour's type);
//  3. dominance: drop ω if an option of the same (l,d,b,i,j) with v' a multiple of v has
//     C' ≤ C and v'·X' ≥ v·X (it serves at least as much per physical GPU, no slower).
func (p *problem) space(md *modelData, cfg spaceConfig) *modelSpace {
	ms := &modelSpace{md: md, minLat: math.Inf(1)}
	M := md.blocks
	usableTypes := 0
	for k := range p.types {
		if p.count(cfg, k) > 0 {
			usableTypes++
		}
	}
	for _, types := range p.templates(cfg) {
		D := len(types)
		if D > M {
			continue
		}
		copies := p.wholeCopies(cfg, types)
		if copies == 0 {
			continue
		}
		t := &tmpl{types: types, stages: make([][]option, D)}
		for d, k := range types {
			gt := p.types[k]
			for _, v := range gt.levels {
				if cfg.wholeOnly && v != 1 {
					continue
				}
				for _, b := range md.batches[k][v] {
					for i := 0; i < M; i++ {
						if (d == 0 && i != 0) || i < d {
							continue
						}
						for j := i + 1; j <= M; j++ {
							if (d == D-1 && j != M) || j > M-(D-1-d) {
								continue
							}
							C, _ := md.latency(k, v, b, i, j)
							o := option{v: v, b: b, i: i, j: j, C: C}
							if j < M {
								o.Y = float64(b) * md.tau[j]
							}
							if d == 0 {
								o.Beta = md.beta(b)
							}
							o.X = 1e6 * float64(b) / C
							slot := float64(v * gt.perServer)
							if i > 0 && md.tau[i] > 0 {
								o.X = math.Min(o.X, 1e6/(slot*md.tau[i]))
							}
							if j < M && md.tau[j] > 0 {
								o.X = math.Min(o.X, 1e6/(slot*md.tau[j]))
							}
							t.stages[d] = append(t.stages[d], o)
						}
					}
				}
			}
		}
		for d := range t.stages {
			ms.raw += len(t.stages[d])
		}
		minLat := pruneLatency(t, M, md.budget)
		ms.minLat = math.Min(ms.minLat, minLat)
		pruneDominated(t)
		ok := true
		for d := range t.stages {
			if len(t.stages[d]) == 0 {
				ok = false
			}
		}
		if !ok {
			continue
		}
		p.bound(t, cfg)
		for d := range t.stages {
			ms.kept += len(t.stages[d])
		}
		ms.tmpls = append(ms.tmpls, t)
		for r := 1; r < min(cfg.replicaCount(usableTypes, D), copies); r++ {
			cp := &tmpl{types: t.types, replica: r, xmax: t.xmax, maxLat: t.maxLat, stages: make([][]option, D)}
			for d := range t.stages {
				cp.stages[d] = slices.Clone(t.stages[d])
				ms.kept += len(t.stages[d])
			}
			ms.tmpls = append(ms.tmpls, cp)
		}
	}
	return ms
}

// chainDP computes, per batch, the best (min or max) latency of stages 0..d-1 ending at each
// cut (pre) and of stages d..D-1 starting at each cut (suf). Unreachable = ±Inf.
func chainDP(t *tmpl, M int, better func(a, b float64) bool, worst float64) (pre, suf map[int][][]float64) {
	D := len(t.stages)
	pre, suf = map[int][][]float64{}, map[int][][]float64{}
	for _, st := range t.stages {
		for _, o := range st {
			if _, ok := pre[o.b]; ok {
				continue
			}
			pr := make([][]float64, D+1)
			sf := make([][]float64, D+1)
			for d := range pr {
				pr[d] = make([]float64, M+1)
				sf[d] = make([]float64, M+1)
				for c := range pr[d] {
					pr[d][c], sf[d][c] = worst, worst
				}
			}
			pr[0][0], sf[D][M] = 0, 0
			pre[o.b], suf[o.b] = pr, sf
		}
	}
	for d := 0; d < D; d++ {
		for _, o := range t.stages[d] {
			pr := pre[o.b]
			if a := pr[d][o.i]; !math.IsInf(a, 0) {
				if c := a + o.lat(); better(c, pr[d+1][o.j]) {
					pr[d+1][o.j] = c
				}
			}
		}
	}
	for d := D - 1; d >= 0; d-- {
		for _, o := range t.stages[d] {
			sf := suf[o.b]
			if a := sf[d+1][o.j]; !math.IsInf(a, 0) {
				if c := a + o.lat(); better(c, sf[d][o.i]) {
					sf[d][o.i] = c
				}
			}
		}
	}
	return pre, suf
}

// pruneLatency keeps the options that lie on a chain meeting the budget and returns the
// shortest chain latency before pruning. It also sets t.maxLat.
func pruneLatency(t *tmpl, M int, budget float64) float64 {
	less := func(a, b float64) bool { return a < b }
	pre, suf := chainDP(t, M, less, math.Inf(1))
	minLat := math.Inf(1)
	for b := range pre {
		minLat = math.Min(minLat, pre[b][len(t.stages)][M])
	}
	for d := range t.stages {
		t.stages[d] = slices.DeleteFunc(t.stages[d], func(o option) bool {
			through := pre[o.b][d][o.i] + o.lat() + suf[o.b][d+1][o.j]
			return !(through <= budget+absTol)
		})
	}
	more := func(a, b float64) bool { return a > b }
	pmax, _ := chainDP(t, M, more, math.Inf(-1))
	t.maxLat = math.Inf(-1)
	for b := range pmax {
		t.maxLat = math.Max(t.maxLat, pmax[b][len(t.stages)][M])
	}
	return minLat
}

// pruneDominated drops, per stage, every option another option of the same blocks and batch
// dominates: a vGPU level that divides into its own (its slices pack the same GPUs), no
// slower, and carrying at least as much per GPU. Only options of one (b, i, j) compare, so
// the stage's options are sorted by it and each run compared within itself: a stage of 59
// blocks has some 10^5 options, and comparing every pair took seconds no time limit bounds.
func pruneDominated(t *tmpl) {
	for d := range t.stages {
		st := t.stages[d]
		idx := make([]int, len(st))
		for k := range idx {
			idx[k] = k
		}
		key := func(o *option) [3]int { return [3]int{o.b, o.i, o.j} }
		slices.SortFunc(idx, func(x, y int) int {
			kx, ky := key(&st[x]), key(&st[y])
			return slices.Compare(kx[:], ky[:])
		})
		drop := make([]bool, len(st))
		for lo := 0; lo < len(idx); {
			hi := lo + 1
			for hi < len(idx) && key(&st[idx[hi]]) == key(&st[idx[lo]]) {
				hi++
			}
			for _, a := range idx[lo:hi] {
				for _, c := range idx[lo:hi] {
					o, w := &st[a], &st[c]
					if a == c || w.v == o.v || w.v%o.v != 0 {
						continue
					}
					if w.C <= o.C && float64(w.v)*w.X >= float64(o.v)*o.X {
						drop[a] = true
						break
					}
				}
			}
			lo = hi
		}
		out := st[:0]
		for a := range st {
			if !drop[a] {
				out = append(out, st[a])
			}
		}
		t.stages[d] = out
	}
}

// bound sets the template's throughput bound and every option's slice bound G. A stage on
// type k needs at least x / (max_ω v·X_ω) physical GPUs, and stages sharing a type share N_k,
// so x ≤ N_k / Σ_{d: κ(d)=k} 1/cap_d. Slices beyond ⌈xmax/X⌉ never raise the pipeline's
// throughput (post-processing trims them), so G = min(v·N_κ, ⌈xmax/X⌉) instead of big-M v·N.
func (p *problem) bound(t *tmpl, cfg spaceConfig) {
	inv := map[int]float64{}
	for d, st := range t.stages {
		best := 0.0
		for _, o := range st {
			best = math.Max(best, float64(o.v)*o.X)
		}
		inv[t.types[d]] += 1 / best
	}
	t.xmax = math.Inf(1)
	for k, s := range inv {
		t.xmax = math.Min(t.xmax, float64(p.count(cfg, k))/s)
	}
	for d, st := range t.stages {
		n := p.count(cfg, t.types[d])
		for a := range st {
			o := &st[a]
			g := math.Ceil(t.xmax/o.X - absTol)
			o.G = int(math.Max(1, math.Min(float64(o.v*n), g)))
		}
	}
}
