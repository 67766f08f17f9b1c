package ppipe

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Surplus filling (Options.FillSurplus). Under max-min the MILP is indifferent to capacity
// above z·w_m, and post-processing trims every pool to what its pipeline's throughput needs
// (the MILP leaves surplus slices on non-bottleneck stages), so a plan may leave GPUs idle
// while its lightest model runs on a handful of GPUs sized exactly for the guaranteed rate.
// fillSurplus hands those GPUs back as headroom, greedily and deterministically:
//
//   - the model with the lowest capacity/target ratio (target = the MILP's guaranteed rate,
//     z·w_m; the whole pre-fill throughput for one model) receives the next step; a model
//     with no feasible step passes it to the next lowest;
//   - a step either grows an existing pipeline (one more slice on a lead stage, and every
//     other stage raised just enough to keep up: same options, so latency and batch do not
//     change), or opens a one-stage whole-model pipeline with one slice of the best SLO-safe
//     option of a (type, level) (whole GPUs only for NP and DART-r);
//   - among a model's steps the one with the most capacity per GPU (slices/v) wins; ties go to
//     fewer new physical GPUs, then to growing over opening, then to enumeration order;
//   - a step is feasible when the physical GPUs (with the plan's rounding) fit the cluster.
//
// It stops when no model has a feasible step, so no GPU stays idle while some pipeline could
// use it. Every step keeps the constraints Verify checks.

// fillMove is one candidate step of fillSurplus.
type fillMove struct {
	pipe   int   // index of the grown pipeline, -1 for a new one
	add    []int // slices added per stage (grow)
	k      int   // GPU type of a new pipeline
	o      option
	gain   float64 // capacity added, req/s
	cost   float64 // GPUs added, Σ slices/v
	phys   []int   // physical GPUs added per type
	physN  int
	newX   float64
	groups map[fillGroup]int // twelfths added per rounding group
}

// fillGroup is a rounding group of PhysicalGPUs: (model, stage index, type) under stage
// rounding, (pipeline, stage) under pipeline rounding (model = -1, stage = pipe·64 + d).
type fillGroup struct{ m, d, k int }

type fillState struct {
	p        *problem
	pipes    []pipe
	twelfths map[fillGroup]int
	used     []int
	// singles[m] are the best one-stage whole-model options per (type, level).
	singles [][]fillSingle
}

type fillSingle struct {
	k int
	o option
}

func (s *fillState) group(pi, d int) fillGroup {
	pp := &s.pipes[pi]
	k := pp.parts[d].k
	if s.p.opts.Rounding == RoundingStage {
		return fillGroup{pp.model, d, k}
	}
	return fillGroup{-1, pi*64 + d, k}
}

func twelfthsOf(v, slices int) int {
	if v < 1 || v > 4 {
		v = 1
	}
	return slices * (lcmLevels / v)
}

func ceilGPUs(t int) int { return (t + lcmLevels - 1) / lcmLevels }

// fillTargets are the guaranteed rates of a decoded plan: z·w_m under max-min, the
// throughput for one model (what TargetRPS records: load factor 1.0, PPipe §7.1).
func (p *problem) fillTargets(pipes []pipe) []float64 {
	thr := modelThroughput(pipes, len(p.models))
	if len(thr) == 1 {
		return thr
	}
	z := p.objective(pipes)
	out := make([]float64, len(p.models))
	for mi, md := range p.models {
		out[mi] = z * md.weight
	}
	return out
}

// surplusFill is what fillSurplus returns: the pipelines with the idle GPUs handed out, and
// the physical GPUs added per type (Provenance's surplus_gpus extra).
type surplusFill struct {
	pipes []pipe
	added []int
}

// fillSurplus hands the idle GPUs out to pipes, each model's guaranteed rate target (its
// capacity/target ratio orders the models). The input is not modified.
func (p *problem) fillSurplus(pipes []pipe, target []float64) surplusFill {
	s := &fillState{p: p, twelfths: map[fillGroup]int{}, used: make([]int, len(p.types))}
	for _, pp := range pipes {
		cp := pp
		cp.parts = slices.Clone(pp.parts)
		s.pipes = append(s.pipes, cp)
	}
	for pi := range s.pipes {
		for d, pt := range s.pipes[pi].parts {
			s.twelfths[s.group(pi, d)] += twelfthsOf(pt.o.v, pt.g)
		}
	}
	for g, t := range s.twelfths {
		s.used[g.k] += ceilGPUs(t)
	}
	before := slices.Clone(s.used)
	wholeOnly := p.opts.Strategy != StrategyPPipe
	for _, md := range p.models {
		var best []fillSingle
		ms := p.space(md, spaceConfig{P: 1, wholeOnly: wholeOnly})
		for _, t := range ms.tmpls {
			k := t.types[0]
			byLevel := map[int]option{}
			var levels []int
			for _, o := range t.stages[0] {
				b, ok := byLevel[o.v]
				if !ok {
					levels = append(levels, o.v)
				}
				if !ok || o.X > b.X*(1+tieTol) || (o.X >= b.X*(1-tieTol) && o.C < b.C) {
					byLevel[o.v] = o
				}
			}
			slices.Sort(levels)
			for _, v := range levels {
				best = append(best, fillSingle{k: k, o: byLevel[v]})
			}
		}
		s.singles = append(s.singles, best)
	}
	order := make([]int, len(p.models))
	for {
		thr := modelThroughput(s.pipes, len(p.models))
		for i := range order {
			order[i] = i
		}
		ratio := func(m int) float64 {
			if !(target[m] > 0) {
				return math.Inf(1)
			}
			return thr[m] / target[m]
		}
		slices.SortStableFunc(order, func(a, b int) int {
			ra, rb := ratio(a), ratio(b)
			switch {
			case ra < rb:
				return -1
			case ra > rb:
				return 1
			}
			return 0
		})
		applied := false
		for _, mi := range order {
			if mv, ok := s.bestMove(mi); ok {
				s.apply(mi, mv)
				applied = true
				break
			}
		}
		if !applied {
			break
		}
	}
	added := make([]int, len(p.types))
	for k := range added {
		added[k] = s.used[k] - before[k]
	}
	return surplusFill{pipes: s.pipes, added: added}
}

