package ppipe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/intree"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
	"github.com/plan-dev/plan/planner"
	"github.com/plan-dev/plan/solver"
)

// oracle solves a tiny single-model instance by exhaustive enumeration, written from the
// paper's formulation (PPipe A.2) without the planner's code: every template (type sequence of
// length ≤ P), every (batch, cuts, levels) configuration meeting T', every slice count per
// stage; templates are combined by a DP over GPU usage (twelfths of a GPU per rounding group),
// keeping the best throughput per usage vector. It returns the optimal throughput in req/s.
func oracle(t *testing.T, in Inputs, P int, alpha float64, rounding string) float64 {
	t.Helper()
	o := newOracleSpace(in, P, alpha, rounding)
	G := len(o.groups)
	states := map[string]float64{o.enc(make([]int, G)): 0}
	vecs := map[string][]int{o.enc(make([]int, G)): make([]int, G)}
	for li, tp := range o.templates {
		opts, optVec := o.templateBest(li, tp)
		states, vecs = o.combine(states, vecs, opts, optVec)
	}
	best := 0.0
	for _, v := range states {
		best = math.Max(best, v)
	}
	return best
}

// oracleGPU is one GPU type of the oracle's cluster.
type oracleGPU struct {
	name   string
	n, s   int
	levels []int
}

// oracleSpace is what the oracle enumerates over: the cluster's types, the model's blocks,
// the latency budget T' and the rounding groups (stage index and type for stage rounding;
// template and stage otherwise), each usage vector of twelfths of a GPU per group encoded
// as a string.
type oracleSpace struct {
	types     []oracleGPU
	mp        *formats.ModelProfile
	M         int
	budget    float64
	bw        float64
	rounding  string
	templates [][]int
	groups    map[[2]int]int // (d or template*8+d, k) → index
	groupType map[int]int
}

func newOracleSpace(in Inputs, P int, alpha float64, rounding string) *oracleSpace {
	cl := in.Cluster
	o := &oracleSpace{mp: &in.Profiles[0].Models[0], rounding: rounding, groups: map[[2]int]int{}, groupType: map[int]int{}}
	o.M = len(o.mp.Blocks)
	for _, g := range cl.GPUs {
		if g.Count > 0 {
			o.types = append(o.types, oracleGPU{g.Type, g.Count, g.PerServer, g.Levels()})
		}
	}
	ref, _ := o.mp.Lookup("L4", 1, 1)
	T := math.Round(5 * ref.WholeUs())
	if in.Workload != nil && ppipesec.ModelsOf(in.Workload)[0].SLO > 0 {
		T = ppipesec.ModelsOf(in.Workload)[0].SLO.Microseconds()
	}
	o.budget = T - math.Round(alpha*T)
	o.bw = cl.NICGbps * 1000 / cl.NICDerate
	var rec func(pre []int)
	rec = func(pre []int) {
		if len(pre) > 0 {
			o.templates = append(o.templates, slices.Clone(pre))
		}
		if len(pre) == P {
			return
		}
		for k := range o.types {
			rec(append(pre, k))
		}
	}
	rec(nil)
	for li, tp := range o.templates {
		for d, k := range tp {
			o.groupType[o.groupOf(li, d, k)] = k
		}
	}
	return o
}

// tau is the transfer time of one request's activations at cut c (none at either end).
func (o *oracleSpace) tau(c int) float64 {
	if c <= 0 || c >= o.M {
		return 0
	}
	return 8 * float64(o.mp.CutBytes[c-1]) / o.bw
}

func (o *oracleSpace) groupOf(li, d, k int) int {
	key := [2]int{d, k}
	if o.rounding == RoundingPipeline {
		key = [2]int{li*8 + d, k}
	}
	if i, ok := o.groups[key]; ok {
		return i
	}
	o.groups[key] = len(o.groups)
	return o.groups[key]
}

func (o *oracleSpace) enc(v []int) string {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(x)
	}
	return string(b)
}

// feasible: the usage vector's whole GPUs per type are within the cluster's counts.
func (o *oracleSpace) feasible(v []int) bool {
	per := make([]int, len(o.types))
	for g, x := range v {
		per[o.groupType[g]] += (x + 11) / 12
	}
	for k := range o.types {
		if per[k] > o.types[k].n {
			return false
		}
	}
	return true
}

