package ppipe

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
	"github.com/plan-dev/plan/formats/sections/ppipesec"
)

// FromPlan builds the deployment a PPipe-style plan (PPipe, NP or DART-r) describes: one app
// per model, one stage per partition, and workers packed onto the plan's cluster. Slices of
// one (model, stage index, GPU type, level) share GPUs in order, v slices per GPU; each such
// group starts on a fresh server when the cluster has room, as the authors' simulator packs
// pools separately; where it has not, groups pack back to back and each lists its GPUs on
// servers shared with a neighbour last (sharedLast). Latencies come from the embedded
// profile when it has the (GPU, v, batch) entry, else from the plan (a smaller batch then
// costs as much as the planned one, which is pessimistic and therefore never breaks a
// deadline the plan promised).
//
// Errors (plan not matching its cluster, inconsistent partitions) are a formats.ErrorList
// with field paths into the plan.
func FromPlan(p *formats.Plan) (*dataplane.Deployment, error) {
	if ppipesec.PlanOf(p) == nil {
		return nil, formats.ErrorList{{Path: "ppipe", Rule: "the plan has no ppipe section "}}
	}
	cl := p.Cluster
	if cl == nil && p.Provenance.Embedded != nil {
		cl = p.Provenance.Embedded.Cluster
	}
	if cl == nil {
		return nil, formats.ErrorList{{Path: "cluster", Rule: "the plan embeds no cluster"}}
	}
	b := &planBuilder{p: p, cl: cl, bw: cl.EffectiveNICMbps(), gindex: map[groupKey]*planGroup{},
		stageRounded: ppipesec.PlanOf(p).Rounding() == ppipesec.RoundingStage, cursors: map[groupKey]*cursor{}}
	if p.Provenance.Embedded != nil {
		b.profiles = p.Provenance.Embedded.Profiles
	}
	if b.bw <= 0 {
		b.add("cluster.nic_gbps", cl.NICGbps, "must be > 0")
	}
	b.partitions()
	b.demand()
	if len(b.errs) > 0 {
		return nil, b.errs
	}
	b.d = &dataplane.Deployment{Kind: Kind}
	b.layout()
	b.stages()
	if err := b.d.Validate(); err != nil {
		return nil, err
	}
	return b.d, nil
}

// planBuilder carries FromPlan's state through its passes.
type planBuilder struct {
	p            *formats.Plan
	cl           *formats.Cluster
	bw           float64
	profiles     []formats.Profile
	errs         formats.ErrorList
	stageRounded bool
	groups       []*planGroup
	gindex       map[groupKey]*planGroup
	types        []string // GPU types the plan uses, sorted
	d            *dataplane.Deployment
	typeGPU      map[string][]int // type → global GPU indices in server order
	cursors      map[groupKey]*cursor
}

// groupKey is a packing group: slices of one (model, stage index, GPU type, level) share
// GPUs in order; v = 0 for a stage-rounded group (all levels of the stage share).
type groupKey struct {
	app, stage int
	gpu        string
	v          int
}

type planGroup struct {
	key    groupKey
	slices int
	// levels lists every slice's vGPU level, in partition order, for a stage-rounded
	// group (key.v = 0: all levels of one model, stage index and GPU type share GPUs).
	levels []int
	packed [][]int
}

// gpus is the GPUs a group needs: ceil(slices/v), or for a stage-rounded group the GPUs
// formats.PackSlices lays its mixed levels on, exactly what ppipesec.PPipePlan.PhysicalGPUs
// charges, so the deployment refuses exactly what validation refuses.
func (g *planGroup) gpus() int {
	if g.key.v == 0 {
		return len(g.packed)
	}
	return ceilDiv(g.slices, g.key.v)
}

// cursor places a group's slices on its GPUs.
type cursor struct {
	gpus  []int // GPUs of the group
	slice int   // next slice index within the group
	// gpuOf and slotOf place slice i of a stage-rounded group: on gpus[gpuOf[i]], as
	// its slotOf[i]-th slice.
	gpuOf, slotOf []int
}

func (b *planBuilder) add(path string, value any, rule string) {
	b.errs = append(b.errs, &formats.FieldError{Path: path, Value: fmt.Sprint(value), Rule: rule})
}

