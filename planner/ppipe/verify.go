package ppipe

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// Violation is one broken constraint found by Verify.
type Violation struct {
	// Where locates it: "model M pipeline P partition D" (parts omitted when not relevant).
	Where string
	// Rule names the constraint: budget (GPUs), latency (pipeline ≤ T'), latency-sum,
	// stage-latency, transfer, throughput (stage = X·count, pipeline ≤ slowest stage),
	// throughput-sum, served (throughput_rps ≠ what the prediction serves within the SLO),
	// contiguity, batch, gpu, vgpu, count, slo-budget, model, plan.
	Rule   string
	Detail string
}

func (v Violation) String() string {
	if v.Where == "" {
		return v.Rule + ": " + v.Detail
	}
	return v.Where + ": " + v.Rule + ": " + v.Detail
}

// Verify re-checks every constraint of a PPipe/NP/DART-r plan from its embedded inputs,
// without the solver: GPU budget with physical rounding, stage latency and transfer against
// the profile and NIC bandwidth, pipeline latency ≤ the planning budget T', the budget itself
// (T − round(α·T)), throughput arithmetic (stage = X·count, pipeline = min over stages,
// model = Σ pipelines, or where the plan records its prediction what that prediction says the
// model serves within its SLO, served.go; a plan stating Σ pipelines there, by the rule
// before, passes and StatesCapacity names it), contiguous cuts covering every block, and one
// profiled batch per pipeline. It returns every violation found (nil = the plan is consistent).
func Verify(pl *formats.Plan) []Violation {
	v := &verifier{}
	pp := ppipesec.PlanOf(pl)
	if pp == nil {
		v.add("", "plan", "no ppipe section: not a PPipe, NP or DART-r plan")
		return v.out
	}
	if !v.inputs(pl) {
		return v.out
	}
	seen := map[string]bool{}
	for _, m := range pp.Models {
		mw := fmt.Sprintf("model %s", m.Model)
		if seen[m.Model] {
			v.add(mw, "model", "listed twice")
		}
		seen[m.Model] = true
		v.model(pl, pp, m, mw)
	}
	v.budget(pp)
	return v.out
}

// verifier collects the violations of one plan against its cluster and embedded profiles.
type verifier struct {
	out []Violation
	cl  *formats.Cluster
	// bw is the cluster's effective NIC bandwidth (Mb/s) for the transfer times.
	bw float64
	// profs are the valid embedded profiles; workload maps a workload model to its profile's.
	profs    []formats.Profile
	workload map[string]string
}

func (v *verifier) add(where, rule, f string, a ...any) {
	v.out = append(v.out, Violation{Where: where, Rule: rule, Detail: fmt.Sprintf(f, a...)})
}

// inputs finds the plan's cluster and valid embedded profiles; false when there is no
// cluster to verify against.
func (v *verifier) inputs(pl *formats.Plan) bool {
	cl := pl.Cluster
	var profs []formats.Profile
	if e := pl.Provenance.Embedded; e != nil {
		profs = e.Profiles
		if cl == nil {
			cl = e.Cluster
		}
	}
	if cl == nil {
		v.add("", "plan", "no cluster recorded (plan.cluster and provenance.embedded.cluster are empty)")
		return false
	}
	if len(profs) == 0 {
		v.add("", "plan", "provenance.embedded.profiles missing: latencies cannot be verified")
	}
	// Latencies are re-derived only from profiles that are valid themselves (block and cut
	// tables of matching lengths); Verify must never panic on what a file holds.
	for i := range profs {
		if errs := profs[i].Validate(); len(errs) > 0 {
			v.add("", "plan", "provenance.embedded.profiles[%d] is invalid (%s): its models' latencies cannot be verified", i, errs[0])
			continue
		}
		v.profs = append(v.profs, profs[i])
	}
	v.workload = map[string]string{}
	if e := pl.Provenance.Embedded; e != nil && e.Workload != nil {
		for _, w := range ppipesec.ModelsOf(e.Workload) {
			v.workload[w.Name] = w.ProfileName()
		}
	}
	v.cl, v.bw = cl, cl.EffectiveNICMbps()
	return true
}

func (v *verifier) findModel(name string) *formats.ModelProfile {
	if pn, ok := v.workload[name]; ok {
		name = pn
	}
	for i := range v.profs {
		if m, ok := v.profs[i].Model(name); ok {
			return m
		}
	}
	return nil
}