// templateBest is the best throughput per usage vector of template li (type sequence tp)
// alone: every cut configuration, batch 1–8, level per stage and slice count per stage.
func (o *oracleSpace) templateBest(li int, tp []int) (map[string]float64, map[string][]int) {
	D := len(tp)
	opts := map[string]float64{}
	optVec := map[string][]int{}
	var configs [][]int
	var cuts func(pre []int)
	cuts = func(pre []int) {
		if len(pre) == D-1 {
			configs = append(configs, slices.Clone(pre))
			return
		}
		last := 0
		if len(pre) > 0 {
			last = pre[len(pre)-1]
		}
		for c := last + 1; c < o.M; c++ {
			cuts(append(pre, c))
		}
	}
	cuts(nil)
	for _, cs := range configs {
		bounds := append(append([]int{0}, cs...), o.M)
		for b := 1; b <= 8; b++ {
			var lv func(d int, vs []int)
			lv = func(d int, vs []int) {
				if d < D {
					for _, v := range o.types[tp[d]].levels {
						lv(d+1, append(vs, v))
					}
					return
				}
				X, ok := o.stageRates(tp, bounds, vs, b)
				if !ok {
					return
				}
				o.sliceCounts(li, tp, vs, X, opts, optVec)
			}
			lv(0, nil)
		}
	}
	return opts, optVec
}

// stageRates is each stage's throughput per slice at batch b and levels vs (the compute
// rate, capped by the transfers at both of its cuts); false when a block has no profile
// there or the pipeline's latency exceeds T'.
func (o *oracleSpace) stageRates(tp, bounds, vs []int, b int) ([]float64, bool) {
	D := len(tp)
	lat := 0.0
	X := make([]float64, D)
	for s := 0; s < D; s++ {
		k := o.types[tp[s]]
		e, ok := o.mp.Lookup(k.name, vs[s], b)
		if !ok {
			return nil, false
		}
		C := 0.0
		for q := bounds[s]; q < bounds[s+1]; q++ {
			C += math.Max(1, e.BlockUs[q])
		}
		lat += C + float64(b)*o.tau(bounds[s+1])
		X[s] = 1e6 * float64(b) / C
		slot := float64(vs[s] * k.s)
		if t := o.tau(bounds[s]); t > 0 {
			X[s] = math.Min(X[s], 1e6/(slot*t))
		}
		if t := o.tau(bounds[s+1]); t > 0 {
			X[s] = math.Min(X[s], 1e6/(slot*t))
		}
	}
	return X, lat <= o.budget+1e-9
}

// sliceCounts tries every slice count per stage for rates X, keeping the best throughput
// per feasible usage vector in opts and optVec.
func (o *oracleSpace) sliceCounts(li int, tp, vs []int, X []float64, opts map[string]float64, optVec map[string][]int) {
	D := len(tp)
	var counts func(s int, g []int)
	counts = func(s int, g []int) {
		if s < D {
			for n := 1; n <= vs[s]*o.types[tp[s]].n; n++ {
				counts(s+1, append(g, n))
			}
			return
		}
		x := math.Inf(1)
		u := make([]int, len(o.groups))
		for q := 0; q < D; q++ {
			x = math.Min(x, X[q]*float64(g[q]))
			u[o.groupOf(li, q, tp[q])] += g[q] * 12 / vs[q]
		}
		if !o.feasible(u) {
			return
		}
		key := o.enc(u)
		if x > opts[key] {
			opts[key], optVec[key] = x, u
		}
	}
	counts(0, nil)
}

// combine is the DP step: every state so far alone or plus one of this template's options,
// the best throughput per feasible usage vector.
func (o *oracleSpace) combine(states map[string]float64, vecs map[string][]int, opts map[string]float64, optVec map[string][]int) (map[string]float64, map[string][]int) {
	next := map[string]float64{}
	nextVec := map[string][]int{}
	for key, val := range states {
		next[key], nextVec[key] = val, vecs[key]
	}
	for sk, sv := range states {
		for ok, ov := range opts {
			u := make([]int, len(o.groups))
			for g := range u {
				u[g] = vecs[sk][g] + optVec[ok][g]
			}
			if !o.feasible(u) {
				continue
			}
			key := o.enc(u)
			if v := sv + ov; v > next[key] {
				next[key], nextVec[key] = v, u
			}
		}
	}
	return next, nextVec
}

