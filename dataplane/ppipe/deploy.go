package ppipe

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/plan-dev/plan/dataplane"
	"github.com/plan-dev/plan/formats"
)

// FromPlan builds the deployment a PPipe-style plan (PPipe, NP or DART-r) describes: one app
// per model, one stage per partition, and workers packed onto the plan's cluster. Slices of
// one (model, stage index, GPU type, level) share GPUs in order, v slices per GPU; each such
// group starts on a fresh server when the cluster has room, as the authors' simulator packs
// pools separately. Latencies come from the embedded profile when it has the (GPU, v, batch)
// entry, else from the plan (a smaller batch then costs as much as the planned one, which is
// pessimistic and therefore never breaks a deadline the plan promised).
//
// Errors (plan not matching its cluster, inconsistent partitions) are a formats.ErrorList
// with field paths into the plan.
func FromPlan(p *formats.Plan) (*dataplane.Deployment, error) {
	var errs formats.ErrorList
	add := func(path string, value any, rule string) {
		errs = append(errs, &formats.FieldError{Path: path, Value: fmt.Sprint(value), Rule: rule})
	}
	if p.PPipe == nil {
		return nil, formats.ErrorList{{Path: "ppipe", Rule: "the plan has no ppipe section "}}
	}
	cl := p.Cluster
	if cl == nil && p.Provenance.Embedded != nil {
		cl = p.Provenance.Embedded.Cluster
	}
	if cl == nil {
		return nil, formats.ErrorList{{Path: "cluster", Rule: "the plan embeds no cluster"}}
	}
	var profiles []formats.Profile
	if p.Provenance.Embedded != nil {
		profiles = p.Provenance.Embedded.Profiles
	}
	findModel := func(name string) *formats.ModelProfile {
		for i := range profiles {
			if m, ok := profiles[i].Model(name); ok {
				return m
			}
		}
		return nil
	}
	bw := cl.EffectiveNICMbps()
	if bw <= 0 {
		add("cluster.nic_gbps", cl.NICGbps, "must be > 0")
	}

	// Pass 1: validate partitions against the cluster and count slices per packing group.
	type groupKey struct {
		app, stage int
		gpu        string
		v          int
	}
	type group struct {
		key    groupKey
		slices int
		// levels lists every slice's vGPU level, in partition order, for a stage-rounded
		// group (key.v = 0: all levels of one model, stage index and GPU type share GPUs).
		levels []int
		packed [][]int
	}
	stageRounded := p.PPipe.Rounding() == formats.RoundingStage
	var groups []*group
	gindex := map[groupKey]*group{}
	for mi, m := range p.PPipe.Models {
		mp := fmt.Sprintf("ppipe.models[%d]", mi)
		if m.SLO <= 0 {
			add(mp+".slo", m.SLO, "must be > 0")
		}
		for pi, pl := range m.Pipelines {
			pp := fmt.Sprintf("%s.pipelines[%d]", mp, pi)
			if pl.Batch < 1 {
				add(pp+".batch", pl.Batch, "must be >= 1")
			}
			if len(pl.Partitions) == 0 {
				add(pp+".partitions", 0, "a pipeline needs at least one partition")
			}
			for di, part := range pl.Partitions {
				qp := fmt.Sprintf("%s.partitions[%d]", pp, di)
				pool, ok := cl.Pool(part.GPU)
				if !ok {
					add(qp+".gpu", part.GPU, "the plan's cluster has no GPUs of this type")
					continue
				}
				if !containsInt(pool.Levels(), part.VGPU) {
					add(qp+".vgpu", part.VGPU, fmt.Sprintf("the cluster allows levels %v for %s", pool.Levels(), part.GPU))
				}
				if part.Count < 1 {
					add(qp+".count", part.Count, "must be >= 1")
				}
				if part.StageLatencyUs <= 0 {
					add(qp+".stage_latency_us", part.StageLatencyUs, "must be > 0")
				}
				if part.EndBlock <= part.FirstBlock {
					add(qp+".end_block", part.EndBlock, "must be > first_block")
				}
				if di > 0 && part.FirstBlock != pl.Partitions[di-1].EndBlock {
					add(qp+".first_block", part.FirstBlock, fmt.Sprintf("must equal the previous partition's end_block %d", pl.Partitions[di-1].EndBlock))
				}
				if part.VGPU < 1 || part.Count < 1 {
					continue
				}
				k := groupKey{mi, di, part.GPU, part.VGPU}
				if stageRounded {
					k.v = 0
				}
				g := gindex[k]
				if g == nil {
					g = &group{key: k}
					gindex[k] = g
					groups = append(groups, g)
				}
				g.slices += part.Count
				for c := 0; stageRounded && c < part.Count; c++ {
					g.levels = append(g.levels, part.VGPU)
				}
			}
		}
	}
	// GPU demand per type versus the cluster.
	// A group needs ceil(slices/v) GPUs; a stage-rounded group the GPUs PackSlices
	// lays its mixed levels on, exactly what formats.PPipePlan.PhysicalGPUs charges, so the
	// deployment refuses exactly what validation refuses (issue 17 item 2).
	gpusOf := func(g *group) int {
		if g.key.v == 0 {
			return len(g.packed)
		}
		return ceilDiv(g.slices, g.key.v)
	}
	need := map[string]int{}
	for _, g := range groups {
		if g.key.v == 0 {
			g.packed = PackSlices(g.levels)
		}
		need[g.key.gpu] += gpusOf(g)
	}
	types := make([]string, 0, len(need))
	for t := range need {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, t := range types {
		pool, _ := cl.Pool(t)
		if need[t] > pool.Count {
			add("ppipe.models", t, fmt.Sprintf("the plan needs %d %s GPUs but its cluster has %d", need[t], t, pool.Count))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}

	// Pass 2: lay out servers and GPUs per type, then carve slices.
	d := &dataplane.Deployment{Kind: Kind}
	typeGPU := map[string][]int{} // type → global GPU indices in server order
	for _, gp := range cl.GPUs {
		per := gp.PerServer
		if per < 1 {
			per = 1
		}
		for i := 0; i < gp.Count; i++ {
			if i%per == 0 {
				d.Topo.Servers = append(d.Topo.Servers, dataplane.Server{
					Name:   fmt.Sprintf("%s-s%d", gp.Type, i/per),
					UpMbps: bw, DownMbps: bw,
				})
			}
			typeGPU[gp.Type] = append(typeGPU[gp.Type], len(d.Topo.GPUs))
			d.Topo.GPUs = append(d.Topo.GPUs, dataplane.GPU{Type: gp.Type, Class: gp.Class, Server: dataplane.ServerID(len(d.Topo.Servers) - 1)})
		}
	}
	// Decide per type whether groups can start on server boundaries.
	aligned := map[string]bool{}
	for _, t := range types {
		pool, _ := cl.Pool(t)
		per := max(pool.PerServer, 1)
		used := 0
		for _, g := range groups {
			if g.key.gpu == t {
				used = ceilDiv(used, per)*per + gpusOf(g)
			}
		}
		aligned[t] = used <= pool.Count
	}
	nextGPU := map[string]int{}
	type cursor struct {
		gpus  []int // GPUs of the group
		slice int   // next slice index within the group
		// gpuOf and slotOf place slice i of a stage-rounded group: on gpus[gpuOf[i]], as
		// its slotOf[i]-th slice.
		gpuOf, slotOf []int
	}
	cursors := map[groupKey]*cursor{}
	for _, g := range groups {
		pool, _ := cl.Pool(g.key.gpu)
		per := max(pool.PerServer, 1)
		n := nextGPU[g.key.gpu]
		if aligned[g.key.gpu] {
			n = ceilDiv(n, per) * per
		}
		cnt := gpusOf(g)
		cur := &cursor{gpus: typeGPU[g.key.gpu][n : n+cnt]}
		if g.key.v == 0 {
			cur.gpuOf, cur.slotOf = make([]int, g.slices), make([]int, g.slices)
			for gi, on := range g.packed {
				for slot, i := range on {
					cur.gpuOf[i], cur.slotOf[i] = gi, slot
				}
			}
		}
		cursors[g.key] = cur
		nextGPU[g.key.gpu] = n + cnt
	}

	for mi, m := range p.PPipe.Models {
		app := dataplane.App{
			Name: m.Model, SLO: dataplane.Time(time.Duration(m.SLO) / time.Microsecond),
			Weight: m.Weight, RateRPS: planRate(m),
		}
		aid := dataplane.AppID(len(d.Apps))
		prof := findModel(m.Model)
		for pi, pl := range m.Pipelines {
			var chain []dataplane.StageID
			for di, part := range pl.Partitions {
				sid := dataplane.StageID(len(d.Stages))
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
					case st.OutBytes > 0 && bw > 0:
						st.XferPerSampleUs = 8 * float64(st.OutBytes) / bw
					}
				}
				gk := groupKey{mi, di, part.GPU, part.VGPU}
				if stageRounded {
					gk.v = 0
				}
				cur := cursors[gk]
				pool, _ := cl.Pool(part.GPU)
				for c := 0; c < part.Count; c++ {
					gi := cur.gpus[cur.slice/part.VGPU]
					slot := cur.slice % part.VGPU
					if cur.gpuOf != nil {
						gi, slot = cur.gpus[cur.gpuOf[cur.slice]], cur.slotOf[cur.slice]
					}
					cur.slice++
					w := dataplane.WorkerID(len(d.Topo.Workers))
					name := fmt.Sprintf("%s#%d", part.GPU, gi)
					if part.VGPU > 1 {
						name = fmt.Sprintf("%s#%d/%d.%d", part.GPU, gi, part.VGPU, slot)
					}
					d.Topo.Workers = append(d.Topo.Workers, dataplane.Worker{
						Name: name, GPU: gi, Server: d.Topo.GPUs[gi].Server, Type: part.GPU,
						Class: pool.Class, VGPU: part.VGPU, Stage: sid,
					})
					st.Pool = append(st.Pool, w)
				}
				d.Stages = append(d.Stages, st)
				chain = append(chain, sid)
			}
			if len(chain) > 0 {
				app.Entry = append(app.Entry, chain[0])
			}
			app.Pipelines = append(app.Pipelines, chain)
		}
		d.Apps = append(d.Apps, app)
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// stageLatencies builds LatUs[1..batch] for a partition: profile block sums (each block ≥ 1 µs,
// rounded up to whole µs) where the profile has the entry; the plan's stage latency for the
// planned batch and, pessimistically, for batches the profile lacks.
func stageLatencies(prof *formats.ModelProfile, part formats.Partition, batch int) []dataplane.Time {
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
func planRate(m formats.PPipeModelPlan) float64 {
	if m.TargetRPS > 0 {
		return m.TargetRPS
	}
	return m.ThroughputRPS
}