// model checks one model: its budget, each pipeline, and its throughput sums. A plan that
// records its prediction states what the model serves within its SLO (served.go), at most
// what its pipelines carry, or their capacity (the rule before, StatesCapacity); one
// without states their capacity.
func (v *verifier) model(pl *formats.Plan, pp *ppipesec.PPipePlan, m ppipesec.PPipeModelPlan, mw string) {
	T := m.SLO.Microseconds()
	if want := T - math.Round(pp.SLOMargin*T); !near(m.BudgetUs, want) {
		v.add(mw, "slo-budget", "budget_us %g ≠ T − round(α·T) = %g (slo %s, α %g)", m.BudgetUs, want, m.SLO, pp.SLOMargin)
	}
	mp := v.findModel(m.Model)
	if mp == nil && len(v.profs) > 0 {
		v.add(mw, "model", "not in the embedded profiles")
	}
	if len(m.Pipelines) == 0 {
		v.add(mw, "model", "no pipelines: the plan does not serve it")
	}
	sum := 0.0
	for pi, p := range m.Pipelines {
		pw := fmt.Sprintf("%s pipeline %d", mw, pi)
		if len(p.Partitions) == 0 {
			v.add(pw, "contiguity", "no partitions")
			continue
		}
		v.pipeline(pp, m, p, mp, pw)
		sum += p.ThroughputRPS
	}
	if m.TargetRPS > sum*(1+relTol)+absTol {
		v.add(mw, "throughput-sum", "target_rps %g > Σ pipelines = %g: the pipelines cannot carry the target", m.TargetRPS, sum)
	}
	served, predicted := ServedRPS(pl, m)
	switch {
	case predicted && olderRule(m.ThroughputRPS, served, sum):
		// Written by the rule before (it states its capacity): consistent under that rule,
		// so it loads and runs; StatesCapacity reports it, for a warning and plan check.
	case predicted && !near(m.ThroughputRPS, served):
		v.add(mw, "served", "throughput_rps %g ≠ %g, what the plan's prediction serves within the SLO (sustained_rps, at most the pipelines' %g): a plan states what it serves", m.ThroughputRPS, served, sum)
	case !predicted && !near(m.ThroughputRPS, sum):
		v.add(mw, "throughput-sum", "throughput_rps %g ≠ Σ pipelines = %g", m.ThroughputRPS, sum)
	}
}

// pipeline checks one pipeline: contiguous cuts, each partition, its latency against the
// budget and its throughput against its slowest stage. mp is nil when unprofiled.
func (v *verifier) pipeline(pp *ppipesec.PPipePlan, m ppipesec.PPipeModelPlan, p ppipesec.PPipePipeline, mp *formats.ModelProfile, pw string) {
	if pp.MaxPartitions > 0 && len(p.Partitions) > pp.MaxPartitions {
		v.add(pw, "contiguity", "%d partitions > max_partitions %d", len(p.Partitions), pp.MaxPartitions)
	}
	if p.Batch < 1 {
		v.add(pw, "batch", "batch %d < 1", p.Batch)
	}
	lat := p.BatchFormationUs
	minThr := math.Inf(1)
	next := 0
	for d, pt := range p.Partitions {
		w := fmt.Sprintf("%s partition %d", pw, d)
		if pt.FirstBlock != next {
			v.add(w, "contiguity", "starts at block %d, previous partition ended at %d", pt.FirstBlock, next)
		}
		if pt.EndBlock <= pt.FirstBlock {
			v.add(w, "contiguity", "empty or reversed block range [%d, %d)", pt.FirstBlock, pt.EndBlock)
		}
		next = pt.EndBlock
		pool, ok := v.cl.Pool(pt.GPU)
		if !ok || pool.Count == 0 {
			v.add(w, "gpu", "GPU type %q has no GPUs in the cluster", pt.GPU)
			continue
		}
		if !slices.Contains(pool.Levels(), pt.VGPU) {
			v.add(w, "vgpu", "vgpu %d not allowed on %s (allowed %v)", pt.VGPU, pt.GPU, pool.Levels())
			continue
		}
		if pt.Count < 1 {
			v.add(w, "count", "count %d < 1", pt.Count)
		}
		lat += pt.StageLatencyUs + pt.TransferUs
		minThr = math.Min(minThr, pt.ThroughputRPS)
		if mp != nil {
			v.profiled(w, p.Batch, pt, mp, pool)
		}
	}
	if mp != nil && next != len(mp.Blocks) {
		v.add(pw, "contiguity", "last partition ends at block %d, the model has %d blocks", next, len(mp.Blocks))
	}
	if !near(p.LatencyUs, lat) {
		v.add(pw, "latency-sum", "latency_us %g ≠ Σ stage latency + transfer (+β) = %g", p.LatencyUs, lat)
	}
	if lat > m.BudgetUs*(1+relTol)+recordTol {
		v.add(pw, "latency", "pipeline latency %.1f µs exceeds the planning budget T' = %.1f µs", lat, m.BudgetUs)
	}
	if !math.IsInf(minThr, 1) && p.ThroughputRPS > minThr*(1+relTol)+absTol {
		v.add(pw, "throughput", "throughput_rps %g > its slowest stage %g", p.ThroughputRPS, minThr)
	}
}