// skipWithoutSolver skips when the HiGHS wasm is absent, unless PLAN_REQUIRE_ALL=1.
func skipWithoutSolver(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, solver.ErrBackendUnavailable) && os.Getenv("PLAN_REQUIRE_ALL") != "1" {
		t.Skipf("HiGHS wasm unavailable: %v", err)
	}
}

func tinyInstance(seed uint64) (Inputs, int) {
	r := seed
	next := func(n uint64) int { r = r*6364136223846793005 + 1442695040888963407; return int((r >> 33) % n) }
	M := 2 + next(3)
	P := 1 + next(2)
	l4 := specL4
	l4.levels = []int{1, 2}
	l4.perServer = 1 + next(2)
	p4 := specP4
	p4.ratioLo, p4.ratio = 1.2, 3.5 // P4 useful enough that mixed plans occur
	gpus := []gpuSpec{l4, p4}
	prof := genProfile(seed, 1, M, gpus, 2)
	cl := genCluster(gpus, []int{1 + next(4), next(5)}, float64(5+next(40)))
	ref, _ := prof.Models[0].Lookup("L4", 1, 1)
	slo := ref.WholeUs() * (1 + float64(next(50))/10)
	wl := ppipesec.SetModels(&formats.Workload{TypeMeta: formats.TypeMeta{APIVersion: formats.APIVersion, Kind: formats.KindWorkload}}, []ppipesec.ModelWorkload{{Name: "m0", SLO: formats.Duration(math.Round(slo) * 1000)}})
	return Inputs{Profiles: []*formats.Profile{prof}, Cluster: cl, Workload: wl}, P
}

// TestOracle compares the MILP optimum with exhaustive enumeration on tiny instances
// (≤ 4 blocks, P ≤ 2, ≤ 4 GPUs per type) in both rounding modes.
func TestOracle(t *testing.T) {
	t.Parallel()
	seeds := 40
	if testing.Short() {
		seeds = 12
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		in, P := tinyInstance(seed)
		for _, rounding := range []string{RoundingStage, RoundingPipeline} {
			want := oracle(t, in, P, 0.4, rounding)
			// Odd seeds hand the full MILP to HiGHS directly, even seeds take the LP-guided path.
			pl, err := Solve(context.Background(), in, Options{Alpha: DefaultAlpha, MaxPartitions: P, Gap: 1e-9, Rounding: rounding, Deterministic: true, NoLPGuide: seed%2 == 1})
			skipWithoutSolver(t, err)
			if want == 0 {
				if !errors.Is(err, planner.ErrInfeasible) {
					t.Errorf("seed %d %s: oracle finds no plan, Solve: %v", seed, rounding, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("seed %d %s: %v", seed, rounding, err)
			}
			got := ppipesec.PlanOf(pl).Models[0].ThroughputRPS
			stats := ""
			for _, pp := range ppipesec.PlanOf(pl).Models[0].Pipelines {
				stats += fmt.Sprintf(" %d×b%d", len(pp.Partitions), pp.Batch)
			}
			t.Logf("seed %d %s: M=%d P=%d oracle %.3f pipelines%s", seed, rounding, len(in.Profiles[0].Models[0].Blocks), P, want, stats)
			if math.Abs(got-want) > 1e-6*want || math.Abs(pl.Provenance.Objective-want) > 1e-6*want {
				t.Errorf("seed %d %s (M=%d P=%d): MILP %.6f (objective %.6f), oracle %.6f", seed, rounding, len(in.Profiles[0].Models[0].Blocks), P, got, pl.Provenance.Objective, want)
			}
			if v := Verify(pl); len(v) > 0 {
				t.Errorf("seed %d %s: %v", seed, rounding, v)
			}
			// The plan is what plan solve writes: the format's GPU budget (stage-rounded
			// plans once broke it) must accept it too.
			if errs := pl.Validate(intree.Sections()); len(errs) > 0 {
				t.Errorf("seed %d %s: the solver's plan fails validation:\n%v", seed, rounding, errs)
			}
		}
	}
}