// bestMove is model mi's best feasible step.
func (s *fillState) bestMove(mi int) (fillMove, bool) {
	var best fillMove
	found := false
	consider := func(mv fillMove) {
		if !(mv.gain > 0) || !s.feasible(&mv) {
			return
		}
		if !found || better(&mv, &best) {
			best, found = mv, true
		}
	}
	for pi := range s.pipes {
		pp := &s.pipes[pi]
		if pp.model != mi {
			continue
		}
		x := pipeCap(pp.parts, nil)
		for lead := range pp.parts {
			lt := pp.parts[lead]
			xt := lt.o.X * float64(lt.g+1)
			add := make([]int, len(pp.parts))
			for d, pt := range pp.parts {
				need := int(math.Ceil(xt/pt.o.X - absTol))
				if d == lead {
					need = pt.g + 1
				}
				add[d] = max(0, need-pt.g)
			}
			nx := pipeCap(pp.parts, add)
			mv := fillMove{pipe: pi, add: add, gain: nx - x, newX: nx, groups: map[fillGroup]int{}}
			for d, a := range add {
				if a == 0 {
					continue
				}
				pt := pp.parts[d]
				mv.cost += float64(a) / float64(pt.o.v)
				mv.groups[s.group(pi, d)] += twelfthsOf(pt.o.v, a)
			}
			consider(mv)
		}
	}
	for _, sg := range s.singles[mi] {
		dup := false
		for pi := range s.pipes {
			pp := &s.pipes[pi]
			if pp.model == mi && len(pp.parts) == 1 && pp.parts[0].k == sg.k && pp.parts[0].o.v == sg.o.v && pp.parts[0].o.b == sg.o.b {
				dup = true // growing that pipeline is the same step without a new pool
				break
			}
		}
		if dup {
			continue
		}
		g := fillGroup{-1, len(s.pipes) * 64, sg.k}
		if s.p.opts.Rounding == RoundingStage {
			g = fillGroup{mi, 0, sg.k}
		}
		consider(fillMove{pipe: -1, k: sg.k, o: sg.o, gain: sg.o.X, newX: sg.o.X, cost: 1 / float64(sg.o.v),
			groups: map[fillGroup]int{g: twelfthsOf(sg.o.v, 1)}})
	}
	return best, found
}

// pipeCap is min_d X·(g+add).
func pipeCap(parts []part, add []int) float64 {
	x := math.Inf(1)
	for d, pt := range parts {
		g := pt.g
		if add != nil {
			g += add[d]
		}
		x = math.Min(x, pt.o.X*float64(g))
	}
	return x
}

// feasible fills mv.phys and reports whether the step fits the cluster.
func (s *fillState) feasible(mv *fillMove) bool {
	mv.phys = make([]int, len(s.p.types))
	mv.physN = 0
	for g, t := range mv.groups {
		cur := s.twelfths[g]
		d := ceilGPUs(cur+t) - ceilGPUs(cur)
		mv.phys[g.k] += d
		mv.physN += d
	}
	for k, d := range mv.phys {
		if s.used[k]+d > s.p.types[k].count {
			return false
		}
	}
	return true
}

// better orders steps: capacity per GPU, then fewer new physical GPUs, then grow before new.
func better(a, b *fillMove) bool {
	ea, eb := a.gain/a.cost, b.gain/b.cost
	if ea > eb*(1+relTol) {
		return true
	}
	if eb > ea*(1+relTol) {
		return false
	}
	if a.physN != b.physN {
		return a.physN < b.physN
	}
	return a.pipe >= 0 && b.pipe < 0
}

func (s *fillState) apply(mi int, mv fillMove) {
	if mv.pipe < 0 {
		s.pipes = append(s.pipes, pipe{model: mi, batch: mv.o.b, parts: []part{{k: mv.k, o: mv.o, g: 1}}, x: mv.newX})
	} else {
		pp := &s.pipes[mv.pipe]
		for d, a := range mv.add {
			pp.parts[d].g += a
		}
		pp.x = mv.newX
	}
	for g, t := range mv.groups {
		s.twelfths[g] += t
	}
	for k, d := range mv.phys {
		s.used[k] += d
	}
}

// surplusExtra formats the GPUs fillSurplus handed out, per type ("L4=0 P4=12").
func (p *problem) surplusExtra(added []int) string {
	var parts []string
	for k, t := range p.types {
		parts = append(parts, fmt.Sprintf("%s=%d", t.name, added[k]))
	}
	return strings.Join(parts, " ")
}