// profiled re-derives one partition's stage latency, transfer and throughput from the
// profile (PPipe §4: C, Y and X of an option).
func (v *verifier) profiled(w string, batch int, pt ppipesec.Partition, mp *formats.ModelProfile, pool *formats.GPUPool) {
	M := len(mp.Blocks)
	if pt.FirstBlock < 0 || pt.EndBlock > M || pt.EndBlock <= pt.FirstBlock {
		v.add(w, "contiguity", "block range [%d, %d) outside the model's %d blocks", pt.FirstBlock, pt.EndBlock, M)
		return
	}
	e, ok := mp.Lookup(pt.GPU, pt.VGPU, batch)
	if !ok || len(e.BlockUs) != M {
		v.add(w, "batch", "batch %d is not profiled on %s at vgpu %d", batch, pt.GPU, pt.VGPU)
		return
	}
	C := 0.0
	for q := pt.FirstBlock; q < pt.EndBlock; q++ {
		C += math.Max(e.BlockUs[q], 1)
	}
	if !near(pt.StageLatencyUs, C) {
		v.add(w, "stage-latency", "stage_latency_us %g ≠ %g from the profile (blocks [%d, %d), %s v%d b%d)", pt.StageLatencyUs, C, pt.FirstBlock, pt.EndBlock, pt.GPU, pt.VGPU, batch)
	}
	tau := func(c int) float64 {
		if c <= 0 || c >= M || c-1 >= len(mp.CutBytes) {
			return 0
		}
		return 8 * float64(mp.CutBytes[c-1]) / v.bw
	}
	Y := float64(batch) * tau(pt.EndBlock)
	if !near(pt.TransferUs, Y) {
		v.add(w, "transfer", "transfer_us %g ≠ batch %d × %g µs per sample at cut %d", pt.TransferUs, batch, tau(pt.EndBlock), pt.EndBlock)
	}
	X := 1e6 * float64(batch) / C
	slot := float64(pt.VGPU * max(pool.PerServer, 1))
	if t := tau(pt.FirstBlock); t > 0 {
		X = math.Min(X, 1e6/(slot*t))
	}
	if t := tau(pt.EndBlock); t > 0 {
		X = math.Min(X, 1e6/(slot*t))
	}
	if want := X * float64(pt.Count); !near(pt.ThroughputRPS, want) {
		v.add(w, "throughput", "throughput_rps %g ≠ X·count = %g × %d = %g", pt.ThroughputRPS, X, pt.Count, want)
	}
}

// budget checks the physical GPUs the plan needs per type against the cluster.
func (v *verifier) budget(pp *ppipesec.PPipePlan) {
	rounding := pp.Rounding()
	if rounding != RoundingStage && rounding != RoundingPipeline {
		v.add("", "budget", "ppipe.extra.rounding %q: must be %s or %s", rounding, RoundingPipeline, RoundingStage)
	}
	_, used := pp.PhysicalGPUs()
	for _, g := range v.cl.GPUs {
		if u := used[g.Type]; u > g.Count {
			v.add("cluster", "budget", "%s: plan needs %d physical GPUs (rounding per %s), cluster has %d", g.Type, u, rounding, g.Count)
		}
	}
	gpus := slices.Sorted(maps.Keys(used))
	for _, gpu := range gpus {
		if _, ok := v.cl.Pool(gpu); !ok {
			v.add("cluster", "budget", "%s: used by the plan but not in the cluster", gpu)
		}
	}
}

// near compares recorded and recomputed numbers with a relative tolerance of recordTol.
func near(a, b float64) bool {
	return math.Abs(a-b) <= recordTol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}