func (b *planBuilder) findModel(name string) *formats.ModelProfile {
	for i := range b.profiles {
		if m, ok := b.profiles[i].Model(name); ok {
			return m
		}
	}
	return nil
}

// partitions is pass 1: validate partitions against the cluster and count slices per
// packing group.
func (b *planBuilder) partitions() {
	for mi, m := range ppipesec.PlanOf(b.p).Models {
		mp := fmt.Sprintf("ppipe.models[%d]", mi)
		if m.SLO <= 0 {
			b.add(mp+".slo", m.SLO, "must be > 0")
		}
		for pi, pl := range m.Pipelines {
			pp := fmt.Sprintf("%s.pipelines[%d]", mp, pi)
			if pl.Batch < 1 {
				b.add(pp+".batch", pl.Batch, "must be >= 1")
			}
			if len(pl.Partitions) == 0 {
				b.add(pp+".partitions", 0, "a pipeline needs at least one partition")
			}
			for di, part := range pl.Partitions {
				qp := fmt.Sprintf("%s.partitions[%d]", pp, di)
				pool, ok := b.cl.Pool(part.GPU)
				if !ok {
					b.add(qp+".gpu", part.GPU, "the plan's cluster has no GPUs of this type")
					continue
				}
				if !containsInt(pool.Levels(), part.VGPU) {
					b.add(qp+".vgpu", part.VGPU, fmt.Sprintf("the cluster allows levels %v for %s", pool.Levels(), part.GPU))
				}
				if part.Count < 1 {
					b.add(qp+".count", part.Count, "must be >= 1")
				}
				if part.StageLatencyUs <= 0 {
					b.add(qp+".stage_latency_us", part.StageLatencyUs, "must be > 0")
				}
				if part.EndBlock <= part.FirstBlock {
					b.add(qp+".end_block", part.EndBlock, "must be > first_block")
				}
				if di > 0 && part.FirstBlock != pl.Partitions[di-1].EndBlock {
					b.add(qp+".first_block", part.FirstBlock, fmt.Sprintf("must equal the previous partition's end_block %d", pl.Partitions[di-1].EndBlock))
				}
				if part.VGPU < 1 || part.Count < 1 {
					continue
				}
				k := groupKey{mi, di, part.GPU, part.VGPU}
				if b.stageRounded {
					k.v = 0
				}
				g := b.gindex[k]
				if g == nil {
					g = &planGroup{key: k}
					b.gindex[k] = g
					b.groups = append(b.groups, g)
				}
				g.slices += part.Count
				for c := 0; b.stageRounded && c < part.Count; c++ {
					g.levels = append(g.levels, part.VGPU)
				}
			}
		}
	}
}

// demand checks the GPU demand per type against the cluster.
func (b *planBuilder) demand() {
	// GPU demand per type versus the cluster.
	// A group needs ceil(slices/v) GPUs; a stage-rounded group the GPUs PackSlices
	// lays its mixed levels on, exactly what ppipesec.PPipePlan.PhysicalGPUs charges, so the
	// deployment refuses exactly what validation refuses.
	need := map[string]int{}
	for _, g := range b.groups {
		if g.key.v == 0 {
			g.packed = PackSlices(g.levels)
		}
		need[g.key.gpu] += g.gpus()
	}
	b.types = make([]string, 0, len(need))
	for t := range need {
		b.types = append(b.types, t)
	}
	sort.Strings(b.types)
	for _, t := range b.types {
		pool, _ := b.cl.Pool(t)
		if need[t] > pool.Count {
			b.add("ppipe.models", t, fmt.Sprintf("the plan needs %d %s GPUs but its cluster has %d", need[t], t, pool.Count))
		}
	}
}

// layout is pass 2: servers and GPUs per type, and where each group's slices go.
func (b *planBuilder) layout() {
	b.typeGPU = map[string][]int{} // type → global GPU indices in server order
	for _, gp := range b.cl.GPUs {
		per := gp.PerServer
		if per < 1 {
			per = 1
		}
		for i := 0; i < gp.Count; i++ {
			if i%per == 0 {
				b.d.Topo.Servers = append(b.d.Topo.Servers, dataplane.Server{
					Name:   fmt.Sprintf("%s-s%d", gp.Type, i/per),
					UpMbps: b.bw, DownMbps: b.bw,
				})
			}
			b.typeGPU[gp.Type] = append(b.typeGPU[gp.Type], len(b.d.Topo.GPUs))
			b.d.Topo.GPUs = append(b.d.Topo.GPUs, dataplane.GPU{Type: gp.Type, Class: gp.Class, Server: dataplane.ServerID(len(b.d.Topo.Servers) - 1)})
		}
	}
	// Decide per type whether groups can start on server boundaries.
	aligned := map[string]bool{}
	for _, t := range b.types {
		pool, _ := b.cl.Pool(t)
		per := max(pool.PerServer, 1)
		used := 0
		for _, g := range b.groups {
			if g.key.gpu == t {
				used = ceilDiv(used, per)*per + g.gpus()
			}
		}
		aligned[t] = used <= pool.Count
	}
	nextGPU := map[string]int{}
	for _, g := range b.groups {
		pool, _ := b.cl.Pool(g.key.gpu)
		per := max(pool.PerServer, 1)
		n := nextGPU[g.key.gpu]
		if aligned[g.key.gpu] {
			n = ceilDiv(n, per) * per
		}
		cnt := g.gpus()
		cur := &cursor{gpus: append([]int(nil), b.typeGPU[g.key.gpu][n:n+cnt]...)}
		if g.key.v == 0 {
			cur.gpuOf, cur.slotOf = make([]int, g.slices), make([]int, g.slices)
			for gi, on := range g.packed {
				for slot, i := range on {
					cur.gpuOf[i], cur.slotOf[i] = gi, slot
				}
			}
		}
		b.cursors[g.key] = cur
		nextGPU[g.key.gpu] = n + cnt
	}
	b.sharedLast()
}

// sharedLast reorders each group's GPUs so that those on a server another group also uses
// come last. Where the cluster has no room to start every group on a fresh server, groups
// pack back to back and neighbours share a server's NIC; the dispatcher takes the lowest
// pool index among equally good workers (PPipe A.3, Alg. 2), so below full load a group
// whose first GPUs sat on a shared server would send most of its transfers through the
// neighbour's NIC. With the shared GPUs last, a neighbour's transfers reach the shared NIC
// only when its own servers are busy, and a short-SLO stage is not starved by a long
// transfer booked far ahead on its downlink.
func (b *planBuilder) sharedLast() {
	owners := map[dataplane.ServerID]map[groupKey]bool{}
	for k, cur := range b.cursors {
		for _, gi := range cur.gpus {
			s := b.d.Topo.GPUs[gi].Server
			if owners[s] == nil {
				owners[s] = map[groupKey]bool{}
			}
			owners[s][k] = true
		}
	}
	for _, cur := range b.cursors {
		sort.SliceStable(cur.gpus, func(i, j int) bool {
			return len(owners[b.d.Topo.GPUs[cur.gpus[i]].Server]) < len(owners[b.d.Topo.GPUs[cur.gpus[j]].Server])
		})
	}
}

// stages builds one app per model, one stage per partition, and carves the workers.
func (b *planBuilder) stages() {
	for mi, m := range ppipesec.PlanOf(b.p).Models {
		app := dataplane.App{
			Name: m.Model, SLO: dataplane.Time(time.Duration(m.SLO) / time.Microsecond),
			Weight: m.Weight, RateRPS: planRate(m),
		}
		aid := dataplane.AppID(len(b.d.Apps))
		prof := b.findModel(m.Model)
		for pi, pl := range m.Pipelines {
			var chain []dataplane.StageID
			for di, part := range pl.Partitions {
				sid := dataplane.StageID(len(b.d.Stages))
				st := dataplane.Stage{
					Name:     fmt.Sprintf("%s/p%d/s%d", m.Model, pi, di),
					App:      aid,
					Pipeline: pi,
					Index:    di,
					Batch:    pl.Batch,
				}
				st.LatUs = stageLatencies(prof, part, pl.Batch)
				if di+1 < len(pl.Partitions) {
					st.Next = []dataplane.StageID{sid + 1}
					if prof != nil && part.EndBlock-1 < len(prof.CutBytes) && part.EndBlock >= 1 {
						st.OutBytes = prof.CutBytes[part.EndBlock-1]
					}
					switch {
					case part.TransferUs > 0:
						st.XferPerSampleUs = part.TransferUs / float64(pl.Batch)
					case st.OutBytes > 0 && b.bw > 0:
						st.XferPerSampleUs = 8 * float64(st.OutBytes) / b.bw
					}
				}
				gk := groupKey{mi, di, part.GPU, part.VGPU}
				if b.stageRounded {
					gk.v = 0
				}
				cur := b.cursors[gk]
				pool, _ := b.cl.Pool(part.GPU)
				for c := 0; c < part.Count; c++ {
					// A stage-rounded group packs mixed levels (formats.PackSlices), so
					// slice i's GPU is gpuOf[i], not i/v: the group may hold fewer GPUs
					// than its slice count over this partition's level.
					var gi, slot int
					if cur.gpuOf != nil {
						gi, slot = cur.gpus[cur.gpuOf[cur.slice]], cur.slotOf[cur.slice]
					} else {
						gi, slot = cur.gpus[cur.slice/part.VGPU], cur.slice%part.VGPU
					}
					cur.slice++
					w := dataplane.WorkerID(len(b.d.Topo.Workers))
					name := fmt.Sprintf("%s#%d", part.GPU, gi)
					if part.VGPU > 1 {
						name = fmt.Sprintf("%s#%d/%d.%d", part.GPU, gi, part.VGPU, slot)
					}
					b.d.Topo.Workers = append(b.d.Topo.Workers, dataplane.Worker{
						Name: name, GPU: gi, Server: b.d.Topo.GPUs[gi].Server, Type: part.GPU,
						Class: pool.Class, VGPU: part.VGPU, Stage: sid,
					})
					st.Pool = append(st.Pool, w)
				}
				b.d.Stages = append(b.d.Stages, st)
				chain = append(chain, sid)
			}
			if len(chain) > 0 {
				app.Entry = append(app.Entry, chain[0])
			}
			app.Pipelines = append(app.Pipelines, chain)
		}
		b.d.Apps = append(b.d.Apps, app)
	}
}

// stageLatencies builds LatUs[1..batch] for a partition: profile block sums (each block ≥ 1 µs,
// rounded up to whole µs) where the profile has the entry; the plan's stage latency for the
// planned batch and, pessimistically, for batches the profile lacks.
func stageLatencies(prof *formats.ModelProfile, part ppipesec.Partition, batch int) []dataplane.Time {
	planned := dataplane.Time(math.Ceil(part.StageLatencyUs))
	lat := make([]dataplane.Time, batch+1)
	for b := 1; b <= batch; b++ {
		lat[b] = planned
		if prof == nil || b == batch {
			continue
		}
		e, ok := prof.Lookup(part.GPU, part.VGPU, b)
		if !ok || part.EndBlock > len(e.BlockUs) || part.FirstBlock < 0 {
			continue
		}
		var s float64
		for _, v := range e.BlockUs[part.FirstBlock:part.EndBlock] {
			s += math.Max(v, 1)
		}
		// Never let a smaller batch look slower than the planned one or a larger batch
		// faster than a smaller one would make the dispatcher's scan inconsistent; keep
		// the profile's number as is otherwise (non-monotone tables are real).
		lat[b] = min(dataplane.Time(math.Ceil(s)), planned)
	}
	return lat
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func ceilDiv(a, b int) int {
	if b <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

// Kind is the plan section PPipe deployments come from.
const Kind = "ppipe"

// DefaultPolicy is the policy a PPipe plan runs unless told otherwise.
const DefaultPolicy = "ppipe"

// planRate is a model's offered rate at load factor 1.0: the plan's guaranteed rate
// (target_rps: load factor 1.0, PPipe §7.1), else its capacity (plans without a target).
func planRate(m ppipesec.PPipeModelPlan) float64 {
	if m.TargetRPS > 0 {
		return m.TargetRPS
	}
	return m.ThroughputRPS
}
